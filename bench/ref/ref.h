/*
 * What the seven reference servers of bench/ref/ share, so each of their files is only its
 * architecture: the command line, the listener, SIGTERM, and one HTTP/1.1 exchange.
 *
 *   - the request line and the end of the head ("\r\n\r\n"; a head over 8 KiB is a 400);
 *     GET and HEAD (any other method is a 501); HTTP/1.1 and HTTP/1.0;
 *   - the path: the query cut off, percent-decoded, resolved under ROOT with openat(2); a
 *     ".." segment, a control character, a %00 or a bad escape is a 400, so it never
 *     leaves ROOT by name (a symbolic link inside ROOT is followed, as nginx does by
 *     default);
 *   - a regular file: 200, "Content-Type: application/octet-stream" and Content-Length, the
 *     body by sendfile(2) after the head (sent with MSG_MORE, so both leave in one segment
 *     where they fit); anything else (missing, a directory, unreadable): 404, no body;
 *   - "Connection: close" is honoured (after the response the connection is closed);
 *     HTTP/1.0 closes unless it asks for keep-alive; HTTP/1.1 is kept alive otherwise;
 *     pipelined requests are answered in order, one after the other;
 *   - a request that says it has a body (Content-Length other than 0, Transfer-Encoding) is
 *     a 400 and closes: these servers read no bodies.
 * Left out everywhere: timeouts (an idle client keeps its connection, and its worker where
 * a worker serves one connection), a cap on connections, logs, Date, ETag, ranges,
 * conditional requests, directory indexes, MIME types, access checks.
 *
 * Not a library: every function is static inline (so one a server does not use costs no
 * warning), and each server includes this file once.
 */
#ifndef SPIDEY_REF_H
#define SPIDEY_REF_H

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define REF_HEAD_MAX 8192

/* One response on its way: the head's bytes, then the body's from a file. */
struct ref_reply {
    char head[256];
    size_t hpos, hlen;
    int file;        /* the body's file, or -1 */
    off_t off, left; /* where the body goes on, and how much of it is left */
    int close;       /* close the connection once this is sent */
};

static int ref_root = -1; /* ROOT, opened once */

static inline void ref_die(const char *what) {
    perror(what);
    exit(1);
}

/* ROOT [PORT] [WORKERS]: opens ROOT, returns PORT; WORKERS goes to *workers (its default
 * there), or is refused where the architecture has none to count (workers == NULL). */
static inline int ref_args(int argc, char **argv, int *workers) {
    if (argc < 2 || argc > (workers ? 4 : 3)) {
        fprintf(stderr, "usage: %s ROOT [PORT]%s\n", argv[0], workers ? " [WORKERS]" : "");
        exit(2);
    }
    if (workers && argc > 3 && (*workers = atoi(argv[3])) < 1) {
        fprintf(stderr, "%s: WORKERS must be 1 or more\n", argv[0]);
        exit(2);
    }
    ref_root = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (ref_root < 0) ref_die(argv[1]);
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-response is a failed write, not death */
    return argc > 2 ? atoi(argv[2]) : 0;
}

/* A listener on 127.0.0.1:port (0: any free port); `flags` for socket(2) (SOCK_NONBLOCK);
 * with `reuseport`, several may share the port, each its own accept queue. */
static inline int ref_listen(int port, int flags, int reuseport) {
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
    if (fd < 0) ref_die("socket");
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) ref_die("bind");
    if (listen(fd, 4096) < 0) ref_die("listen");
    return fd;
}

static inline int ref_port(int fd) {
    struct sockaddr_in addr;
    socklen_t len = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &len);
    return ntohs(addr.sin_port);
}

static inline void ref_announce(int fd) {
    printf("listening on http://127.0.0.1:%d\n", ref_port(fd));
    fflush(stdout);
}

static inline void ref_nodelay(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* SIGTERM in a process with no children: exit at once, the kernel closes the rest. */
static inline void ref_exit_now(int sig) {
    (void)sig;
    _exit(0);
}

/* SIGTERM in a process with children (fork, prefork): they are all in its process group
 * (made here), so the group gets the signal, and each child is reaped before exit. */
static inline void ref_stop_group(int sig) {
    (void)sig;
    signal(SIGTERM, SIG_IGN);
    kill(0, SIGTERM);
    while (wait(NULL) > 0 || errno == EINTR) {}
    _exit(0);
}

/* Reaps whatever child has ended, so none stays a zombie. */
static inline void ref_reap(int sig) {
    int saved = errno;
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
    errno = saved;
}

/* SIGTERM's handling: exit at once, or with `children` (fork, prefork) first end and reap
 * every child, which a process group of the server's own (made here) holds. */
static inline void ref_on_term(int children) {
    struct sigaction sa = {.sa_handler = children ? ref_stop_group : ref_exit_now};
    sigfillset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    if (children) setpgid(0, 0); /* fails harmlessly if it already leads a session */
}

/* Every child reaped as it ends (SIGCHLD), for a parent that never waits otherwise. */
static inline void ref_reap_on_sigchld(void) {
    struct sigaction sa = {.sa_handler = ref_reap, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
    sigfillset(&sa.sa_mask);
    sigaction(SIGCHLD, &sa, NULL);
}

/* In a child just forked: the signals as they were before ref_on_term. */
static inline void ref_child_signals(void) {
    signal(SIGTERM, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
}

/* The length of the head at the start of buf, "\r\n\r\n" included; 0 while incomplete. */
static inline size_t ref_head_end(const char *buf, size_t len) {
    const char *end = memmem(buf, len, "\r\n\r\n", 4);
    return end ? (size_t)(end - buf) + 4 : 0;
}

static inline int ref_hex(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Whether the comma-separated list v[0..n) has `token` (case-insensitive). */
static inline int ref_has_token(const char *v, size_t n, const char *token) {
    size_t t = strlen(token);
    for (size_t i = 0; i < n;) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
        size_t j = i;
        while (j < n && v[j] != ',') j++;
        size_t k = j;
        while (k > i && (v[k - 1] == ' ' || v[k - 1] == '\t')) k--;
        if (k - i == t && strncasecmp(v + i, token, t) == 0) return 1;
        i = j;
    }
    return 0;
}

static inline void ref_status(struct ref_reply *r, const char *status, long long length, const char *connection) {
    r->hlen = (size_t)snprintf(r->head, sizeof r->head, "HTTP/1.1 %s\r\n%sContent-Length: %lld\r\n%s\r\n",
                               status, *status == '2' ? "Content-Type: application/octet-stream\r\n" : "",
                               length, connection);
}

/* The answer to the head h[0..len) (len 0: no head fit in REF_HEAD_MAX), in *r. */
static inline void ref_answer(const char *h, size_t len, struct ref_reply *r) {
    r->hpos = 0, r->file = -1, r->off = r->left = 0, r->close = 1;
    const char *eol = len ? memmem(h, len, "\r\n", 2) : NULL, *sp1, *sp2;
    if (!eol || !(sp1 = memchr(h, ' ', (size_t)(eol - h))) || !(sp2 = memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1))) ||
        sp1[1] != '/' || eol - sp2 != 9 || (memcmp(sp2, " HTTP/1.1", 9) && memcmp(sp2, " HTTP/1.0", 9)))
        goto bad;
    int head = sp1 - h == 4 && memcmp(h, "HEAD", 4) == 0, http10 = sp2[8] == '0';
    if (!head && !(sp1 - h == 3 && memcmp(h, "GET", 3) == 0)) {
        ref_status(r, "501 Not Implemented", 0, "Connection: close\r\n");
        return;
    }
    /* The fields: Connection, and whether a body is announced. */
    int close_asked = 0, keep_asked = 0, body = 0;
    for (const char *line = eol + 2, *end; (end = memmem(line, len - (size_t)(line - h), "\r\n", 2)) && end > line;
         line = end + 2) {
        const char *colon = memchr(line, ':', (size_t)(end - line)), *v;
        if (!colon) continue;
        v = colon + 1;
        size_t name = (size_t)(colon - line), n = (size_t)(end - v);
        if (name == 10 && strncasecmp(line, "connection", 10) == 0) {
            close_asked |= ref_has_token(v, n, "close");
            keep_asked |= ref_has_token(v, n, "keep-alive");
        } else if (name == 17 && strncasecmp(line, "transfer-encoding", 17) == 0) {
            body = 1;
        } else if (name == 14 && strncasecmp(line, "content-length", 14) == 0) {
            while (v < end && (*v == ' ' || *v == '\t' || *v == '0')) v++;
            body |= v < end && *v != ' ' && *v != '\t';
        }
    }
    if (body) goto bad;
    r->close = close_asked || (http10 && !keep_asked);
    const char *connection = r->close ? "Connection: close\r\n" : http10 ? "Connection: keep-alive\r\n" : "";
    /* The path: decoded up to the query, every segment checked, then opened under ROOT. */
    char path[REF_HEAD_MAX], *p = path;
    for (const char *c = sp1 + 1; c < sp2 && *c != '?'; c++) {
        int hi, lo;
        if ((unsigned char)*c < 0x20 || *c == 0x7f) {
            goto bad;
        } else if (*c != '%') {
            *p++ = *c;
        } else if (c + 2 < sp2 && (hi = ref_hex(c[1])) >= 0 && (lo = ref_hex(c[2])) >= 0 && (hi | lo)) {
            *p++ = (char)(hi << 4 | lo), c += 2;
        } else {
            goto bad;
        }
    }
    *p = 0;
    for (char *seg = path; seg; seg = strchr(seg + 1, '/')) {
        if (strncmp(seg, "/..", 3) == 0 && (seg[3] == '/' || seg[3] == 0)) goto bad;
    }
    char *rel = path + strspn(path, "/");
    struct stat st;
    int fd = openat(ref_root, *rel ? rel : ".", O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) close(fd);
        ref_status(r, "404 Not Found", 0, connection);
        return;
    }
    ref_status(r, "200 OK", st.st_size, connection);
    if (head || st.st_size == 0) {
        close(fd);
    } else {
        r->file = fd, r->left = st.st_size;
    }
    return;
bad:
    r->close = 1;
    ref_status(r, "400 Bad Request", 0, "Connection: close\r\n");
}

/* Sends what is left of *r on fd: 1 once all is sent, 0 if the socket is full (EAGAIN, on a
 * non-blocking one; call again when it is writable), -1 on an error. The file is closed
 * when it returns 1 or -1. */
static inline int ref_send(int fd, struct ref_reply *r) {
    while (r->hpos < r->hlen) {
        ssize_t n = send(fd, r->head + r->hpos, r->hlen - r->hpos, r->left ? MSG_MORE : 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return 0;
        if (n <= 0) goto fail;
        r->hpos += (size_t)n;
    }
    while (r->left > 0) {
        ssize_t n = sendfile(fd, r->file, &r->off, r->left < 0x40000000 ? (size_t)r->left : 0x40000000);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return 0;
        if (n <= 0) goto fail; /* 0: the file shrank under us */
        r->left -= n;
    }
    if (r->file >= 0) close(r->file);
    r->file = -1;
    return 1;
fail:
    if (r->file >= 0) close(r->file);
    r->file = -1;
    return -1;
}

/* One connection on a blocking socket, to its end: what iterative, fork, thread, pool and
 * prefork do with each connection they accept. Closes fd. */
static inline void ref_serve(int fd) {
    char buf[REF_HEAD_MAX];
    size_t have = 0, head;
    struct ref_reply r;
    ref_nodelay(fd);
    for (;;) {
        while (!(head = ref_head_end(buf, have)) && have < sizeof buf) {
            ssize_t n = read(fd, buf + have, sizeof buf - have);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) goto done;
            have += (size_t)n;
        }
        ref_answer(buf, head, &r);
        if (ref_send(fd, &r) < 0 || r.close) break;
        have -= head;
        memmove(buf, buf + head, have);
    }
done:
    close(fd);
}

#endif

/*
 * The canned-reply floor: the least an HTTP/1.1 server can do per response on Linux, for
 * bench/vs-peers.sh and bench/syscalls.sh to measure the others against.
 *
 * One thread, one level-triggered epoll set. A readable connection gets one read(2); every
 * request terminator ("\r\n\r\n") in what arrived is one request, pipelined ones included,
 * and each is answered with the same bytes: "200 OK" and a 1 KiB body. A request whose head
 * says "Connection: close" gets "Connection: close" and the connection is closed once that
 * reply is written; otherwise the connection is kept alive until the client's EOF. What a
 * write(2) cannot take waits for EPOLLOUT, and the connection is not read meanwhile. There is
 * no parsing, no file, no clock and no log: per keep-alive request, one read and one write
 * plus a share of epoll_wait.
 *
 *   gcc -O2 -o floor bench/floor/floor.c && ./floor [PORT]
 *
 * Binds 127.0.0.1:PORT (0, the default, for any free port) and prints
 * "listening on http://127.0.0.1:PORT" once it accepts.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BODY 1024
#define HEAD_MAX 8192

struct conn {
    int fd;
    int closing;         /* a "Connection: close" request was answered: close once written */
    size_t hlen;         /* bytes of the current request head so far */
    char head[HEAD_MAX];
    char *out;           /* replies not yet written: out[opos..olen] */
    size_t opos, olen, ocap;
};

static char reply_ka[256 + BODY], reply_close[256 + BODY];
static size_t reply_ka_len, reply_close_len;

static size_t make_reply(char *buf, const char *extra) {
    int n = sprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                         "Content-Length: %d\r\n%s\r\n", BODY, extra);
    memset(buf + n, 'x', BODY);
    return (size_t)n + BODY;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void drop(int ep, struct conn *c) {
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->out);
    free(c);
}

static int wants_close(const char *head, size_t len) {
    static const char key[] = "\r\nconnection:";
    for (size_t i = 0; i + sizeof key - 1 <= len; i++) {
        if (strncasecmp(head + i, key, sizeof key - 1) == 0) {
            const char *v = head + i + sizeof key - 1;
            while (v < head + len && (*v == ' ' || *v == '\t')) v++;
            return (size_t)(head + len - v) >= 5 && strncasecmp(v, "close", 5) == 0;
        }
    }
    return 0;
}

static void queue(struct conn *c, const char *bytes, size_t len) {
    if (c->olen + len > c->ocap) {
        c->ocap = (c->olen + len) * 2;
        c->out = realloc(c->out, c->ocap);
        if (!c->out) die("realloc");
    }
    memcpy(c->out + c->olen, bytes, len);
    c->olen += len;
}

/* Writes what is queued: 0 if the connection was dropped, 1 if all is written, 2 if some
 * waits for EPOLLOUT. */
static int flush(int ep, struct conn *c) {
    while (c->opos < c->olen) {
        ssize_t n = write(c->fd, c->out + c->opos, c->olen - c->opos);
        if (n < 0 && errno == EAGAIN) {
            struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
            epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
            return 2;
        }
        if (n <= 0) {
            drop(ep, c);
            return 0;
        }
        c->opos += (size_t)n;
    }
    c->opos = c->olen = 0;
    if (c->closing) {
        drop(ep, c);
        return 0;
    }
    return 1;
}

static void readable(int ep, struct conn *c) {
    char buf[16384];
    ssize_t n = read(c->fd, buf, sizeof buf);
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
        drop(ep, c);
        return;
    }
    for (ssize_t i = 0; i < n && !c->closing; i++) {
        if (c->hlen == HEAD_MAX) { /* a head this long is not a benchmark's request */
            drop(ep, c);
            return;
        }
        c->head[c->hlen++] = buf[i];
        if (c->hlen >= 4 && memcmp(c->head + c->hlen - 4, "\r\n\r\n", 4) == 0) {
            if (wants_close(c->head, c->hlen)) {
                c->closing = 1;
                queue(c, reply_close, reply_close_len);
            } else {
                queue(c, reply_ka, reply_ka_len);
            }
            c->hlen = 0;
        }
    }
    flush(ep, c);
}

int main(int argc, char **argv) {
    int port = argc > 1 ? atoi(argv[1]) : 0, one = 1;
    reply_ka_len = make_reply(reply_ka, "");
    reply_close_len = make_reply(reply_close, "Connection: close\r\n");

    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (lfd < 0) die("socket");
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons(port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0) die("bind");
    if (listen(lfd, 4096) < 0) die("listen");
    socklen_t alen = sizeof addr;
    getsockname(lfd, (struct sockaddr *)&addr, &alen);

    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) die("epoll_create1");
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) < 0) die("epoll_ctl");
    printf("listening on http://127.0.0.1:%d\n", ntohs(addr.sin_port));
    fflush(stdout);

    struct epoll_event evs[256];
    for (;;) {
        int n = epoll_wait(ep, evs, 256, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) die("epoll_wait");
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (!c) { /* the listener: take every waiting connection */
                int fd;
                while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    c = calloc(1, sizeof *c);
                    if (!c) die("calloc");
                    c->fd = fd;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                }
                continue;
            }
            if (evs[i].events & EPOLLOUT) {
                if (flush(ep, c) == 1) {
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                }
            } else {
                readable(ep, c);
            }
        }
    }
}

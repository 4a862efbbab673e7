/*
 * Reference server: an io_uring event loop, with liburing (Debian's liburing-dev). One
 * thread per loop, WORKERS loops (default 1), each with its own ring and its own listener
 * on the same port (SO_REUSEPORT). The ring accepts (one accept in flight, made again as
 * each completes), receives into the connection's own 8 KiB buffer and sends each
 * response's head; each whole head in the buffer is answered in turn (pipelined requests
 * in order). A file body goes out by sendfile(2) from the loop on the non-blocking socket,
 * and when the socket is full a ring poll waits for room: io_uring has no sendfile, and
 * its splice goes through the kernel's worker threads. Each connection has one ring
 * operation in flight at a time; a loop turn is one io_uring_enter that submits what the
 * last turn queued and waits for a completion. Spidey's `--mode uring` with `--workers N`
 * (which also sends the head by the ring and the body by sendfile(2)).
 *
 * The HTTP/1.1 exchange is ref.h's, shared by the seven references: GET and HEAD of
 * ROOT's regular files, Content-Length, the body by sendfile(2), keep-alive and close.
 * Left out on purpose: timers (no idle timeout), a cap on connections, multishot accept
 * and receive, provided buffers, registered files, SQPOLL, logs and every HTTP feature
 * ref.h lists as left out. The file is opened and stat'ed on the loop thread.
 *
 *   gcc -O2 -Wall -Wextra -pthread -o uring bench/ref/uring.c -luring
 *   ./uring ROOT [PORT] [WORKERS]
 *
 * Binds 127.0.0.1:PORT (0, the default, for any free port), prints
 * "listening on http://127.0.0.1:PORT" once it accepts, and exits 0 on SIGTERM.
 */
#include "ref.h"
#include <liburing.h>
#include <poll.h>
#include <pthread.h>

struct conn {
    int fd;
    enum { RECEIVING, SENDING_HEAD, POLLING } op; /* the one ring operation in flight */
    size_t have;                                   /* bytes of input in `in` */
    char in[REF_HEAD_MAX];
    struct ref_reply out;
};

struct loop {
    struct io_uring ring;
    int lfd;
};

/* A submission queue entry for `data` (NULL: the accept), submitting the queue if full. */
static struct io_uring_sqe *entry(struct io_uring *ring, void *data) {
    struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
    if (!sqe) {
        io_uring_submit(ring);
        sqe = io_uring_get_sqe(ring);
    }
    io_uring_sqe_set_data(sqe, data);
    return sqe;
}

static void drop(struct conn *c) {
    if (c->out.file >= 0) close(c->out.file);
    close(c->fd);
    free(c);
}

static void send_head(struct io_uring *ring, struct conn *c) {
    struct ref_reply *r = &c->out;
    c->op = SENDING_HEAD;
    io_uring_prep_send(entry(ring, c), c->fd, r->head + r->hpos, r->hlen - r->hpos, r->left ? MSG_MORE : 0);
}

/* Answers the next whole head in the connection's input, or receives more. */
static void next(struct io_uring *ring, struct conn *c) {
    size_t head = ref_head_end(c->in, c->have);
    if (!head && c->have < sizeof c->in) {
        c->op = RECEIVING;
        io_uring_prep_recv(entry(ring, c), c->fd, c->in + c->have, sizeof c->in - c->have, 0);
        return;
    }
    ref_answer(c->in, head, &c->out);
    c->have -= head;
    memmove(c->in, c->in + head, c->have);
    send_head(ring, c);
}

/* The head is sent: the body by sendfile(2), a ring poll while the socket is full. */
static void send_body(struct io_uring *ring, struct conn *c) {
    int sent = ref_send(c->fd, &c->out);
    if (sent == 0) {
        c->op = POLLING;
        io_uring_prep_poll_add(entry(ring, c), c->fd, POLLOUT);
    } else if (sent < 0 || c->out.close) {
        drop(c);
    } else {
        next(ring, c);
    }
}

static void completed(struct io_uring *ring, struct conn *c, int res) {
    if (res < 0 || (res == 0 && c->op != POLLING)) { /* an error, or the client's EOF */
        drop(c);
        return;
    }
    switch (c->op) {
    case RECEIVING:
        c->have += (size_t)res;
        next(ring, c);
        break;
    case SENDING_HEAD:
        c->out.hpos += (size_t)res;
        if (c->out.hpos < c->out.hlen) {
            send_head(ring, c);
        } else {
            send_body(ring, c);
        }
        break;
    case POLLING:
        send_body(ring, c);
        break;
    }
}

static void *run(void *arg) {
    struct loop *l = arg;
    struct io_uring *ring = &l->ring;
    io_uring_prep_accept(entry(ring, NULL), l->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    for (;;) {
        int err = io_uring_submit_and_wait(ring, 1);
        if (err < 0 && err != -EINTR) {
            fprintf(stderr, "io_uring_submit_and_wait: %s\n", strerror(-err));
            exit(1);
        }
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(ring, head, cqe) {
            struct conn *c = io_uring_cqe_get_data(cqe);
            int res = cqe->res;
            seen++;
            if (c) {
                completed(ring, c, res);
                continue;
            }
            if (res >= 0) { /* the listener: a new connection, and the next accept */
                if (!(c = malloc(sizeof *c))) ref_die("malloc");
                c->fd = res, c->have = 0, c->out.file = -1;
                ref_nodelay(res);
                next(ring, c);
            }
            io_uring_prep_accept(entry(ring, NULL), l->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        }
        io_uring_cq_advance(ring, seen);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int workers = 1;
    int port = ref_args(argc, argv, &workers);
    struct loop *loops = calloc((size_t)workers, sizeof *loops);
    if (!loops) ref_die("calloc");
    for (int i = 0; i < workers; i++) {
        loops[i].lfd = ref_listen(i ? ref_port(loops[0].lfd) : port, 0, 1);
        int err = io_uring_queue_init(4096, &loops[i].ring, 0);
        if (err < 0) {
            fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-err));
            return 1;
        }
    }
    ref_on_term(0);
    for (int i = 1; i < workers; i++) {
        pthread_t t;
        int err = pthread_create(&t, NULL, run, &loops[i]);
        if (err) {
            fprintf(stderr, "pthread_create: %s\n", strerror(err));
            return 1;
        }
    }
    ref_announce(loops[0].lfd);
    run(&loops[0]);
}

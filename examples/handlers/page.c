/*
 * page.c — an example in-process handler for Spidey (see include/spidey_handler.h).
 *
 * It serves a dynamic HTML page of 102,400 bytes: a table built once per thread under a
 * head that names the request's number (a per-process counter) and path, rewritten for
 * every request; the page goes out in one write call.
 *   handler:  cc -shared -fPIC -O2 -I include -o page.so examples/handlers/page.c
 *   CGI:      cc -O2 -DSPIDEY_CGI_MAIN -I include -o page.cgi examples/handlers/page.c
 * The second form is the same page as a CGI program, for bench/cgi-vs-handler.sh.
 * A query of "fail" makes the handler return an error (Spidey answers 500). A query of
 * "burn=MICROS" spins until the thread has used that much CPU (CLOCK_THREAD_CPUTIME_ID, at
 * most one second, else 400) and answers one line instead of the page: the CPU-bound
 * request of the lab's mixed-load experiment.
 */
#include "spidey_handler.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define PAGE_SIZE 102400

static unsigned long counter;

/* The fixed-width head of the page: the only part that changes per request. */
#define HEAD_FMT "<!DOCTYPE html>\n<html><head><title>page %010lu</title></head><body>\n" \
                 "<h1>Dynamic page %010lu for %-200.*s</h1>\n<table>\n"

/* Fills buf (PAGE_SIZE bytes) with the page; returns its length. The table rows are
 * written only when `fresh` (the first call on a buffer); each call rewrites the head,
 * whose width is fixed, with this request's number and path. */
static size_t build_page(char *buf, int fresh, const char *path, size_t path_len, unsigned long n)
{
    char head[512];
    int len = snprintf(head, sizeof head, HEAD_FMT, n, n, (int)(path_len > 200 ? 200 : path_len), path);
    if (fresh) {
        const char *tail = "</table></body></html>\n";
        size_t tail_len = strlen(tail);
        size_t at = (size_t)len;
        for (unsigned long row = 0; at + 64 + tail_len < PAGE_SIZE; row++)
            at += (size_t)snprintf(buf + at, PAGE_SIZE - at, "<tr><td>%08lu</td><td>%08lx</td></tr>\n", row,
                                   (row * 2654435761ul) & 0xffffffff);
        while (at + tail_len < PAGE_SIZE)
            buf[at++] = ' ';
        memcpy(buf + at, tail, tail_len);
    }
    memcpy(buf, head, (size_t)len);
    return PAGE_SIZE;
}

#define MAX_BURN_MICROS 1000000ul

/* Parses "burn=MICROS": 1 and *micros set if the query is one, -1 if it is malformed or
 * too large, 0 if the query is something else. */
static int burn_query(const struct spidey_str *q, unsigned long *micros)
{
    if (q->len < 5 || memcmp(q->ptr, "burn=", 5) != 0)
        return 0;
    if (q->len == 5 || q->len > 5 + 7)
        return -1;
    unsigned long n = 0;
    for (size_t i = 5; i < q->len; i++) {
        if (q->ptr[i] < '0' || q->ptr[i] > '9')
            return -1;
        n = n * 10 + (unsigned long)(q->ptr[i] - '0');
    }
    if (n > MAX_BURN_MICROS)
        return -1;
    *micros = n;
    return 1;
}

static unsigned long long thread_cpu_nanos(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

/* Spins until this thread has used `micros` more microseconds of CPU. */
static void burn(unsigned long micros)
{
    unsigned long long until = thread_cpu_nanos() + micros * 1000ull;
    volatile unsigned long x = 0x9e3779b9ul;
    while (thread_cpu_nanos() < until)
        for (int i = 0; i < 256; i++)
            x = (x << 5 | x >> 27) ^ (x * 0x2545f491ul);
}

static int answer_line(const struct spidey_response *res, int status, const char *line)
{
    static const char ct[] = "text/plain; charset=utf-8";
    res->set_status(res->ctx, status);
    if (res->add_header(res->ctx, "Content-Type", 12, ct, sizeof ct - 1) != 0)
        return 1;
    return res->write(res->ctx, (const unsigned char *)line, strlen(line));
}

uint32_t spidey_handler_abi_version(void)
{
    return SPIDEY_HANDLER_ABI_VERSION;
}

int spidey_handle(const struct spidey_request *req, const struct spidey_response *res)
{
    static __thread char buf[PAGE_SIZE];
    static __thread int built;
    if (req->query.len == 4 && memcmp(req->query.ptr, "fail", 4) == 0)
        return 1;
    unsigned long micros;
    switch (burn_query(&req->query, &micros)) {
    case -1:
        return answer_line(res, 400, "burn takes a whole number of microseconds up to 1000000\n");
    case 1: {
        char line[64];
        burn(micros);
        snprintf(line, sizeof line, "burned %lu us\n", micros);
        return answer_line(res, 200, line);
    }
    }
    unsigned long n = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
    size_t len = build_page(buf, !built, req->path.ptr, req->path.len, n);
    built = 1;
    static const char ct[] = "text/html; charset=utf-8";
    res->set_status(res->ctx, 200);
    if (res->add_header(res->ctx, "Content-Type", 12, ct, sizeof ct - 1) != 0)
        return 1;
    return res->write(res->ctx, (const unsigned char *)buf, len);
}

#ifdef SPIDEY_CGI_MAIN
#include <stdlib.h>
int main(void)
{
    static char buf[PAGE_SIZE];
    const char *path = getenv("SCRIPT_NAME");
    if (!path)
        path = "/";
    size_t len = build_page(buf, 1, path, strlen(path), 1);
    fputs("Content-Type: text/html; charset=utf-8\n\n", stdout);
    fwrite(buf, 1, len, stdout);
    return 0;
}
#endif

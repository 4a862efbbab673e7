/*
 * spidey_handler.h — the C ABI of Spidey's in-process handlers.
 *
 * A handler is a shared library loaded once at start by `spidey serve --handler
 * /prefix=path/to/lib.so`. It exports two functions:
 *
 *   uint32_t spidey_handler_abi_version(void);
 *       Returns SPIDEY_HANDLER_ABI_VERSION as compiled. Spidey refuses to start
 *       (exit code 2) when it differs from the version Spidey speaks.
 *
 *   int spidey_handle(const struct spidey_request *req,
 *                     const struct spidey_response *res);
 *       Called for every request under the prefix, possibly from several threads at
 *       once (so it must be thread-safe). It sets the status and header fields and
 *       writes the body through `res`, then returns 0. Any other return value makes
 *       Spidey answer 500 and discard what was written.
 *
 * Strings are NOT NUL-terminated: each comes with its length. Every pointer in the
 * request is valid only during the call. Header names and values set through
 * add_header must not contain CR, LF or NUL (Spidey answers 500 if they do).
 * A crash (SIGSEGV, abort) in a handler kills the process that called it: see
 * crates/server/src/content/handler.rs for what that means in each concurrency mode.
 */
#ifndef SPIDEY_HANDLER_H
#define SPIDEY_HANDLER_H

#include <stddef.h>
#include <stdint.h>

#define SPIDEY_HANDLER_ABI_VERSION 1u

#ifdef __cplusplus
extern "C" {
#endif

struct spidey_str {
    const char *ptr;
    size_t len;
};

struct spidey_header {
    struct spidey_str name;
    struct spidey_str value;
};

struct spidey_request {
    struct spidey_str method;  /* "GET" */
    struct spidey_str target;  /* the request-target as sent: "/app/x%20y?q=1" */
    struct spidey_str path;    /* still percent-encoded: "/app/x%20y" */
    struct spidey_str query;   /* without '?': "q=1"; len 0 when absent */
    const struct spidey_header *headers;
    size_t header_count;
    const unsigned char *body; /* the request body (len 0 when none) */
    size_t body_len;
    struct spidey_str peer;    /* "127.0.0.1:50412" */
};

struct spidey_response {
    void *ctx; /* pass back as the first argument of every callback */
    /* The status code (default 200). */
    void (*set_status)(void *ctx, int status);
    /* Adds a header field; returns 0, or -1 if the field is invalid. */
    int (*add_header)(void *ctx, const char *name, size_t name_len, const char *value, size_t value_len);
    /* Appends body bytes; returns 0, or -1 when the body grew too large. */
    int (*write)(void *ctx, const unsigned char *data, size_t len);
};

uint32_t spidey_handler_abi_version(void);
int spidey_handle(const struct spidey_request *req, const struct spidey_response *res);

#ifdef __cplusplus
}
#endif

#endif /* SPIDEY_HANDLER_H */

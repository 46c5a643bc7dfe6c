/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A minimal HTTP/1.1 client for the agent's Unix socket: one request per
 * connection, a JSON body out, the status and body back. Used by the
 * front ends (effects, show, cancel, run through the agent) and the tests.
 */
#ifndef BM_CLIENT_H
#define BM_CLIENT_H

#include <jansson.h>
#include <stddef.h>

/*
 * Send method path (with body, NULL for none) to the socket and read the
 * whole response. Returns the HTTP status and the parsed JSON body in *out
 * (NULL if it is not JSON), or -errno. timeout_ms bounds the whole exchange.
 */
int bm_client_call(const char *socket_path, const char *method, const char *path, const json_t *body,
		   json_t **out, int timeout_ms);

/* The same, and a 429's or 503's Retry-After (seconds, 0 if none) in *retry_after_s (may be NULL). */
int bm_client_call_retry(const char *socket_path, const char *method, const char *path, const json_t *body,
			 json_t **out, int timeout_ms, unsigned int *retry_after_s);

/* The same with a raw body of len bytes (tests send what a client should not). */
int bm_client_call_raw(const char *socket_path, const char *method, const char *path, const char *body,
		       size_t len, json_t **out, int timeout_ms);

/*
 * Follow GET path as a stream of NDJSON lines, calling fn for each until
 * it returns non-zero or the stream ends. Returns the HTTP status or -errno.
 */
int bm_client_stream(const char *socket_path, const char *path, int (*fn)(json_t *line, void *ctx),
		     void *ctx);
/* The same, until stop_fd (-1 for none) is readable: then -ECANCELED. */
int bm_client_follow(const char *socket_path, const char *path, int stop_fd, int (*fn)(json_t *line, void *ctx),
		     void *ctx);

/*
 * The reading halves of bm_client_call() and bm_client_stream(), on a
 * connected fd whose request has been sent (the fuzzer feeds them bytes
 * through a socketpair). Return as those do; fd is left open.
 */
int bm_client_read_response(int fd, json_t **out, int timeout_ms);
int bm_client_read_stream(int fd, int (*fn)(json_t *line, void *ctx), void *ctx);

#endif /* BM_CLIENT_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the request parsers (request.c, request_sandbox.c) share: the list
 * of field errors, and the checks of strings and objects every field makes.
 */
#ifndef BM_REQUEST_FIELD_H
#define BM_REQUEST_FIELD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define BM_REQ_QUOTE_MAX 64	/* bytes of a bad key or value repeated in a message */
#define BM_REQ_FIELD_MAX 96	/* "labels." + BM_REQ_QUOTE_MAX bytes of key, with room to spare */
#define BM_REQ_MAX_ERRORS 1024	/* > every per-field error a within-limits body can hold */

struct bm_req_errs {
	json_t *arr;		/* [{"field": ..., "error": ...}] */
	unsigned int n;		/* errors seen, listed or not: any makes the request invalid */
	bool oom;		/* an allocation failed: -ENOMEM, never a half-checked request */
};

void bm_req_error(struct bm_req_errs *e, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Bytes of s to quote in a message: at most max, never splitting a UTF-8 character. */
int bm_req_quote_len(const char *s, int max);
/* v as a string without NUL bytes and of at most max bytes, or NULL with the error recorded. */
const char *bm_req_string(struct bm_req_errs *e, const char *field, json_t *v, size_t max);
/* An error "<prefix><key>: unknown field" for each key of obj not in the NULL-ended known. */
void bm_req_unknown_keys(struct bm_req_errs *e, const char *prefix, json_t *obj,
			 const char *const *known);
/* The optional integer member key of obj in [min, max]; def when absent or bad (recorded). */
long long bm_req_int(struct bm_req_errs *e, json_t *obj, const char *key, long long min,
		     long long max, long long def);
/*
 * The body as a JSON object (duplicate keys refused, "\u0000" let through for
 * bm_req_string() to name), or NULL with the one error that says why not:
 * empty, over max bytes, not JSON, not an object.
 */
json_t *bm_req_load(struct bm_req_errs *e, const char *body, size_t len, size_t max);
/*
 * End of a parse: past BM_REQ_MAX_ERRORS, one error counting the rest.
 * Returns 0, -EINVAL (e->arr handed to *errs when errs is not NULL) or
 * -ENOMEM; e->arr is the caller's no more.
 */
int bm_req_done(struct bm_req_errs *e, json_t **errs);

#endif /* BM_REQUEST_FIELD_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Execution requests (POST /v1/effects): one tool call with the sandbox
 * configuration of an agent run. Validated completely before any resource
 * is used: every bad field is reported, not just the first.
 */
#ifndef BM_REQUEST_H
#define BM_REQUEST_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/parse.h"
#include "effect/expect.h"
#include "effect/sandbox.h"
#include "effect/trace.h"

#define BM_REQ_MAX_ARGS 256
#define BM_REQ_MAX_ENV 256
#define BM_REQ_MAX_LABELS 32
#define BM_REQ_MAX_BODY (1024 * 1024)

enum bm_req_mode { BM_REQ_LAUNCH, BM_REQ_ATTACH };

struct bm_request {
	char id[BM_NAME_MAX + 1];		/* required */
	char tenant[BM_NAME_MAX + 1];		/* optional: must then equal the caller's */
	char *intent;				/* owned, at most 4096 bytes; "" none (NULL: unparsed) */
	enum bm_req_mode mode;			/* "launch" (default) or "attach" */
	pid_t attach_pid;			/* attach: the process to meter */
	char **argv;				/* NULL-terminated, owned; launch: required; attach:
						 * optional, what the process runs (tool kind, outcome) */
	char tool[256];				/* attach: its tool kind ("": argv[0]'s basename) */
	char **env;				/* "K=V", NULL-terminated, owned; NULL = inherit none */
	char *cwd;				/* owned, absolute; NULL = / */
	int priority;				/* 1-10, default 5 */
	json_t *labels;				/* object string -> string, owned; never NULL */
	uint64_t window_ns;			/* default 10 ms */
	struct bm_sandbox sandbox;
	struct bm_expect expect;		/* declared intent (expect.set 0: none) */
	char traceparent[BM_TRACEPARENT_MAX + 1];	/* W3C trace context, "" none */
};

/*
 * Parse and validate a request body (JSON object). Unknown fields are
 * errors. Returns 0, or -EINVAL with *errs set to a new JSON array of
 * {"field": "sandbox.memory_limit", "error": "..."}, one per bad field.
 * Every field is checked, so one call lists every error (at most
 * BM_REQ_MAX_ERRORS, then one {"field": "", ...} counting the rest).
 * -ENOMEM: an allocation failed (*errs NULL). errs may be NULL. On any
 * error *out owns nothing (bm_request_free() on it is harmless).
 * Besides the documented fields, sandbox.timeout_ns (integer ns) is
 * accepted so that the canonical form parses back; it excludes
 * sandbox.timeout_seconds.
 */
int bm_request_parse(const char *body, size_t len, struct bm_request *out, json_t **errs);
/*
 * The same, with the traceparent of the request's HTTP header (NULL: none):
 * checked like the field, under the field's name, and the two must agree.
 */
int bm_request_parse_with(const char *body, size_t len, const char *traceparent_header,
			  struct bm_request *out, json_t **errs);

/*
 * The request in canonical form: what the store keeps. Sizes as integer
 * bytes, CPU as "<n>m" millicores, the timeout as sandbox.timeout_ns,
 * CIDRs as inet_ntop() text; unset optional fields left out. It parses back
 * with bm_request_parse() to an equal request. NULL + errno on failure.
 */
json_t *bm_request_json(const struct bm_request *r);

/* Free what the request owns; NULL-safe. */
void bm_request_free(struct bm_request *r);

#endif /* BM_REQUEST_H */

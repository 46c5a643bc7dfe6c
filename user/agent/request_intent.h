/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What an execution request says about itself beyond its command: the
 * declared intent ("expect"), the tool an attached process is ("tool"),
 * and the caller's trace context ("traceparent"). Parsed and written back
 * for request.c, with the same field helpers.
 */
#ifndef BM_REQUEST_INTENT_H
#define BM_REQUEST_INTENT_H

#include <jansson.h>

#include "agent/request_field.h"
#include "effect/expect.h"
#include "effect/sandbox.h"

#define BM_REQ_TOOL_MAX 255	/* bytes: a policy rule's match.tool is at most this long */

/*
 * v: the "expect" member, or NULL (nothing declared). Each field a quantity
 * (a JSON number, or a string with units as in the sandbox): cpu_cores,
 * memory_bytes, pids, net_tx_bytes_per_s, net_tx_bytes, wall_seconds. A
 * declaration above the request's own limit (sandbox cpu_limit,
 * memory_limit, pids_limit, the timeout) is an error: the call could never
 * get it.
 */
void bm_expect_parse(struct bm_req_errs *e, json_t *v, const struct bm_sandbox *sb,
		     struct bm_expect *x);
/* The canonical form: CPU as "<n>m", bytes and tasks as integers, the duration as exact decimal seconds. */
json_t *bm_expect_request_json(const struct bm_expect *x);

/* A tool kind: 1-255 bytes, no '/', white space or control characters, not "." or "..". */
void bm_req_tool(struct bm_req_errs *e, json_t *v, char out[BM_REQ_TOOL_MAX + 1]);

/* A W3C traceparent (effect/trace.h) named field; into out when valid. */
void bm_req_traceparent(struct bm_req_errs *e, const char *field, json_t *v, char *out);

#endif /* BM_REQUEST_INTENT_H */

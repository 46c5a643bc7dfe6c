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

#include "parse.h"

#define BM_REQ_MAX_ARGS 256
#define BM_REQ_MAX_ENV 256
#define BM_REQ_MAX_LABELS 32
#define BM_REQ_MAX_CIDRS 64
#define BM_REQ_MAX_BODY (1024 * 1024)

enum bm_req_mode { BM_REQ_LAUNCH, BM_REQ_ATTACH };

enum bm_netpol {
	BM_NET_NONE,
	BM_NET_EGRESS_RESTRICTED,
	BM_NET_EGRESS_ALLOW_LIST,
	BM_NET_FULL,
};

struct bm_cidr {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t addr[16];	/* network byte order, host bits zero */
	uint8_t prefix;
};

struct bm_sandbox {
	uint64_t cpu_request_milli, cpu_limit_milli;	/* 0 = not given */
	uint64_t memory_request, memory_limit;		/* bytes */
	uint64_t pids_limit;				/* tasks (burstmeter's own, beyond the seed's) */
	uint64_t timeout_ns;
	uint64_t max_ephemeral_storage;			/* bytes */
	enum bm_netpol network_policy;			/* default full */
	struct bm_cidr cidrs[BM_REQ_MAX_CIDRS];
	unsigned int n_cidrs;
	bool read_only_root_fs, run_as_non_root, drop_all_capabilities;
};

struct bm_request {
	char id[BM_NAME_MAX + 1];		/* required */
	char tenant[BM_NAME_MAX + 1];		/* optional: must then equal the caller's */
	char intent[4097];
	enum bm_req_mode mode;			/* "launch" (default) or "attach" */
	pid_t attach_pid;			/* attach: the process to meter */
	char **argv;				/* launch: NULL-terminated, owned */
	char **env;				/* "K=V", NULL-terminated, owned; NULL = inherit none */
	char cwd[PATH_MAX];			/* absolute, "" = / */
	int priority;				/* 1-10, default 5 */
	json_t *labels;				/* object string -> string, owned; never NULL */
	uint64_t window_ns;			/* default 10 ms */
	struct bm_sandbox sandbox;
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
 * The request in canonical form: what the store keeps. Sizes as integer
 * bytes, CPU as "<n>m" millicores, the timeout as sandbox.timeout_ns,
 * CIDRs as inet_ntop() text; unset optional fields left out. It parses back
 * with bm_request_parse() to an equal request. NULL + errno on failure.
 */
json_t *bm_request_json(const struct bm_request *r);

/* Free what the request owns; NULL-safe. */
void bm_request_free(struct bm_request *r);

/*
 * "10.0.0.0/8", "2001:db8::/32". Returns 0, -EINVAL (malformed), -ERANGE
 * (prefix over 32/128) or -EDOM (host bits set: *out then holds the network,
 * host bits cleared, to suggest instead).
 */
int bm_cidr_parse(const char *s, struct bm_cidr *out);
/* Normalised text ("2001:db8::/32") into buf; returns 0 or -EINVAL/-ENOSPC. */
int bm_cidr_format(const struct bm_cidr *c, char *buf, size_t size);
#define BM_CIDR_STRLEN 64
/* "none", "egress_restricted", "egress_allow_list", "full"; NULL if out of range. */
const char *bm_netpol_name(enum bm_netpol p);

/* --- shared by request.c and request_sandbox.c, not for other callers --- */

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
/* v: the "sandbox" member, or NULL (then all defaults). */
void bm_sandbox_parse(struct bm_req_errs *e, json_t *v, struct bm_sandbox *sb);
json_t *bm_sandbox_json(const struct bm_sandbox *sb);

#endif /* BM_REQUEST_H */

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
 */
int bm_request_parse(const char *body, size_t len, struct bm_request *out, json_t **errs);

/* The request in canonical form (sizes in bytes, CPU in millicores): what the store keeps. */
json_t *bm_request_json(const struct bm_request *r);

/* Free what the request owns; NULL-safe. */
void bm_request_free(struct bm_request *r);

#endif /* BM_REQUEST_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * run_command's arguments, checked before anything runs: every bad field
 * is named (as JSON-RPC -32602 data), the sandbox part by the agent's own
 * request parser, so that a call the server accepts is one the agent
 * accepts. Mapped back to the tool's names: sandbox.memory_limit is
 * limits.memory here.
 */
#ifndef BM_MCP_REQ_H
#define BM_MCP_REQ_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/parse.h"
#include "cli/mcp_proto.h"
#include "effect/expect.h"
#include "effect/outcome.h"
#include "effect/trace.h"

#define BM_MCP_OUTPUT_DEFAULT 16384
#define BM_MCP_OUTPUT_MAX (1024 * 1024)

struct bm_mcp_cfg {
	const char *socket;		/* the agent's; NULL: $BURSTMETER_SOCKET, then the default */
	bool standalone;		/* never the agent */
	size_t max_output;		/* bytes kept of each stream unless a call says */
	char self_exe[PATH_MAX];	/* for `burstmeter run --standalone` */
};

/* A validated run_command: everything owned, freed by bm_mcp_req_free(). */
struct bm_mcp_req {
	char id[BM_NAME_MAX + 1];	/* the effect's */
	char **argv;			/* NULL-terminated */
	char **envp;			/* ours with the call's env over it */
	char *cwd;			/* NULL: ours */
	char *intent;
	json_t *sandbox;		/* the agent's request "sandbox" member */
	struct bm_limits limits;	/* the same, for `run --standalone` */
	bool netns;			/* network_policy "none": a network namespace of its own */
	bool egress_filter;		/* egress_restricted / egress_allow_list: the agent's filter */
	struct bm_expect expect;	/* the expectations as the agent read them (expect.set 0: none) */
	char traceparent[BM_TRACEPARENT_MAX + 1];	/* W3C trace context, "" none */
	char tool[256];			/* the tool kind the agent is told, "" argv[0]'s */
	size_t max_output;
	/* the JSON-RPC request it answers */
	json_t *rpc_id, *progress_token;
	struct bm_mcp_era era;
};

/*
 * Check run_command's arguments (args may be NULL) into *r. Returns 0, or
 * -EINVAL with *errs a new array of {"field", "error"} (every bad field),
 * or -ENOMEM. On error *r owns nothing.
 */
int bm_mcp_req_parse(const json_t *args, const struct bm_mcp_cfg *cfg, struct bm_mcp_req *r, json_t **errs);
void bm_mcp_req_free(struct bm_mcp_req *r);

/* The agent's socket if one is there now (and cfg allows), else NULL; per thread. */
const char *bm_mcp_agent_socket(const struct bm_mcp_cfg *cfg);

#endif /* BM_MCP_REQ_H */

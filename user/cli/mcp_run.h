/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * run_command, once its arguments are valid: the command runs as our own
 * child with its stdout and stderr on pipes, so its output reaches the
 * model whoever owns the agent's logs. Through the agent it is attached
 * (POST /v1/effects, mode "attach": metered, laddered and stored there,
 * progress from its events); with no agent, `burstmeter run --standalone`
 * meters it as our child (root only). Each call runs in a thread of its own,
 * answers for itself, and can be cancelled by its request id.
 */
#ifndef BM_MCP_RUN_H
#define BM_MCP_RUN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cli/mcp_req.h"

/* Start the call in a thread, which answers it; takes req over. Returns 0 or -errno (then req is freed). */
int bm_mcp_run_start(const struct bm_mcp_cfg *cfg, struct bm_mcp_req *req);
/* notifications/cancelled: stop the call of that request id; it sends nothing more. */
void bm_mcp_run_cancel_request(const json_t *rpc_id);
/* cancel_effect on one of our standalone runs: 0, or -ENOENT when none runs by that id. */
int bm_mcp_run_cancel_effect(const char *effect_id);
/* A standalone run's outcome (new reference), kept for get_effect; NULL if none. */
json_t *bm_mcp_run_outcome(const char *effect_id);
/* At the end of input: cancel every call and wait (at most timeout_ms) until all have ended. */
void bm_mcp_run_shutdown(int timeout_ms);

#endif /* BM_MCP_RUN_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The tools of `burstmeter mcp`: run_command (mcp_run.c runs it),
 * get_effect, cancel_effect and node_pressure. tools/list and tools/call.
 */
#ifndef BM_MCP_TOOLS_H
#define BM_MCP_TOOLS_H

#include <jansson.h>

#include "cli/mcp_proto.h"
#include "cli/mcp_req.h"

/* tools/list */
void bm_mcp_tools_list(const json_t *id, const struct bm_mcp_era *era);
/* tools/call: answered now, or (run_command) by the call's own thread. */
void bm_mcp_tools_call(const struct bm_mcp_cfg *cfg, const json_t *id, const json_t *params,
		       const struct bm_mcp_era *era);

#endif /* BM_MCP_TOOLS_H */

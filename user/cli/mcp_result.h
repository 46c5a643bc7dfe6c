/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * run_command's CallToolResult: content for the model (the one-line summary
 * first, then stdout and stderr, then the structured part as JSON text, as
 * the spec asks of tools with structured output) and structuredContent,
 * which conforms to the tool's outputSchema (mcp_tools.c).
 */
#ifndef BM_MCP_RESULT_H
#define BM_MCP_RESULT_H

#include <jansson.h>

#include "cli/mcp_req.h"
#include "cli/mcp_text.h"

/*
 * The outcome without what only a picture needs (histograms, timeline), its
 * retry advice in the tool's terms (limits.pids, not --pids): a new copy.
 */
json_t *bm_mcp_outcome_brief(const json_t *outcome);

/*
 * The result of a call that ran: via "agent" or "standalone", the effect's
 * final state, its outcome, its output. A new CallToolResult.
 */
json_t *bm_mcp_result_ran(const struct bm_mcp_req *req, const char *via, const char *state,
			  const json_t *outcome, const struct bm_mcp_out *out, const struct bm_mcp_out *err);

/*
 * The result of a call that never ran (isError): the agent's status (0 if
 * none answered), why, its field errors (may be NULL) and Retry-After.
 */
json_t *bm_mcp_result_refused(const struct bm_mcp_req *req, const char *via, int status, const char *why,
			      const json_t *fields, unsigned int retry_after_s);

/* A tool result of text alone, isError as given (new). */
json_t *bm_mcp_result_text(const char *text, bool is_error);

#endif /* BM_MCP_RESULT_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A request held against the policy that would supervise it, before it
 * runs: its tool kind (what policy rules, backoff and /metrics key on) and
 * its declared intent against the policy's hard levels.
 */
#ifndef BM_AGENT_INTENT_H
#define BM_AGENT_INTENT_H

#include <jansson.h>

#include "agent/state.h"

/*
 * The tool kind of a request: a launch's argv[0] basename; an attach's
 * "tool", else its argv[0]'s basename, else "attach" (it said nothing).
 * Points into r.
 */
const char *ag_request_tool(const struct bm_request *r);

/*
 * Hold r's "expect" against the hard levels of the agent's policy for
 * (tenant, r's tool): a declaration above one is a call the policy would
 * stop, refused before anything runs. (Above the request's own limits was
 * refused by its parser.) Returns 0; -EINVAL with *errs a new array of
 * {"field": "expect.<key>", "error"}; -ENOMEM.
 */
int ag_intent_check(const struct bm_agent *a, const struct bm_request *r, const char *tenant,
		    json_t **errs);

#endif /* BM_AGENT_INTENT_H */

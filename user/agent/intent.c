// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>

#include "agent/intent.h"
#include "agent/request_field.h"
#include "base/common.h"
#include "effect/policy_yaml.h"

const char *ag_request_tool(const struct bm_request *r)
{
	if (r->mode == BM_REQ_LAUNCH)
		return bm_policy_tool(r->argv[0]);
	if (r->tool[0])
		return r->tool;
	/* "/" alone has no basename: still an attach that said what it runs */
	if (r->argv && r->argv[0] && *bm_policy_tool(r->argv[0]))
		return bm_policy_tool(r->argv[0]);
	return "attach";
}

/* A level in its dimension's words: "1.5 cores", "512 MiB", "64 tasks", "50 MiB/s". */
static const char *level(enum bm_pdim d, double v, char *buf, size_t len)
{
	if (d == BM_P_CPU)
		snprintf(buf, len, "%.6g cores", v);
	else if (d == BM_P_PIDS)
		snprintf(buf, len, "%.0f tasks", v);
	else
		snprintf(buf, len, "%.6g MiB%s", v / (1024.0 * 1024.0), d == BM_P_NET ? "/s" : "");
	return buf;
}

int ag_intent_check(const struct bm_agent *a, const struct bm_request *r, const char *tenant,
		    json_t **errs)
{
	struct bm_req_errs e = { .arr = json_array() };
	const char *tool = ag_request_tool(r);
	struct bm_policy p;
	char field[64], why[512], a1[32], a2[32];
	enum bm_pdim pd;
	double want;
	int d;

	*errs = NULL;
	if (!e.arr)
		return -ENOMEM;
	bm_policy_default(&p);
	/* as ag_sup_opts() loads it: a file changed since the start falls back to the default */
	if (r->expect.set && a->cfg.policy[0] &&
	    bm_policy_load_file(a->cfg.policy, tenant, tool, &p, why, sizeof(why)))
		bm_policy_default(&p);
	for (d = 0; d < BM_X__MAX; d++) {
		pd = bm_expect_pdim(d);
		if (!(r->expect.set & BM_X_BIT(d)) || pd == BM_P__MAX || !p.dim[pd].hard)
			continue;
		want = bm_expect_value(&r->expect, d);
		if (want <= p.dim[pd].hard)
			continue;
		snprintf(field, sizeof(field), "expect.%s", bm_expect_key(d));
		bm_req_error(&e, field, "declared %s, above the hard %s level %s of the policy for "
			     "tenant %s, tool %s: it would be stopped; do less per call",
			     level(pd, want, a1, sizeof(a1)), bm_pdim_name(pd),
			     level(pd, p.dim[pd].hard, a2, sizeof(a2)), tenant, tool);
	}
	return bm_req_done(&e, errs);
}

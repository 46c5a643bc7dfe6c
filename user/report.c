// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "histfmt.h"
#include "report.h"

static void summary_line(const struct bm_outcome *out)
{
	const struct bm_summary *s = out->sum;
	char v[BM_DIM__MAX][32];
	int d;

	for (d = 0; d < BM_DIM__MAX; d++)
		bm_fmt_value(d, bm_window_display(d, (double)s->peak[d], s->window_ns), v[d], sizeof(v[d]));
	fprintf(stderr,
		"burstmeter: %s %s in %.2f s; peak cpu %s cores, mem %s, tasks %s, net %s, runq %s ms/window%s\n",
		out->id, bm_reason_name(out->reason), out->wall_ns / 1e9, v[BM_DIM_CPU], v[BM_DIM_MEM],
		v[BM_DIM_PIDS], v[BM_DIM_NET], v[BM_DIM_RUNQ],
		out->n_actions ? "; actions in the outcome" : "");
}

void bm_report(const struct bm_run_opts *o, struct bm_outcome *out)
{
	json_t *j;
	int err, d;

	bm_outcome_retry(out);
	j = bm_outcome_json(out);
	if (!j) {
		bm_err("failed to build the outcome of %s: out of memory", out->id);
		return;
	}
	if (o->outcome && (err = bm_outcome_write(j, o->outcome)))
		bm_err("failed to write the outcome to %s: %s", o->outcome, strerror(-err));
	if (o->hist && out->sum)
		for (d = 0; d < BM_DIM__MAX; d++)
			bm_hist_print(stderr, bm_dim_order[d], out->sum->hist[bm_dim_order[d]],
				      out->sum->window_ns);
	if (!o->quiet && out->sum)
		summary_line(out);
	if (o->json) {
		char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9));

		if (text)
			fprintf(stderr, "%s\n", text);
		free(text);
	}
	json_decref(j);
}

int bm_report_exit_status(const struct bm_outcome *out)
{
	if (out->reason == BM_REASON_DEADLINE)
		return BM_EXIT_DEADLINE;
	if (out->exit_signal)
		return 128 + out->exit_signal;
	return out->exit_code >= 0 ? out->exit_code : BM_EXIT_INTERNAL;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "views/histfmt.h"
#include "views/report.h"

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

/* The outcome into its file and as the last line of stderr, as the options ask. */
static void emit(const struct bm_report_opts *o, json_t *j)
{
	char *text;
	int err;

	if (o->outcome && (err = bm_outcome_write(j, o->outcome)))
		bm_err("failed to write the outcome to %s: %s", o->outcome, strerror(-err));
	if (!o->json)
		return;
	text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9));
	if (text)
		fprintf(stderr, "%s\n", text);
	free(text);
}

void bm_report(const struct bm_report_opts *o, struct bm_outcome *out)
{
	json_t *j;
	int d;

	bm_outcome_retry(out);
	j = bm_outcome_json(out);
	if (!j) {
		bm_err("failed to build the outcome of %s: out of memory", out->id);
		return;
	}
	if (o->hist && out->sum)
		for (d = 0; d < BM_DIM__MAX; d++)
			bm_hist_print(stderr, bm_dim_order[d], out->sum->hist[bm_dim_order[d]],
				      out->sum->window_ns);
	if (!o->quiet && out->sum)
		summary_line(out);
	emit(o, j);
	json_decref(j);
}

/* The one rule, whoever holds the outcome: deadline 124, a signal 128+N, else the code. */
static int exit_status(bool deadline, int signal, int code)
{
	if (deadline)
		return BM_EXIT_DEADLINE;
	if (signal)
		return 128 + signal;
	return code >= 0 ? code : BM_EXIT_INTERNAL;
}

int bm_report_exit_status(const struct bm_outcome *out)
{
	return exit_status(out->reason == BM_REASON_DEADLINE, out->exit_signal, out->exit_code);
}

int bm_report_json(const struct bm_report_opts *o, const char *id, json_t *outcome)
{
	const json_t *ex = json_object_get(outcome, "exit"), *code = json_object_get(ex, "code");
	const char *reason = json_string_value(json_object_get(json_object_get(outcome, "termination"),
							       "reason"));

	if (!o->quiet)
		fprintf(stderr, "burstmeter: %s %s in %.2f s (through the agent)\n", id,
			reason ? reason : "?", json_number_value(json_object_get(outcome, "wall_seconds")));
	emit(o, outcome);
	return exit_status(reason && !strcmp(reason, "deadline"),
			   (int)json_integer_value(json_object_get(ex, "signal")),
			   json_is_integer(code) ? (int)json_integer_value(code) : -1);
}

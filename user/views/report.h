/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How `burstmeter run` reports an effect: the outcome file, --json, --hist
 * and the summary line, from an outcome of its own or one the agent stored.
 */
#ifndef BM_REPORT_H
#define BM_REPORT_H

#include <jansson.h>
#include <stdbool.h>

#include "effect/outcome.h"
#include "meter/window.h"

struct bm_report_opts {
	const char *outcome;	/* file, "-" for stdout, NULL for none */
	bool json;		/* the outcome as the last line of stderr */
	bool hist;		/* histograms on stderr */
	bool quiet;		/* no summary line */
};

/* Write the outcome where the options ask; out->sum may be NULL (never metered). */
void bm_report(const struct bm_report_opts *o, struct bm_outcome *out);
/* The same for an outcome the agent stored (JSON); returns burstmeter's exit status for it. */
int bm_report_json(const struct bm_report_opts *o, const char *id, json_t *outcome);

/* burstmeter's exit status for an outcome (docs/DESIGN.md: 124, 128+N, the command's own). */
int bm_report_exit_status(const struct bm_outcome *out);

#endif /* BM_REPORT_H */

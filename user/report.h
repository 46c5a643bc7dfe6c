/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* How `burstmeter run` reports an effect: the outcome file, --json, --hist and the summary line. */
#ifndef BM_REPORT_H
#define BM_REPORT_H

#include <stdbool.h>

#include "outcome.h"
#include "run.h"
#include "window.h"

/* Write the outcome where the options ask; out->sum may be NULL (never metered). */
void bm_report(const struct bm_run_opts *o, struct bm_outcome *out);

/* burstmeter's exit status for an outcome (DESIGN.md: 124, 128+N, the command's own). */
int bm_report_exit_status(const struct bm_outcome *out);

#endif /* BM_REPORT_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `burstmeter run`: one effect in its own cgroup, metered, with an outcome (standalone). */
#ifndef BM_RUN_H
#define BM_RUN_H

#include "cli/run_opts.h"

/*
 * Run the effect: through the agent when there is one (run_client.h), else
 * here. Returns burstmeter's exit status (docs/DESIGN.md).
 */
int bm_run(struct bm_run_opts *o);

#endif /* BM_RUN_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `burstmeter hist`: an effect's per-window histograms, in the style of runqlat. */
#ifndef BM_HIST_CMD_H
#define BM_HIST_CMD_H

/* Returns the exit status: 0 ok, 1 runtime failure, 125 usage error (one line naming the flag). */
int bm_cmd_hist(int argc, char **argv);

#endif /* BM_HIST_CMD_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `burstmeter top`: the running effects, one row each, with the last full
 * window and the peak of every dimension; live (ncurses), --once or --json.
 */
#ifndef BM_TOP_H
#define BM_TOP_H

/* Returns the exit status: 0 ok, 1 runtime failure, 125 usage error (one line naming the flag). */
int bm_cmd_top(int argc, char **argv);

#endif /* BM_TOP_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `burstmeter run` through the node's agent: the command stays our child, metered there. */
#ifndef BM_RUN_CLIENT_H
#define BM_RUN_CLIENT_H

#include "cli/run_opts.h"

/* The agent's socket if this run goes through it (it exists and the options allow), else NULL. */
const char *bm_run_agent_socket(const struct bm_run_opts *o);
/* Run the effect through the agent at sock; returns the exit status as bm_run() does. */
int bm_run_client(const struct bm_run_opts *o, const char *sock);

#endif /* BM_RUN_CLIENT_H */

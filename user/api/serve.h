/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The agent with its API and /metrics: what `burstmeter agent` runs. */
#ifndef BM_API_SERVE_H
#define BM_API_SERVE_H

#include "agent/config.h"

/* Start the agent, serve its API socket and /metrics, until SIGTERM or SIGINT. 0 or -errno. */
int bm_agent_serve(const struct bm_agent_cfg *cfg);

#endif /* BM_API_SERVE_H */

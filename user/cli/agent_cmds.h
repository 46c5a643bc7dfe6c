/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The agent's subcommands: `agent` runs it; `effects`, `show` and `cancel`
 * talk to it over its socket. Each returns the exit status: 0 ok, 1 runtime
 * failure, 125 usage error (one line naming the flag).
 */
#ifndef BM_AGENT_CMDS_H
#define BM_AGENT_CMDS_H

/* bm-agent, beside the burstmeter binary, whose startup the other commands need not pay */
#define BM_AGENT_BIN "bm-agent"

/* The agent itself (agent_main.c, linked into bm-agent only). */
int bm_cmd_agent(int argc, char **argv);
/* `burstmeter agent ARGS`: exec bm-agent ARGS; returns only on failure (1, said). */
int bm_cmd_agent_exec(int argc, char **argv);
int bm_cmd_effects(int argc, char **argv);
int bm_cmd_show(int argc, char **argv);
int bm_cmd_cancel(int argc, char **argv);
/* `health`: 0 if the agent answers /v1/healthz with status ok, else 1 and one line. */
int bm_cmd_health(int argc, char **argv);

#endif /* BM_AGENT_CMDS_H */

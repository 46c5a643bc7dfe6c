/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `burstmeter run`: one effect in its own cgroup, metered, with an outcome. */
#ifndef BM_RUN_H
#define BM_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "outcome.h"
#include "parse.h"

/* Exit statuses, as timeout(1) has them. */
#define BM_EXIT_DEADLINE 124
#define BM_EXIT_INTERNAL 125
#define BM_EXIT_NOEXEC 126
#define BM_EXIT_NOTFOUND 127

#define BM_INTENT_MAX 4096

struct bm_run_opts {
	const char *id;
	char id_buf[BM_NAME_MAX + 1];	/* generated id when --id is not given */
	const char *tenant;
	const char *intent;
	struct bm_limits limits;
	uint64_t window_ns;
	const char *policy;
	const char *outcome;		/* file, "-" for stdout, NULL for none */
	bool json;			/* outcome as the last line of stderr */
	bool hist;			/* histograms on stderr */
	bool quiet;			/* no summary line */
	bool verbose;
	bool meter_hash;		/* testing: meters in the hash map, as on 6.1 */
	bool no_fast_path;		/* benchmarks: ceilings without the in-kernel kill */
	bool meter_only;		/* tests: no controllers, the meter holds every ceiling */
	bool standalone;		/* never through the agent */
	const char *socket;		/* the agent's socket (default: $BURSTMETER_SOCKET, then /run/...) */
	char **argv;			/* the command */
};

/*
 * Parse `run` arguments (argv[0] is "run"). Returns 1 to run, 0 when help
 * was printed, -EINVAL after printing one line naming the bad flag.
 */
int bm_run_parse_args(int argc, char **argv, struct bm_run_opts *o);

/* Run the effect; returns the exit status for burstmeter (see DESIGN.md). */
int bm_run(struct bm_run_opts *o);

/* The agent's socket if this run goes through it (it exists and the options allow), else NULL. */
const char *bm_run_agent_socket(const struct bm_run_opts *o);
/* Run the effect through the agent at sock (run_client.c). */
int bm_run_client(const struct bm_run_opts *o, const char *sock);

#endif /* BM_RUN_H */

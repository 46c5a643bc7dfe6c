/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `burstmeter run`'s options, and their parse from the command line. */
#ifndef BM_RUN_OPTS_H
#define BM_RUN_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "base/parse.h"
#include "cli/run_sandbox.h"
#include "effect/outcome.h"

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
	bool fresh_meter;		/* load a meter of our own, reuse none that is pinned */
	bool keep_meter;		/* --keep-meter (or $BURSTMETER_KEEP_METER) given */
	uint64_t keep_meter_ns;		/* keep the meter pinned so long after the run */
	const char *socket;		/* the agent's socket (default: $BURSTMETER_SOCKET, then /run/...) */
	struct bm_run_sandbox sb;	/* --network, --read-only-root, --user, ... (run_sandbox.h) */
	char **argv;			/* the command */
};

/*
 * Parse `run` arguments (argv[0] is "run"). Returns 1 to run, 0 when help
 * was printed, -EINVAL after printing one line naming the bad flag.
 */
int bm_run_parse_args(int argc, char **argv, struct bm_run_opts *o);

#endif /* BM_RUN_OPTS_H */

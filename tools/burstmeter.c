// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * burstmeter: one binary, a table of subcommands (like bpftool and git);
 * `agent` is bm-agent's (tools/bm-agent.c), exec'd.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/common.h"
#include "base/version.h"
#include "cli/advise_cmd.h"
#include "cli/agent_cmds.h"
#include "cli/mcp.h"
#include "cli/pod_cmds.h"
#include "cli/run.h"
#include "views/hist.h"
#include "views/top.h"

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static int cmd_run(int argc, char **argv)
{
	struct bm_run_opts o;
	int err = bm_run_parse_args(argc, argv, &o);

	if (err <= 0)
		return err ? BM_EXIT_INTERNAL : 0;
	return bm_run(&o);
}

static int cmd_help(int argc, char **argv);

static const struct cmd cmds[] = {
	{ "run", cmd_run, "run one command as a metered effect in its own cgroup" },
	{ "agent", bm_cmd_agent_exec, "the node agent (bm-agent): API socket, state store, /metrics" },
	{ "effects", bm_cmd_effects, "list this tenant's effects (through the agent)" },
	{ "show", bm_cmd_show, "an effect's state and outcome; --svg draws its timeline" },
	{ "cancel", bm_cmd_cancel, "cancel an effect (through the agent)" },
	{ "health", bm_cmd_health, "exit 0 if the agent is healthy, 1 if not (for probes)" },
	{ "top", bm_cmd_top, "live view of the running effects: last window and peak of each" },
	{ "hist", bm_cmd_hist, "an effect's per-window histograms, like runqlat" },
	{ "podspec", bm_cmd_podspec, "an agent run's Pod and NetworkPolicy, from its request" },
	{ "podstate", bm_cmd_podstate, "an agent run's state, from its pod objects (kubectl -w)" },
	{ "podtenants", bm_cmd_podtenants, "the agent's pod_tenants file, from pod objects (kubectl -w)" },
	{ "mcp", bm_cmd_mcp, "a Model Context Protocol server on stdio: metered tool calls" },
	{ "advise", bm_cmd_advise, "ceilings and requests per tool kind, from the stored outcomes" },
	{ "help", cmd_help, "this help" },
};

static int cmd_help(int argc, char **argv)
{
	unsigned int i;

	printf("Usage: burstmeter COMMAND [OPTIONS]\n"
	       "Meter the bursts of each tool call (effect) in the kernel, per window.\n\n");
	for (i = 0; i < BM_ARRAY_SIZE(cmds); i++)
		printf("  %-10s %s\n", cmds[i].name, cmds[i].help);
	printf("\n'burstmeter COMMAND --help' describes each command.\n");
	return 0;
}

/* bpftool's rule: a unique prefix selects a command. */
static const struct cmd *find_cmd(const char *name)
{
	const struct cmd *found = NULL;
	unsigned int i;

	for (i = 0; i < BM_ARRAY_SIZE(cmds); i++) {
		if (!strcmp(cmds[i].name, name))
			return &cmds[i];
		if (!strncmp(cmds[i].name, name, strlen(name))) {
			if (found)
				return NULL;
			found = &cmds[i];
		}
	}
	return found;
}

int main(int argc, char **argv)
{
	const struct cmd *c;

	if (argc < 2) {
		cmd_help(0, NULL);
		return BM_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("burstmeter %s (abi %d)\n", BM_VERSION, BM_ABI_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cmd_help(0, NULL);
	c = find_cmd(argv[1]);
	if (!c) {
		bm_err("unknown or ambiguous command '%s' (see 'burstmeter help')", argv[1]);
		return BM_EXIT_USAGE;
	}
	/* bad usage is 125 for every command, as for run (timeout(1)'s convention) */
	return c->fn(argc - 1, argv + 1);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter agent`, as bm-agent runs it: the one command that links the
 * HTTP server (libmicrohttpd, with GnuTLS's start-up) and SQLite, so that
 * every other command starts without them.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/config.h"
#include "api/serve.h"
#include "base/common.h"
#include "cli/agent_cmds.h"
#include "meter/loader.h"

static int usage_error(const char *cmd, const char *what)
{
	bm_err("%s (see 'burstmeter %s --help')", what, cmd);
	return BM_EXIT_USAGE;
}

static const char agent_usage[] =
"Usage: burstmeter agent [OPTIONS]\n"
"Run the node agent in the foreground: one meter for every effect of the node,\n"
"an HTTP/JSON API on a Unix socket, a SQLite state store, /metrics.\n"
"\n"
"  --config FILE        YAML configuration (defaults embedded)\n"
"  --socket PATH        API socket (default " BM_AGENT_SOCKET ")\n"
"  --state-dir DIR      state store and effect logs (default " BM_AGENT_STATE_DIR ")\n"
"  --pin-dir DIR        bpffs directory for the pinned meter (default " BM_AGENT_PIN_DIR ")\n"
"  --metrics HOST:PORT  /metrics over TCP, '' for none (default " BM_AGENT_METRICS ")\n"
"  --policy FILE        policy applied to every effect\n"
"  --preflight          check and prepare the node (BTF, cgroups, mount a BPF\n"
"                       filesystem where none is), then exit: an init step\n"
"  -v, --verbose        debug messages\n"
"\n"
"EXAMPLES\n"
"  burstmeter agent\n"
"  burstmeter agent --config /etc/burstmeter/agent.yaml\n"
"  curl --unix-socket " BM_AGENT_SOCKET " http://b/v1/healthz\n";

int bm_cmd_agent(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' }, { "socket", required_argument, NULL, 's' },
		{ "state-dir", required_argument, NULL, 'd' }, { "pin-dir", required_argument, NULL, 'p' },
		{ "metrics", required_argument, NULL, 'm' }, { "policy", required_argument, NULL, 'P' },
		{ "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
		{ "preflight", no_argument, NULL, 'F' }, { NULL, 0, NULL, 0 },
	};
	bool preflight = false;
	struct bm_agent_cfg cfg, over;
	const char *config = NULL;
	bool metrics_set = false;
	char err[512];
	int c, ret;

	bm_agent_cfg_default(&cfg);
	memset(&over, 0, sizeof(over));
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
		char *dst = c == 's' ? over.socket : c == 'd' ? over.state_dir : c == 'p' ? over.pin_dir
			    : c == 'm' ? over.metrics : c == 'P' ? over.policy : NULL;
		size_t len = c == 'm' ? sizeof(over.metrics) : PATH_MAX;

		if (c == 'h')
			return fputs(agent_usage, stdout), 0;
		if (c == 'v')
			bm_log_set_level(BM_LOG_DEBUG);
		else if (c == 'F')
			preflight = true;
		else if (c == 'c')
			config = optarg;
		else if (!dst)
			return usage_error("agent", "unknown or incomplete option");
		/* only --metrics may be empty (no /metrics); a path must be absolute */
		else if (strlen(optarg) >= len || (c != 'm' && optarg[0] != '/'))
			return usage_error("agent", c == 'm' ? "invalid --metrics" : "expected an absolute path");
		else
			snprintf(dst, len, "%s", optarg);
		metrics_set |= c == 'm';
	}
	if (optind < argc)
		return usage_error("agent", "unexpected argument");
	if (config && (ret = bm_agent_cfg_load(&cfg, config, err, sizeof(err)))) {
		bm_err("invalid --config: %s", ret == -EINVAL ? err : strerror(-ret));
		return BM_EXIT_USAGE;
	}
	/* flags over the file over the defaults */
	if (over.socket[0])
		snprintf(cfg.socket, sizeof(cfg.socket), "%s", over.socket);
	if (over.state_dir[0])
		snprintf(cfg.state_dir, sizeof(cfg.state_dir), "%s", over.state_dir);
	if (over.pin_dir[0])
		snprintf(cfg.pin_dir, sizeof(cfg.pin_dir), "%s", over.pin_dir);
	if (over.policy[0])
		snprintf(cfg.policy, sizeof(cfg.policy), "%s", over.policy);
	if (metrics_set)
		snprintf(cfg.metrics, sizeof(cfg.metrics), "%s", over.metrics);
	bm_log_libbpf();
	if (preflight)
		return bm_agent_preflight(&cfg) ? 1 : 0;
	return bm_agent_serve(&cfg) ? 1 : 0;
}

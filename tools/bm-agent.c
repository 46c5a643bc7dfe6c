// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-agent: the node agent, `burstmeter agent` (which execs it). Its own
 * binary so that the HTTP server, TLS and SQLite it links cost the other
 * commands nothing at start-up (GnuTLS's constructor alone is ~3 ms).
 */
#include <string.h>

#include "agent/spawner.h"
#include "cli/agent_cmds.h"

int main(int argc, char **argv)
{
	/* a ready shim of the agent's spawner, exec'd by it when no bm-shim is beside us (spawner.h) */
	if (argc == 2 && !strcmp(argv[0], BM_SHIM_ARGV0) && !strcmp(argv[1], "--ready"))
		bm_spawner__ready_main(BM_SHIM_READY_FD);
	return bm_cmd_agent(argc, argv);
}

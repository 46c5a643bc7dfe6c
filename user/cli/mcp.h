/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `burstmeter mcp`: a Model Context Protocol server on stdio (revision 2026-07-28, and 2025-11-25). */
#ifndef BM_MCP_H
#define BM_MCP_H

/* The subcommand: serves until stdin closes. Returns 0, or 125 on bad usage. */
int bm_cmd_mcp(int argc, char **argv);

#endif /* BM_MCP_H */

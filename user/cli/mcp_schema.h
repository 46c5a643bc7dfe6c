/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The tool definitions of `burstmeter mcp`, as tools/list sends them. */
#ifndef BM_MCP_SCHEMA_H
#define BM_MCP_SCHEMA_H

#include <jansson.h>

/* The tools, in a fixed order: a new reference to a shared array (NULL if out of memory). */
json_t *bm_mcp_tools(void);

#endif /* BM_MCP_SCHEMA_H */

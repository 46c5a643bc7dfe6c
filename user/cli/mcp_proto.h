/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `burstmeter mcp`'s side of the wire: JSON-RPC 2.0 messages, one a line on
 * stdout, written whole from any thread. The server is dual-era (MCP
 * revision 2026-07-28, "Versioning and Compatibility"): requests carrying
 * _meta io.modelcontextprotocol/protocolVersion are served statelessly by
 * revision 2026-07-28; a client that opens with `initialize` gets the
 * legacy lifecycle of revision 2025-11-25 on the same stdio.
 */
#ifndef BM_MCP_PROTO_H
#define BM_MCP_PROTO_H

#include <jansson.h>
#include <stdbool.h>

#define BM_MCP_MODERN "2026-07-28"
#define BM_MCP_LEGACY "2025-11-25"
#define BM_MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"
#define BM_MCP_META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define BM_MCP_META_SERVER "io.modelcontextprotocol/serverInfo"

/* JSON-RPC and MCP error codes */
#define BM_RPC_PARSE_ERROR (-32700)
#define BM_RPC_INVALID_REQUEST (-32600)
#define BM_RPC_METHOD_NOT_FOUND (-32601)
#define BM_RPC_INVALID_PARAMS (-32602)
#define BM_RPC_INTERNAL (-32603)
#define BM_RPC_UNSUPPORTED_VERSION (-32022)

/* Which revision a request is served by (its own _meta, or the legacy handshake). */
struct bm_mcp_era {
	bool modern;
	char version[16];
};

/* The server's name and version, as an MCP Implementation object (new). */
json_t *bm_mcp_server_info(void);
/* Is v one of the legacy revisions served after `initialize`? */
bool bm_mcp_legacy_version(const char *v);

/* Write one message (taken over) as a line; false once stdout is gone. */
bool bm_mcp_send(json_t *msg);
/* A result for id (taken over); a modern one gets resultType and the server's _meta. */
void bm_mcp_result(const json_t *id, json_t *result, const struct bm_mcp_era *era);
/* An error for id (NULL: null), with data (taken over, may be NULL). */
void bm_mcp_error(const json_t *id, int code, json_t *data, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A notification (params taken over). */
void bm_mcp_notify(const char *method, json_t *params);

#endif /* BM_MCP_PROTO_H */

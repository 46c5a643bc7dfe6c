// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter mcp`: a Model Context Protocol server on stdio, so that an
 * agent harness can use burstmeter as its shell tool and read what each
 * call cost and why it was stopped. Newline-delimited JSON-RPC 2.0 on
 * stdin/stdout (logs on stderr). Revision 2026-07-28 (stateless: every
 * request names its version in _meta; server/discover) and, for clients
 * that open with `initialize`, the lifecycle of revision 2025-11-25: a
 * dual-era server, as 2026-07-28's "Versioning and Compatibility" allows.
 * This thread reads and answers; each run_command runs in its own.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/common.h"
#include "cli/mcp.h"
#include "cli/mcp_proto.h"
#include "cli/mcp_run.h"
#include "cli/mcp_tools.h"

#define MAX_LINE (4u << 20)
#define SHUTDOWN_MS 15000

static const char usage[] =
"Usage: burstmeter mcp [OPTIONS]\n"
"Serve the Model Context Protocol on stdin/stdout: tools run_command, get_effect,\n"
"cancel_effect and node_pressure, each call metered as an effect. MCP revision\n"
BM_MCP_MODERN " (and " BM_MCP_LEGACY " for clients that send initialize).\n"
"\n"
"  --socket PATH       the agent's socket (default $BURSTMETER_SOCKET, then\n"
"                      /run/burstmeter/api.sock); with none there, calls run\n"
"                      standalone (root only)\n"
"  --standalone        never go through the agent\n"
"  --max-output SIZE   bytes of stdout and of stderr kept per call (default 16K)\n"
"  -v, --verbose       debug messages on stderr\n"
"\n"
"EXAMPLES\n"
"  burstmeter mcp\n"
"  burstmeter mcp --socket /run/burstmeter/api.sock --max-output 64K\n"
"  claude mcp add burstmeter -- burstmeter mcp     # a harness's own command to add a server\n";

static const char instructions[] =
"Run shell commands with run_command. Each call is metered: the first line of its result says "
"how it ended (completed, or killed at a ceiling, with the figure) and what to change before a "
"retry; structuredContent has the outcome. Plan the next call from it: less parallelism after "
"pids_ceiling, a smaller working set or limits.memory after memory_ceiling, a longer "
"timeout_seconds or less work after deadline.";

/* Which revision serves the connection's requests that carry no version of their own. */
static struct {
	bool legacy;		/* initialize was answered */
	char version[16];
} conn;

static int request_era(const json_t *id, const json_t *params, struct bm_mcp_era *era)
{
	const json_t *meta = json_object_get(params, "_meta"), *v = json_object_get(meta, BM_MCP_META_VERSION);

	memset(era, 0, sizeof(*era));
	if (v) {
		if (!json_is_string(v) || strcmp(json_string_value(v), BM_MCP_MODERN)) {
			bm_mcp_error(id, BM_RPC_UNSUPPORTED_VERSION,
				     json_pack("{s:[s], s:O}", "supported", BM_MCP_MODERN, "requested", v),
				     "Unsupported protocol version");
			return -1;
		}
		if (!json_is_object(json_object_get(meta, BM_MCP_META_CAPS))) {
			bm_mcp_error(id, BM_RPC_INVALID_PARAMS, NULL, "_meta: " BM_MCP_META_CAPS " is required "
				     "with protocol version " BM_MCP_MODERN);
			return -1;
		}
		era->modern = true;
		snprintf(era->version, sizeof(era->version), "%s", BM_MCP_MODERN);
		return 0;
	}
	if (conn.legacy) {
		snprintf(era->version, sizeof(era->version), "%s", conn.version);
		return 0;
	}
	bm_mcp_error(id, BM_RPC_INVALID_PARAMS, NULL, "_meta: " BM_MCP_META_VERSION " is required (revision "
		     BM_MCP_MODERN "), or open with initialize (revision " BM_MCP_LEGACY ")");
	return -1;
}

static void initialize(const json_t *id, const json_t *params)
{
	const char *want = json_string_value(json_object_get(params, "protocolVersion"));
	struct bm_mcp_era era = { false, "" };

	if (!want)
		return bm_mcp_error(id, BM_RPC_INVALID_PARAMS, NULL, "initialize: params.protocolVersion is required");
	/* a version we do not serve is answered with ours; the client decides */
	snprintf(conn.version, sizeof(conn.version), "%s", bm_mcp_legacy_version(want) ? want : BM_MCP_LEGACY);
	conn.legacy = true;
	bm_mcp_result(id, json_pack("{s:s, s:{s:{s:b}}, s:o, s:s}", "protocolVersion", conn.version, "capabilities",
				    "tools", "listChanged", false, "serverInfo", bm_mcp_server_info(), "instructions",
				    instructions), &era);
}

static void discover(const json_t *id, const json_t *params)
{
	const json_t *v = json_object_get(json_object_get(params, "_meta"), BM_MCP_META_VERSION);
	struct bm_mcp_era era = { true, BM_MCP_MODERN };

	if (v && (!json_is_string(v) || strcmp(json_string_value(v), BM_MCP_MODERN)))
		return bm_mcp_error(id, BM_RPC_UNSUPPORTED_VERSION,
				    json_pack("{s:[s], s:O}", "supported", BM_MCP_MODERN, "requested", v),
				    "Unsupported protocol version");
	bm_mcp_result(id, json_pack("{s:[s], s:{s:{}}, s:o, s:s, s:i, s:s}", "supportedVersions", BM_MCP_MODERN,
				    "capabilities", "tools", "serverInfo", bm_mcp_server_info(), "instructions",
				    instructions, "ttlMs", 3600 * 1000, "cacheScope", "public"), &era);
}

static void request(const struct bm_mcp_cfg *cfg, const char *method, const json_t *id, const json_t *params)
{
	struct bm_mcp_era era;

	if (params && !json_is_object(params))
		return bm_mcp_error(id, BM_RPC_INVALID_PARAMS, NULL, "params must be an object");
	if (!strcmp(method, "initialize"))
		return initialize(id, params);
	if (!strcmp(method, "server/discover"))
		return discover(id, params);
	if (!strcmp(method, "ping")) {
		era.modern = json_object_get(json_object_get(params, "_meta"), BM_MCP_META_VERSION) != NULL;
		return bm_mcp_result(id, NULL, &era);
	}
	if (strcmp(method, "tools/list") && strcmp(method, "tools/call"))
		return bm_mcp_error(id, BM_RPC_METHOD_NOT_FOUND, NULL, "Method not found: %s", method);
	if (request_era(id, params, &era))
		return;
	if (!strcmp(method, "tools/list"))
		return bm_mcp_tools_list(id, &era);
	bm_mcp_tools_call(cfg, id, params, &era);
}

static void notification(const char *method, const json_t *params)
{
	const json_t *rid = json_object_get(params, "requestId");

	/* fire and forget: an unknown or finished request is no error */
	if (!strcmp(method, "notifications/cancelled") && (json_is_string(rid) || json_is_integer(rid)))
		bm_mcp_run_cancel_request(rid);
	bm_dbg("mcp: %s", method);
}

static void message(const struct bm_mcp_cfg *cfg, const char *line, size_t len)
{
	json_error_t je;
	json_t *m = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je), *id;
	const char *method;

	if (!m)
		return bm_mcp_error(NULL, BM_RPC_PARSE_ERROR, NULL, "Parse error: %s", je.text);
	id = json_object_get(m, "id");
	method = json_string_value(json_object_get(m, "method"));
	if (json_is_array(m))
		bm_mcp_error(NULL, BM_RPC_INVALID_REQUEST, NULL, "Invalid Request: batches are not supported");
	else if (!json_is_object(m) || strcmp(json_string_value(json_object_get(m, "jsonrpc")) ?: "", "2.0"))
		bm_mcp_error(json_is_string(id) || json_is_integer(id) ? id : NULL, BM_RPC_INVALID_REQUEST, NULL,
			     "Invalid Request: not a JSON-RPC 2.0 message");
	else if (!method && !json_object_get(m, "method"))
		;	/* a response: we send no requests, so none is awaited */
	else if (!method)
		bm_mcp_error(json_is_string(id) || json_is_integer(id) ? id : NULL, BM_RPC_INVALID_REQUEST, NULL,
			     "Invalid Request: method must be a string");
	else if (!id)
		notification(method, json_object_get(m, "params"));
	else if (!json_is_string(id) && !json_is_integer(id))
		bm_mcp_error(NULL, BM_RPC_INVALID_REQUEST, NULL, "Invalid Request: id must be a string or an integer");
	else
		request(cfg, method, id, json_object_get(m, "params"));
	json_decref(m);
}

static int parse_args(int argc, char **argv, struct bm_mcp_cfg *cfg)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' }, { "standalone", no_argument, NULL, 'S' },
		{ "max-output", required_argument, NULL, 'm' }, { "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	uint64_t n;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+vh", opts, NULL)) != -1) {
		if (c == 'h')
			return fputs(usage, stdout), 0;
		if (c == 's' && optarg[0] == '/')
			cfg->socket = optarg;
		else if (c == 'S')
			cfg->standalone = true;
		else if (c == 'm' && !bm_parse_size(optarg, 0, BM_MCP_OUTPUT_MAX, &n))
			cfg->max_output = (size_t)n;
		else if (c == 'v')
			bm_log_set_level(BM_LOG_DEBUG);
		else
			return bm_err("invalid or unknown option %s (see 'burstmeter mcp --help')",
				      c == 's' ? "--socket (an absolute path)" : c == 'm' ? "--max-output (a size 0-1M)" :
				      argv[optind - 1]), -EINVAL;
	}
	if (optind < argc)
		return bm_err("unexpected argument '%s' (see 'burstmeter mcp --help')", argv[optind]), -EINVAL;
	return 1;
}

int bm_cmd_mcp(int argc, char **argv)
{
	static struct bm_mcp_cfg cfg = { .max_output = BM_MCP_OUTPUT_DEFAULT };
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret;

	ret = parse_args(argc, argv, &cfg);
	if (ret <= 0)
		return ret ? BM_EXIT_USAGE : 0;
	n = readlink("/proc/self/exe", cfg.self_exe, sizeof(cfg.self_exe) - 1);
	if (n < 0)
		return bm_err("failed to find our own binary: %s", strerror(errno)), 1;
	cfg.self_exe[n] = '\0';
	/* a client that went away is seen as EOF and EPIPE, never as a signal */
	signal(SIGPIPE, SIG_IGN);
	bm_dbg("mcp: serving %s and %s on stdio", BM_MCP_MODERN, BM_MCP_LEGACY);
	while ((n = getline(&line, &cap, stdin)) >= 0) {
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			n--;
		if (!n)
			continue;
		if ((size_t)n > MAX_LINE)
			bm_mcp_error(NULL, BM_RPC_INVALID_REQUEST, NULL, "Invalid Request: a message over %u bytes",
				     MAX_LINE);
		else
			message(&cfg, line, (size_t)n);
	}
	free(line);
	/* stdin closed: the client is done; nothing of ours may outlive it */
	bm_mcp_run_shutdown(SHUTDOWN_MS);
	return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The tool definitions, as tools/list sends them: JSON Schema 2020-12 (the
 * default dialect) for inputs, and run_command's outputSchema, which every
 * structuredContent it returns conforms to (mcp_result.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cli/mcp_schema.h"
#include "effect/outcome.h"

static const char tools_json[] =
"[{\"name\": \"run_command\", \"title\": \"Run a command, metered\","
" \"description\": \"Run one command (argv, or a shell line as command) as a metered effect in its own cgroup: "
"its CPU, memory, tasks and network are metered per 10 ms window in the kernel and held to the limits given. "
"Returns its stdout and stderr (capped: head and tail) and the outcome: why it ended (termination.reason: "
"@REASONS@), its peaks, and retry advice. The first line says what to change before a retry.\","
" \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"
"  \"argv\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"minItems\": 1,"
"   \"description\": \"the command and its arguments; argv[0] is looked up on PATH\"},"
"  \"command\": {\"type\": \"string\", \"description\": \"a shell line, run by /bin/sh -c (instead of argv)\"},"
"  \"cwd\": {\"type\": \"string\", \"description\": \"absolute working directory (default: the server's)\"},"
"  \"env\": {\"type\": \"object\", \"additionalProperties\": {\"type\": \"string\"},"
"   \"description\": \"variables set over the server's environment\"},"
"  \"timeout_seconds\": {\"type\": [\"number\", \"string\"], \"description\": \"wall-clock limit: SIGTERM, then kill"
" (e.g. 600 or \\\"10m\\\")\"},"
"  \"limits\": {\"type\": \"object\", \"additionalProperties\": false, \"properties\": {"
"   \"cpu\": {\"type\": [\"number\", \"string\"], \"description\": \"cores, e.g. 0.5, 2 or \\\"500m\\\"\"},"
"   \"memory\": {\"type\": [\"integer\", \"string\"], \"description\": \"bytes or a size, e.g. \\\"512Mi\\\"\"},"
"   \"pids\": {\"type\": \"integer\", \"minimum\": 1, \"description\": \"most tasks (processes and threads) at once\"}}},"
"  \"network_policy\": {\"enum\": [\"none\", \"egress_restricted\", \"egress_allow_list\", \"full\"],"
"   \"description\": \"none: a network namespace of its own; egress_restricted: this host only; egress_allow_list:"
" that and allowed_egress_cidrs; full (default)\"},"
"  \"allowed_egress_cidrs\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}},"
"  \"intent\": {\"type\": \"string\", \"description\": \"what the call is for, kept with its outcome\"},"
"  \"expectations\": {\"type\": \"object\", \"additionalProperties\": false, \"description\": \"what the call is "
"expected to need (peaks, bytes sent, duration); a value above one is reported, one above the policy's hard "
"level refused before it runs, and the policy's soft levels may widen up to them\", \"properties\": {"
"   \"wall_seconds\": {\"type\": [\"number\", \"string\"]}, \"memory\": {\"type\": [\"integer\", \"string\"]},"
"   \"pids\": {\"type\": \"integer\"}, \"cpu_cores\": {\"type\": [\"number\", \"string\"]},"
"   \"net_tx_bytes\": {\"type\": [\"integer\", \"string\"]},"
"   \"net_tx_bytes_per_s\": {\"type\": [\"integer\", \"string\"]}}},"
"  \"traceparent\": {\"type\": \"string\", \"description\": \"W3C trace context: kept in the outcome, TRACEPARENT "
"for the command\"},"
"  \"id\": {\"type\": \"string\", \"description\": \"the effect id (default: generated; never reused)\"},"
"  \"max_output_bytes\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 1048576,"
"   \"description\": \"bytes kept of stdout and of stderr each (default 16384): the first and last halves\"}}},"
" \"outputSchema\": {\"type\": \"object\", \"required\": [\"effect_id\", \"via\", \"state\", \"summary\"],"
"  \"properties\": {"
"  \"effect_id\": {\"type\": \"string\"}, \"via\": {\"enum\": [\"agent\", \"standalone\"]},"
"  \"state\": {\"type\": \"string\", \"description\": \"the effect's final state, or refused (it never ran)\"},"
"  \"summary\": {\"type\": \"string\"},"
"  \"reason\": {\"enum\": [], \"description\": \"termination.reason; absent when the outcome names none\"},"
"  \"exit_code\": {\"type\": [\"integer\", \"null\"]}, \"signal\": {\"type\": [\"integer\", \"null\"]},"
"  \"retry\": {\"type\": \"object\", \"required\": [\"eligible\", \"after_ms\", \"advice\"], \"properties\": {"
"   \"eligible\": {\"type\": \"boolean\"}, \"after_ms\": {\"type\": \"integer\"}, \"advice\": {\"type\": \"string\"}}},"
"  \"stdout\": {\"type\": \"string\"}, \"stderr\": {\"type\": \"string\"},"
"  \"stdout_bytes\": {\"type\": \"integer\"}, \"stderr_bytes\": {\"type\": \"integer\"},"
"  \"truncated\": {\"type\": \"boolean\"},"
"  \"expectations\": {\"type\": \"object\", \"additionalProperties\": {\"type\": \"object\","
"   \"required\": [\"expected\", \"observed\", \"exceeded\"]}},"
"  \"refused\": {\"type\": \"object\", \"required\": [\"status\", \"error\", \"retry_after_s\"], \"properties\": {"
"   \"status\": {\"type\": \"integer\"}, \"error\": {\"type\": \"string\"}, \"retry_after_s\": {\"type\": \"integer\"},"
"   \"fields\": {\"type\": \"array\"}}},"
"  \"outcome\": {\"type\": \"object\", \"description\": \"burstmeter.outcome/v1, without histograms and timeline\","
"   \"required\": [\"schema\", \"id\", \"wall_seconds\", \"limits\", \"peak\", \"termination\", \"retry\"],"
"   \"properties\": {\"schema\": {\"const\": \"burstmeter.outcome/v1\"}, \"wall_seconds\": {\"type\": \"number\"},"
"    \"peak\": {\"type\": \"object\"}, \"limits\": {\"type\": \"object\"}, \"termination\": {\"type\": \"object\","
"    \"required\": [\"by\"], \"properties\": {\"reason\": {\"enum\": []}, \"by\": {\"type\": \"string\"}}}}}}},"
" \"annotations\": {\"destructiveHint\": true, \"openWorldHint\": true}},"
"{\"name\": \"get_effect\", \"title\": \"An effect's state and outcome\","
" \"description\": \"The state of an effect (by its id) and, once it has ended, its outcome.\","
" \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"id\"], \"properties\": {"
"  \"id\": {\"type\": \"string\"}, \"full\": {\"type\": \"boolean\", \"description\": \"with histograms and timeline\"}}},"
" \"annotations\": {\"readOnlyHint\": true}},"
"{\"name\": \"cancel_effect\", \"title\": \"Cancel an effect\","
" \"description\": \"Cancel a running or queued effect: SIGTERM to every process of it, kill after a grace.\","
" \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false, \"required\": [\"id\"], \"properties\": {"
"  \"id\": {\"type\": \"string\"}}},"
" \"annotations\": {\"destructiveHint\": true, \"idempotentHint\": true}},"
"{\"name\": \"node_pressure\", \"title\": \"What admission sees now\","
" \"description\": \"Whether a new call starts now or waits, and why: through an agent, what its admission "
"reads (the node's CPU pressure from its PSI file, over the last 10 s and 1 s, MemAvailable, their bounds, "
"the effects running and queued, and this tenant's budgets); standalone, this host's PSI and meminfo, "
"read by the server (nothing queues there).\","
" \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false},"
" \"outputSchema\": {\"type\": \"object\", \"required\": [\"summary\", \"source\", \"admits\", \"because\"],"
"  \"properties\": {\"summary\": {\"type\": \"string\"}, \"source\": {\"enum\": [\"agent\", \"standalone\"]},"
"  \"admits\": {\"type\": \"boolean\"}, \"because\": {\"type\": \"string\"},"
"  \"cpu_some_avg10\": {\"type\": [\"number\", \"null\"]}, \"cpu_some_avg60\": {\"type\": [\"number\", \"null\"]},"
"  \"memory_some_avg10\": {\"type\": [\"number\", \"null\"]},"
"  \"memory_available_bytes\": {\"type\": [\"integer\", \"null\"]}, \"memory_total_bytes\": {\"type\": [\"integer\", \"null\"]},"
"  \"pressure\": {\"type\": \"object\", \"description\": \"the agent's healthz pressure\", \"properties\": {"
"   \"over\": {\"type\": \"boolean\"}, \"room\": {\"type\": \"boolean\"}, \"cpu_some_1s\": {\"type\": \"number\"},"
"   \"action\": {\"enum\": [\"pause\", \"throttle_top\"]}, \"admit_cpu_pressure\": {\"type\": \"number\"},"
"   \"admit_mem_available_bytes\": {\"type\": \"integer\"}}},"
"  \"agent\": {\"type\": [\"object\", \"null\"], \"properties\": {\"running\": {\"type\": \"integer\"},"
"   \"queued\": {\"type\": \"integer\"}, \"max_running\": {\"type\": [\"integer\", \"null\"]},"
"   \"max_queued\": {\"type\": [\"integer\", \"null\"]}}},"
"  \"tenant\": {\"type\": \"object\", \"description\": \"GET /v1/tenants/self: the caller's tenant\","
"   \"properties\": {\"name\": {\"type\": \"string\"}, \"held\": {\"type\": \"boolean\"},"
"   \"held_by\": {\"type\": [\"string\", \"null\"]}, \"budgets\": {\"type\": \"object\"}}}}},"
" \"annotations\": {\"readOnlyHint\": true}}]";

static json_t *tools;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/*
 * run_command's reasons, in its outputSchema's enum and its description,
 * from the outcome's own table (effect/outcome.c): they cannot drift apart.
 */
static json_t *prop(json_t *schema, const char *name)
{
	return json_object_get(json_object_get(schema, "properties"), name);
}

static int add_reasons(json_t *run)
{
	json_t *out = json_object_get(run, "outputSchema");
	json_t *e = json_object_get(prop(out, "reason"), "enum");
	json_t *e2 = json_object_get(prop(prop(prop(out, "outcome"), "termination"), "reason"), "enum");
	const char *desc = json_string_value(json_object_get(run, "description")), *at;
	char list[512];
	size_t n = 0;
	int r;

	at = desc ? strstr(desc, "@REASONS@") : NULL;
	if (!json_is_array(e) || !json_is_array(e2) || !at)
		return -EINVAL;
	list[0] = '\0';
	for (r = 0; r < BM_REASON__MAX && n < sizeof(list); r++) {
		json_array_append_new(e, json_string(bm_reason_name(r)));
		json_array_append_new(e2, json_string(bm_reason_name(r)));
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", r ? ", " : "", bm_reason_name(r));
	}
	if (n >= sizeof(list))
		return -ENOSPC;
	return json_object_set_new(run, "description", json_sprintf("%.*s%s%s", (int)(at - desc), desc, list,
								    at + strlen("@REASONS@"))) ? -ENOMEM : 0;
}

static void load(void)
{
	tools = json_loads(tools_json, 0, NULL);
	if (tools && add_reasons(json_array_get(tools, 0))) {
		json_decref(tools);
		tools = NULL;
	}
}

json_t *bm_mcp_tools(void)
{
	pthread_once(&once, load);
	return json_incref(tools);
}

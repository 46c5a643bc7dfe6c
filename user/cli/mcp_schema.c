// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The tool definitions, as tools/list sends them: JSON Schema 2020-12 (the
 * default dialect) for inputs, and run_command's outputSchema, which every
 * structuredContent it returns conforms to (mcp_result.c).
 */
#include <pthread.h>

#include "cli/mcp_schema.h"

static const char tools_json[] =
"[{\"name\": \"run_command\", \"title\": \"Run a command, metered\","
" \"description\": \"Run one command (argv, or a shell line as command) as a metered effect in its own cgroup: "
"its CPU, memory, tasks and network are metered per 10 ms window in the kernel and held to the limits given. "
"Returns its stdout and stderr (capped: head and tail) and the outcome: why it ended (termination.reason: "
"completed, failed, signaled, deadline, memory_ceiling, pids_ceiling, cpu_ceiling, net_ceiling, cancelled, "
"meter_error), its peaks, and retry advice. The first line says what to change before a retry.\","
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
"  \"reason\": {\"enum\": [\"completed\", \"failed\", \"signaled\", \"deadline\", \"memory_ceiling\", \"pids_ceiling\","
"   \"cpu_ceiling\", \"net_ceiling\", \"cancelled\", \"meter_error\"]},"
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
"    \"required\": [\"reason\", \"by\"]}}}}},"
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
" \"description\": \"The node's CPU and memory pressure (PSI avg10), available memory, and the agent's running "
"and queued effects: what decides whether a new call starts now or waits.\","
" \"inputSchema\": {\"type\": \"object\", \"additionalProperties\": false},"
" \"outputSchema\": {\"type\": \"object\", \"required\": [\"summary\", \"cpu_some_avg10\", \"memory_available_bytes\","
"  \"agent\"], \"properties\": {\"summary\": {\"type\": \"string\"},"
"  \"cpu_some_avg10\": {\"type\": [\"number\", \"null\"]}, \"cpu_some_avg60\": {\"type\": [\"number\", \"null\"]},"
"  \"memory_some_avg10\": {\"type\": [\"number\", \"null\"]},"
"  \"memory_available_bytes\": {\"type\": [\"integer\", \"null\"]}, \"memory_total_bytes\": {\"type\": [\"integer\", \"null\"]},"
"  \"agent\": {\"type\": [\"object\", \"null\"], \"properties\": {\"running\": {\"type\": \"integer\"},"
"   \"queued\": {\"type\": \"integer\"}}}}},"
" \"annotations\": {\"readOnlyHint\": true}}]";

static json_t *tools;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	tools = json_loads(tools_json, 0, NULL);
}

json_t *bm_mcp_tools(void)
{
	pthread_once(&once, load);
	return json_incref(tools);
}

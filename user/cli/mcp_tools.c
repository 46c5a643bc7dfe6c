// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tools/list and tools/call. Bad arguments are a JSON-RPC error (-32602)
 * whose message names the first bad field and whose data lists them all;
 * what goes wrong once a call is under way is a tool result with isError,
 * which the model reads and can act on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/request_field.h"
#include "base/common.h"
#include "cli/client.h"
#include "cli/mcp_result.h"
#include "cli/mcp_run.h"
#include "cli/mcp_schema.h"
#include "cli/mcp_text.h"
#include "cli/mcp_tools.h"

#define CALL_MS 10000

void bm_mcp_tools_list(const json_t *id, const struct bm_mcp_era *era)
{
	json_t *tools = bm_mcp_tools(), *res;

	if (!tools)
		return bm_mcp_error(id, BM_RPC_INTERNAL, NULL, "out of memory");
	res = json_pack("{s:o}", "tools", tools);
	/* 2026-07-28 (SEP-2549): a list says how long it stays fresh; ours never changes */
	if (era->modern) {
		json_object_set_new(res, "ttlMs", json_integer(3600 * 1000));
		json_object_set_new(res, "cacheScope", json_string("public"));
	}
	bm_mcp_result(id, res, era);
}

/* -32602 naming the first bad field, with all of them as data. */
static void bad_arguments(const json_t *id, const char *tool, json_t *errs)
{
	const json_t *first = json_array_get(errs, 0);
	size_t n = json_array_size(errs);

	bm_mcp_error(id, BM_RPC_INVALID_PARAMS, json_pack("{s:s, s:o}", "tool", tool, "errors", errs),
		     "invalid arguments for %s: %s: %s%s", tool,
		     json_string_value(json_object_get(first, "field")) ?: "",
		     json_string_value(json_object_get(first, "error")) ?: "", n > 1 ? " (and more: see data)" : "");
}

/* The arguments of the small tools: known keys only, and an effect id where one is needed. */
static json_t *id_args(const json_t *args, const char *const *known, bool need_id, const char **eid)
{
	struct bm_req_errs e = { .arr = json_array() };
	json_t *v;

	*eid = NULL;
	if (args && !json_is_object(args)) {
		bm_req_error(&e, "", "arguments must be an object");
		return e.arr;
	}
	if (args)
		bm_req_unknown_keys(&e, "", (json_t *)args, known);
	v = json_object_get(args, "id");
	if (need_id && !v)
		bm_req_error(&e, "id", "required: the effect's id");
	else if (v && (!json_is_string(v) || !bm_valid_name(json_string_value(v))))
		bm_req_error(&e, "id", "expected 1-%d of [A-Za-z0-9._-], not starting with '.'", BM_NAME_MAX);
	else if (v)
		*eid = json_string_value(v);
	v = json_object_get(args, "full");
	if (v && !json_is_boolean(v))
		bm_req_error(&e, "full", "must be true or false");
	if (e.n)
		return e.arr;
	json_decref(e.arr);
	return NULL;
}

static json_t *get_effect(const struct bm_mcp_cfg *cfg, const char *eid, bool full)
{
	const char *sock = bm_mcp_agent_socket(cfg), *state;
	char path[256], line[1024];
	json_t *eff = NULL, *o, *sc;
	int st;

	if (!sock) {
		o = bm_mcp_run_outcome(eid);
		if (!o)
			return bm_mcp_result_text("no effect of that id: no agent runs, and this server ran none", true);
		eff = json_pack("{s:s, s:s, s:o}", "id", eid, "state", "ended", "outcome", o);
	} else {
		snprintf(path, sizeof(path), "/v1/effects/%s", eid);
		st = bm_client_call(sock, "GET", path, NULL, &eff, CALL_MS);
		if (st != 200) {
			if (st == 404)
				snprintf(line, sizeof(line), "no effect %s for this tenant", eid);
			else
				snprintf(line, sizeof(line), "the agent answered %d for effect %s", st, eid);
			json_decref(eff);
			return bm_mcp_result_text(line, true);
		}
	}
	state = json_string_value(json_object_get(eff, "state")) ?: "";
	o = json_object_get(eff, "outcome");
	if (json_is_object(o)) {
		bm_mcp_summary(o, line, sizeof(line));
		if (!full)
			json_object_set_new(eff, "outcome", bm_mcp_outcome_brief(o));
	} else {
		snprintf(line, sizeof(line), "%s: no outcome yet", state);
	}
	sc = json_pack("{s:s, s:s, s:s, s:O}", "effect_id", eid, "state", state, "summary", line, "effect", eff);
	json_decref(eff);
	return json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", line,
			 "structuredContent", sc, "isError", false);
}

static json_t *cancel_effect(const struct bm_mcp_cfg *cfg, const char *eid)
{
	const char *sock = bm_mcp_agent_socket(cfg);
	char path[256], line[512];
	json_t *eff = NULL;
	int st;

	if (!sock)
		return bm_mcp_run_cancel_effect(eid) ?
			bm_mcp_result_text("no running effect of that id (no agent runs: only this server's own)", true) :
			bm_mcp_result_text("cancel asked: SIGTERM to the command now", false);
	snprintf(path, sizeof(path), "/v1/effects/%s/cancel", eid);
	st = bm_client_call(sock, "POST", path, NULL, &eff, CALL_MS);
	json_decref(eff);
	if (st == 202)
		return bm_mcp_result_text("cancel asked: SIGTERM to every process of it now, kill after the grace; "
					  "its call returns the outcome", false);
	if (st == 409)
		snprintf(line, sizeof(line), "effect %s has ended already", eid);
	else if (st == 404)
		snprintf(line, sizeof(line), "no effect %s for this tenant", eid);
	else
		snprintf(line, sizeof(line), "the agent answered %d for effect %s", st, eid);
	return bm_mcp_result_text(line, true);
}

/* "avg10=" (or another key) of a PSI file's "some" line; -1 if there is none. */
static double psi(const char *file, const char *key)
{
	char buf[512], *p;

	if (bm_read_file(AT_FDCWD, file, buf, sizeof(buf)) <= 0 || strncmp(buf, "some", 4) || !(p = strstr(buf, key)))
		return -1;
	return atof(p + strlen(key));
}

static long long meminfo(const char *key)
{
	char buf[4096], *p;

	if (bm_read_file(AT_FDCWD, "/proc/meminfo", buf, sizeof(buf)) <= 0 || !(p = strstr(buf, key)))
		return -1;
	return strtoll(p + strlen(key), NULL, 10) * 1024;
}

static json_t *maybe(double v)
{
	return v < 0 ? json_null() : json_real(v);
}

static double jnum(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

/*
 * Whether the agent starts a call now, and the first thing that decides it,
 * in admission's order (agent/admit.c ag_schedule, ag_node_room, tenant.c
 * ag_tenant_held): the node's running bound, its pressure, the tenant.
 */
static bool admits(const json_t *h, const json_t *p, const json_t *t, char *why, size_t len)
{
	double run = jnum(h, "running"), max = jnum(h, "max_running"), avg10 = jnum(p, "cpu_some_avg10");
	double now = jnum(p, "cpu_some_1s"), cpu_max = jnum(p, "admit_cpu_pressure");
	double avail = jnum(p, "mem_available_bytes"), mem_min = jnum(p, "admit_mem_available_bytes");
	const char *tenant = json_string_value(json_object_get(t, "tenant")) ?: "?";
	const char *file = json_string_value(json_object_get(p, "cpu_pressure_file")) ?: "?";
	const char *held_by = json_string_value(json_object_get(t, "held_by"));
	const json_t *bud = json_object_get(json_object_get(t, "budgets"), held_by ? held_by : "");
	char a[32], b[32];

	bm_mcp_bytes(avail, a, sizeof(a));
	bm_mcp_bytes(mem_min, b, sizeof(b));
	if (max > 0 && run >= max) {
		snprintf(why, len, "no, because the node runs its most effects at once (%.0f of max_running %.0f): "
			 "a call queues until one ends", run, max);
		return false;
	}
	if (!json_is_true(json_object_get(p, "room"))) {
		if (avail > 0 && avail < mem_min)
			snprintf(why, len, "no, because MemAvailable %s is below admit_mem_available %s", a, b);
		else
			snprintf(why, len, "no, because cpu pressure %.2f %% (avg10 of %s) is above admit_cpu_pressure "
				 "%.0f %%%s", avg10, file, cpu_max,
				 !strcmp(json_string_value(json_object_get(p, "action")) ?: "", "throttle_top") ?
				 " and no top contributor is throttled with the last second under it" : "");
		return false;
	}
	if (held_by) {
		snprintf(why, len, "no, because tenant %s's %s budget is exhausted: retry after %.0f s", tenant, held_by,
			 jnum(bud, "retry_after_s"));
		return false;
	}
	if (json_is_true(json_object_get(json_object_get(t, "pressure"), "throttled"))) {
		snprintf(why, len, "no, because tenant %s is held as the top contributor to the node's pressure",
			 tenant);
		return false;
	}
	if (json_is_true(json_object_get(t, "held"))) {
		snprintf(why, len, "no, because tenant %s runs its most effects at once (%.0f: tenant_max_running)",
			 tenant, jnum(t, "running"));
		return false;
	}
	if (json_is_true(json_object_get(p, "over")))
		snprintf(why, len, "yes, because the node is over its pressure bounds but throttles the top contributor "
			 "(throttle_top) and the last second's cpu pressure %.2f %% is at most %.0f %%; "
			 "%.0f of %.0f running; tenant %s is not held", now, cpu_max, run, max, tenant);
	else
		snprintf(why, len, "yes, because cpu pressure %.2f %% (avg10 of %s) is at most admit_cpu_pressure %.0f %%, "
			 "%s available is at least admit_mem_available %s, %.0f of %.0f running, and tenant %s is not "
			 "held by a budget", avg10, file, cpu_max, a, b, run, max, tenant);
	return true;
}

/* Through an agent: what its admission sees (healthz's pressure, the tenant's budgets). */
static json_t *agent_pressure(const char *sock)
{
	json_t *h = NULL, *t = NULL, *p, *sc = NULL, *res;
	char why[768], line[1024], a[32];
	bool yes;
	int st;

	st = bm_client_call(sock, "GET", "/v1/healthz", NULL, &h, CALL_MS);
	if (st != 200 || !json_is_object(json_object_get(h, "pressure"))) {
		json_decref(h);
		snprintf(line, sizeof(line), "the agent answered %d to GET /v1/healthz", st);
		return bm_mcp_result_text(line, true);
	}
	st = bm_client_call(sock, "GET", "/v1/tenants/self", NULL, &t, CALL_MS);
	if (st != 200) {
		json_decref(h);
		json_decref(t);
		snprintf(line, sizeof(line), "the agent answered %d to GET /v1/tenants/self", st);
		return bm_mcp_result_text(line, true);
	}
	p = json_object_get(h, "pressure");
	yes = admits(h, p, t, why, sizeof(why));
	bm_mcp_bytes(jnum(p, "mem_available_bytes"), a, sizeof(a));
	snprintf(line, sizeof(line), "admits now: %s; cpu pressure %.2f %% (avg10), %.2f %% over the last 1 s; "
		 "%s available; the agent runs %lld, %lld queued", why, jnum(p, "cpu_some_avg10"),
		 jnum(p, "cpu_some_1s"), a, (long long)jnum(h, "running"), (long long)jnum(h, "queued"));
	sc = json_pack("{s:s, s:s, s:b, s:s, s:O, s:O, s:O, s:{s:O, s:O, s:O, s:O}, s:{s:O, s:O, s:O, s:O, s:O, s:O}}",
		       "summary", line, "source", "agent", "admits", yes, "because", why + (yes ? 5 : 4),
		       "cpu_some_avg10", json_object_get(p, "cpu_some_avg10"),
		       "memory_available_bytes", json_object_get(p, "mem_available_bytes"), "pressure", p,
		       "agent", "running", json_object_get(h, "running"), "queued", json_object_get(h, "queued"),
		       "max_running", json_object_get(h, "max_running") ?: json_null(),
		       "max_queued", json_object_get(h, "max_queued") ?: json_null(),
		       "tenant", "name", json_object_get(t, "tenant"), "running", json_object_get(t, "running"),
		       "queued", json_object_get(t, "queued"), "held", json_object_get(t, "held"),
		       "held_by", json_object_get(t, "held_by") ?: json_null(), "budgets",
		       json_object_get(t, "budgets"));
	json_decref(h);
	json_decref(t);
	if (!sc)
		return bm_mcp_result_text(line, true);
	res = json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", line, "structuredContent", sc,
			"isError", false);
	return res;
}

/* Standalone: nothing queues; what this host's PSI and meminfo say, named as such. */
static json_t *node_pressure(const struct bm_mcp_cfg *cfg)
{
	const char *sock = bm_mcp_agent_socket(cfg);
	double cpu10, mem10;
	long long avail, total;
	json_t *sc;
	char line[768], a[32], t[32];

	if (sock)
		return agent_pressure(sock);
	cpu10 = psi("/proc/pressure/cpu", "avg10=");
	mem10 = psi("/proc/pressure/memory", "avg10=");
	avail = meminfo("MemAvailable:");
	total = meminfo("MemTotal:");
	bm_mcp_bytes((double)avail, a, sizeof(a));
	bm_mcp_bytes((double)total, t, sizeof(t));
	snprintf(line, sizeof(line), "admits now: yes, because no agent runs: a call runs standalone at once, never "
		 "queued; read by this server from /proc/pressure/cpu, /proc/pressure/memory and /proc/meminfo: "
		 "cpu pressure %.2f %% (avg10), memory pressure %.2f %%; %s of %s available",
		 cpu10 < 0 ? 0 : cpu10, mem10 < 0 ? 0 : mem10, a, t);
	sc = json_pack("{s:s, s:s, s:b, s:s, s:o, s:o, s:o, s:o, s:o, s:n}", "summary", line, "source", "standalone",
		       "admits", 1, "because", "no agent runs: a call runs standalone at once, never queued",
		       "cpu_some_avg10", maybe(cpu10), "cpu_some_avg60", maybe(psi("/proc/pressure/cpu", "avg60=")),
		       "memory_some_avg10", maybe(mem10),
		       "memory_available_bytes", avail < 0 ? json_null() : json_integer(avail),
		       "memory_total_bytes", total < 0 ? json_null() : json_integer(total), "agent");
	return json_pack("{s:[{s:s, s:s}], s:o, s:b}", "content", "type", "text", "text", line,
			 "structuredContent", sc, "isError", false);
}

static void run_command(const struct bm_mcp_cfg *cfg, const json_t *id, const json_t *params, const json_t *args,
			const struct bm_mcp_era *era)
{
	struct bm_mcp_req req;
	json_t *errs = NULL;
	int err = bm_mcp_req_parse(args, cfg, &req, &errs);

	if (err == -EINVAL)
		return bad_arguments(id, "run_command", errs);
	if (err)
		return bm_mcp_error(id, BM_RPC_INTERNAL, NULL, "failed to take the call: %s", strerror(-err));
	req.rpc_id = json_incref((json_t *)id);
	req.progress_token = json_incref(json_object_get(json_object_get(params, "_meta"), "progressToken"));
	req.era = *era;
	err = bm_mcp_run_start(cfg, &req);
	if (err)
		bm_mcp_error(id, BM_RPC_INTERNAL, NULL, err == -EBUSY ? "too many calls at once: wait for one to end" :
			     "failed to start the call: %s", strerror(-err));
}

void bm_mcp_tools_call(const struct bm_mcp_cfg *cfg, const json_t *id, const json_t *params,
		       const struct bm_mcp_era *era)
{
	static const char *const id_keys[] = { "id", NULL }, *const get_keys[] = { "id", "full", NULL };
	static const char *const no_keys[] = { NULL };
	const char *name = json_string_value(json_object_get(params, "name")), *eid;
	const json_t *args = json_object_get(params, "arguments");
	json_t *errs, *res;

	if (!name)
		return bm_mcp_error(id, BM_RPC_INVALID_PARAMS, NULL, "tools/call: params.name must be a tool's name");
	if (!strcmp(name, "run_command"))
		return run_command(cfg, id, params, args, era);
	if (!strcmp(name, "get_effect"))
		errs = id_args(args, get_keys, true, &eid);
	else if (!strcmp(name, "cancel_effect"))
		errs = id_args(args, id_keys, true, &eid);
	else if (!strcmp(name, "node_pressure"))
		errs = id_args(args, no_keys, false, &eid);
	else
		return bm_mcp_error(id, BM_RPC_INVALID_PARAMS, NULL, "Unknown tool: %s", name);
	if (errs)
		return bad_arguments(id, name, errs);
	if (!strcmp(name, "get_effect"))
		res = get_effect(cfg, eid, json_is_true(json_object_get(args, "full")));
	else if (!strcmp(name, "cancel_effect"))
		res = cancel_effect(cfg, eid);
	else
		res = node_pressure(cfg);
	bm_mcp_result(id, res, era);
}

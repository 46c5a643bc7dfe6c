// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * run_command's arguments. The tool's own fields (command, limits,
 * expectations, max_output_bytes) are checked here; then the call is put in
 * the agent's request form and checked by bm_request_parse(), whose field
 * names are mapped back to the tool's, so one round trip names every bad
 * field whichever parser found it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/request.h"
#include "agent/request_field.h"
#include "base/common.h"
#include "cli/mcp_req.h"

extern char **environ;

static const char *const top_keys[] = {
	"argv", "command", "cwd", "env", "timeout_seconds", "limits", "network_policy",
	"allowed_egress_cidrs", "intent", "expectations", "id", "max_output_bytes", "traceparent", NULL,
};
static const char *const limit_keys[] = { "cpu", "memory", "pids", NULL };
static const char *const expect_keys[] = { "wall_seconds", "memory", "pids", "cpu_cores", "net_tx_bytes",
					   "net_tx_bytes_per_s", NULL };

/* The agent's field names, and the tool's for them. */
static const struct {
	const char *agent, *tool;
} names[] = {
	{ "sandbox.cpu_limit", "limits.cpu" },
	{ "sandbox.memory_limit", "limits.memory" },
	{ "sandbox.pids_limit", "limits.pids" },
	{ "sandbox.timeout_seconds", "timeout_seconds" },
	{ "sandbox.network_policy", "network_policy" },
	{ "sandbox.allowed_egress_cidrs", "allowed_egress_cidrs" },
	{ "expect.memory_bytes", "expectations.memory" },
	{ "expect", "expectations" },
};

void bm_mcp_req_free(struct bm_mcp_req *r)
{
	char **p;

	for (p = r->argv; p && *p; p++)
		free(*p);
	free(r->argv);
	for (p = r->envp; p && *p; p++)
		free(*p);
	free(r->envp);
	free(r->cwd);
	free(r->intent);
	json_decref(r->sandbox);
	json_decref(r->rpc_id);
	json_decref(r->progress_token);
	memset(r, 0, sizeof(*r));
}

static bool said(const struct bm_req_errs *e, const char *field)
{
	size_t i;
	json_t *x;

	json_array_foreach(e->arr, i, x)
		if (!strcmp(json_string_value(json_object_get(x, "field")) ?: "", field))
			return true;
	return false;
}

/* The agent's errors, renamed for the tool (argv[0] is command's when a command was given). */
static void merge_errors(struct bm_req_errs *e, json_t *agent_errs, bool shell)
{
	const char *f, *msg;
	char field[BM_REQ_FIELD_MAX + 32];
	size_t i, k, n;
	json_t *x;

	json_array_foreach(agent_errs, i, x) {
		f = json_string_value(json_object_get(x, "field"));
		msg = json_string_value(json_object_get(x, "error"));
		snprintf(field, sizeof(field), "%s", f ? f : "");
		for (k = 0; k < BM_ARRAY_SIZE(names); k++) {
			n = strlen(names[k].agent);
			if (!strncmp(field, names[k].agent, n) &&
			    (!field[n] || field[n] == '[' || field[n] == '.')) {
				snprintf(field, sizeof(field), "%s%s", names[k].tool, (f ? f : "") + n);
				break;
			}
		}
		if (shell && !strncmp(field, "argv", 4))
			snprintf(field, sizeof(field), "command");
		/* a field our own checks named already (argv missing) is said once */
		if (!said(e, field))
			bm_req_error(e, field, "%s", msg ? msg : "invalid");
	}
}

static bool known(const char *key, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(key, *list))
			return true;
	return false;
}

/*
 * The tool kind of a shell line (`sh -c "pytest -x"`): its first word's
 * basename, so that the agent's backoff, rules and /metrics tell one
 * command from another rather than lump every line under "sh". "" (the
 * agent then says "sh") where the first word is no plain command name.
 */
static void shell_tool(char *const *argv, char *out, size_t len)
{
	const char *line, *w, *slash;
	size_t n;

	out[0] = '\0';
	if (!argv[0] || !argv[1] || !argv[2] || strcmp(argv[1], "-c") ||
	    (strcmp(argv[0], "/bin/sh") && strcmp(argv[0], "sh") && strcmp(argv[0], "/bin/bash") &&
	     strcmp(argv[0], "bash")))
		return;
	line = argv[2] + strspn(argv[2], " \t\n");
	n = strcspn(line, " \t\n;&|()<>");
	for (w = slash = line; w < line + n; w++)
		if (*w == '/')
			slash = w + 1;
	n -= (size_t)(slash - line);
	if (n && n < len && strspn(slash, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+-") >= n &&
	    strncmp(slash, ".", n) && strncmp(slash, "..", n > 2 ? n : 2))
		snprintf(out, len, "%.*s", (int)n, slash);
}

/*
 * expectations as the agent's expect (memory is memory_bytes there): the
 * agent reads and checks them, and reports declared against observed in
 * the outcome, for this server as for every other client.
 */
static void expect_form(struct bm_req_errs *e, json_t *v, json_t *a)
{
	const char *key;
	json_t *x, *form;

	if (!v)
		return;
	if (!json_is_object(v)) {
		bm_req_error(e, "expectations", "must be an object: {wall_seconds, memory, pids, cpu_cores, "
			     "net_tx_bytes, net_tx_bytes_per_s}");
		return;
	}
	bm_req_unknown_keys(e, "expectations.", v, expect_keys);
	form = json_object();
	json_object_foreach(v, key, x)
		if (known(key, expect_keys))
			json_object_set(form, strcmp(key, "memory") ? key : "memory_bytes", x);
	json_object_set_new(a, "expect", form);
}

/* The agent's form of the call: a launch request, so that argv, env and cwd are checked too. */
static json_t *agent_form(struct bm_req_errs *e, const json_t *args, const char *id, bool *shell)
{
	json_t *a = json_object(), *sb = json_object(), *lim = json_object_get(args, "limits"), *v;
	const char *cmd = json_string_value(json_object_get(args, "command"));
	static const char *const copy[] = { "argv", "env", "cwd", "intent", "traceparent" };
	size_t k;

	*shell = false;
	json_object_set_new(a, "id", json_string(id));
	for (k = 0; k < BM_ARRAY_SIZE(copy); k++)
		if ((v = json_object_get(args, copy[k])))
			json_object_set(a, copy[k], v);
	if (json_object_get(args, "command") && json_object_get(args, "argv"))
		bm_req_error(e, "command", "give argv or command, not both");
	else if (json_object_get(args, "command") && !cmd)
		bm_req_error(e, "command", "must be a string (a shell line)");
	else if (cmd) {
		*shell = true;
		json_object_set_new(a, "argv", json_pack("[s, s, s]", "/bin/sh", "-c", cmd));
	} else if (!json_object_get(args, "argv"))
		bm_req_error(e, "argv", "required: the command as argv, or a shell line as command");
	if (lim && !json_is_object(lim)) {
		bm_req_error(e, "limits", "must be an object: {cpu, memory, pids}");
	} else if (lim) {
		bm_req_unknown_keys(e, "limits.", lim, limit_keys);
		if ((v = json_object_get(lim, "cpu")))
			json_object_set(sb, "cpu_limit", v);
		if ((v = json_object_get(lim, "memory")))
			json_object_set(sb, "memory_limit", v);
		if ((v = json_object_get(lim, "pids")))
			json_object_set(sb, "pids_limit", v);
	}
	if ((v = json_object_get(args, "timeout_seconds")))
		json_object_set(sb, "timeout_seconds", v);
	if ((v = json_object_get(args, "network_policy")))
		json_object_set(sb, "network_policy", v);
	if ((v = json_object_get(args, "allowed_egress_cidrs")))
		json_object_set(sb, "allowed_egress_cidrs", v);
	json_object_set_new(a, "sandbox", sb);
	expect_form(e, json_object_get(args, "expectations"), a);
	return a;
}

/* Our environment with the call's variables over it. */
static char **merge_env(char *const *over)
{
	size_t n = 0, m = 0, i, j, k;
	char **envp;

	while (environ[n])
		n++;
	while (over && over[m])
		m++;
	envp = calloc(n + m + 1, sizeof(*envp));
	for (i = 0, k = 0; envp && i < n; i++) {
		size_t klen = strcspn(environ[i], "=");

		for (j = 0; j < m; j++)
			if (!strncmp(over[j], environ[i], klen + 1))
				break;
		if (j == m && !(envp[k++] = strdup(environ[i])))
			goto fail;
	}
	for (j = 0; envp && j < m; j++)
		if (!(envp[k++] = strdup(over[j])))
			goto fail;
	return envp;
fail:
	while (k--)
		free(envp[k]);
	free(envp);
	return NULL;
}

static void own_fields(struct bm_req_errs *e, const json_t *args, const struct bm_mcp_cfg *cfg,
		       struct bm_mcp_req *r)
{
	json_t *v = json_object_get(args, "max_output_bytes");
	const char *cwd = json_string_value(json_object_get(args, "cwd"));
	struct stat st;

	r->max_output = cfg->max_output;
	if (v && (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > BM_MCP_OUTPUT_MAX))
		bm_req_error(e, "max_output_bytes", "must be an integer 0..%d", BM_MCP_OUTPUT_MAX);
	else if (v)
		r->max_output = (size_t)json_integer_value(v);
	if (cwd && cwd[0] == '/' && (stat(cwd, &st) || !S_ISDIR(st.st_mode)))
		bm_req_error(e, "cwd", "%.*s: no such directory", bm_req_quote_len(cwd, BM_REQ_QUOTE_MAX), cwd);
	v = json_object_get(args, "id");
	if (v && !json_is_string(v))
		bm_req_error(e, "id", "must be a string");
}

/* TRACEPARENT=tp into envp (owned strings), in place of any there: 0 or -ENOMEM. */
static int env_trace(char ***envp, const char *tp)
{
	size_t n, k = strlen(BM_TRACE_ENV "=");
	char *kv, **v;

	if (!*envp || asprintf(&kv, BM_TRACE_ENV "=%s", tp) < 0)
		return -ENOMEM;
	for (n = 0; (*envp)[n]; n++) {
		if (!strncmp((*envp)[n], kv, k)) {
			free((*envp)[n]);
			(*envp)[n] = kv;
			return 0;
		}
	}
	v = realloc(*envp, (n + 2) * sizeof(*v));
	if (!v) {
		free(kv);
		return -ENOMEM;
	}
	v[n] = kv;
	v[n + 1] = NULL;
	*envp = v;
	return 0;
}

/* What the agent's parser made of it, into r. */
static int take(struct bm_mcp_req *r, struct bm_request *q)
{
	json_t *canon = bm_request_json(q);
	const struct bm_sandbox *sb = &q->sandbox;

	snprintf(r->id, sizeof(r->id), "%s", q->id);
	r->expect = q->expect;
	snprintf(r->traceparent, sizeof(r->traceparent), "%s", q->traceparent);
	r->argv = q->argv;
	q->argv = NULL;
	shell_tool(r->argv, r->tool, sizeof(r->tool));
	r->envp = merge_env(q->env);
	r->cwd = q->cwd ? strdup(q->cwd) : NULL;
	r->intent = strdup(q->intent ? q->intent : "");
	r->sandbox = json_incref(json_object_get(canon, "sandbox"));
	json_decref(canon);
	r->limits.cpu_milli = sb->cpu_limit_milli;
	r->limits.memory_bytes = sb->memory_limit;
	r->limits.pids = sb->pids_limit;
	r->limits.timeout_ns = sb->timeout_ns;
	r->netns = sb->network_policy == BM_NET_NONE;
	r->egress_filter = sb->network_policy == BM_NET_EGRESS_RESTRICTED ||
			   sb->network_policy == BM_NET_EGRESS_ALLOW_LIST;
	/* the command's own spans join the caller's trace, through the agent or not */
	if (r->traceparent[0] && env_trace(&r->envp, r->traceparent))
		return -ENOMEM;
	return r->envp && r->intent && r->sandbox && (!q->cwd || r->cwd) ? 0 : -ENOMEM;
}

int bm_mcp_req_parse(const json_t *args, const struct bm_mcp_cfg *cfg, struct bm_mcp_req *r, json_t **errs)
{
	static unsigned int seq;
	struct bm_req_errs e = { .arr = json_array() };
	struct bm_request q;
	json_t *form = NULL, *agent_errs = NULL, *empty = json_object();
	const char *id = json_string_value(json_object_get(args, "id"));
	char gen[BM_NAME_MAX + 1], *text = NULL;
	bool shell = false;
	int err;

	*errs = NULL;
	memset(r, 0, sizeof(*r));
	if (!e.arr)
		return -ENOMEM;
	/* unique across restarts too: the agent never reuses an id */
	snprintf(gen, sizeof(gen), "mcp-%llx-%d-%u", (unsigned long long)(bm_wall_ns() / BM_NSEC_PER_MSEC),
		 (int)getpid(), __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	if (args && !json_is_object(args)) {
		bm_req_error(&e, "", "arguments must be an object");
	} else {
		args = args ? args : empty;
		bm_req_unknown_keys(&e, "", (json_t *)args, top_keys);
		own_fields(&e, args, cfg, r);
		form = agent_form(&e, args, id ? id : gen, &shell);
		text = form ? json_dumps(form, JSON_COMPACT) : NULL;
		memset(&q, 0, sizeof(q));
		err = text ? bm_request_parse(text, strlen(text), &q, &agent_errs) : -ENOMEM;
		if (err == -EINVAL)
			merge_errors(&e, agent_errs, shell);
		else if (err)
			e.oom = true;
		else if (!e.n && take(r, &q))
			e.oom = true;
		bm_request_free(&q);
	}
	free(text);
	json_decref(form);
	json_decref(agent_errs);
	json_decref(empty);
	err = e.oom ? -ENOMEM : e.n ? -EINVAL : 0;
	if (err)
		bm_mcp_req_free(r);
	if (err == -EINVAL)
		*errs = e.arr;
	else
		json_decref(e.arr);
	return err;
}

const char *bm_mcp_agent_socket(const struct bm_mcp_cfg *cfg)
{
	static __thread char sock[PATH_MAX];
	const char *env = getenv("BURSTMETER_SOCKET");
	struct stat st;

	if (cfg->standalone)
		return NULL;
	snprintf(sock, sizeof(sock), "%s", cfg->socket ? cfg->socket : env && *env ? env : BM_AGENT_SOCKET);
	return !stat(sock, &st) && S_ISSOCK(st.st_mode) ? sock : NULL;
}

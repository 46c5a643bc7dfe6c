// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/config.h"
#include "base/common.h"
#include "base/parse.h"
#include "cli/agent_cmds.h"
#include "cli/client.h"
#include "meter/series.h"
#include "meter/window.h"
#include "views/timeline.h"

#define CALL_TIMEOUT_MS 10000

static int usage_error(const char *cmd, const char *what)
{
	bm_err("%s (see 'burstmeter %s --help')", what, cmd);
	return BM_EXIT_USAGE;
}

int bm_cmd_agent_exec(int argc, char **argv)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - sizeof("/" BM_AGENT_BIN));
	char *slash;

	if (n <= 0 || !(path[n] = '\0', slash = strrchr(path, '/'))) {
		bm_err("agent: cannot tell where this burstmeter is (/proc/self/exe): %s", strerror(errno));
		return 1;
	}
	strcpy(slash + 1, BM_AGENT_BIN);
	argv[0] = path;
	execv(path, argv);
	bm_err("agent: cannot run %s, which belongs beside burstmeter: %s", path, strerror(errno));
	return 1;
	(void)argc;
}

/* --socket for the client commands, and --json; the rest is the command's. */
struct client_opts {
	const char *socket;
	bool json;
};

static int client_args(const char *cmd, int argc, char **argv, struct client_opts *o, const char *usage,
		       const struct option *extra, int (*on_extra)(int c, const char *arg, void *ctx), void *ctx)
{
	struct option opts[16] = {
		{ "socket", required_argument, NULL, 'S' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
	};
	int c, n = 3;

	while (extra && extra->name && n < 15)
		opts[n++] = *extra++;
	o->socket = BM_AGENT_SOCKET;
	o->json = false;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+jh", opts, NULL)) != -1) {
		if (c == 'h')
			return fputs(usage, stdout), 0;
		if (c == 'S')
			o->socket = optarg;
		else if (c == 'j')
			o->json = true;
		else if (c == '?' || !on_extra || on_extra(c, optarg, ctx))
			return usage_error(cmd, c == '?' ? "unknown or incomplete option" : "invalid option value");
	}
	return -1;
}

static int call(const struct client_opts *o, const char *method, const char *path, json_t **out)
{
	int st = bm_client_call(o->socket, method, path, NULL, out, CALL_TIMEOUT_MS);

	if (st < 0)
		bm_err("cannot reach the agent at %s: %s", o->socket, strerror(-st));
	else if (st >= 400)
		bm_err("%s %s: %d %s", method, path, st,
		       *out && json_string_value(json_object_get(*out, "error")) ?
		       json_string_value(json_object_get(*out, "error")) : "");
	return st < 0 || st >= 400 ? 1 : 0;
}

static void print_json(const json_t *j)
{
	char *t = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9));

	if (t)
		printf("%s\n", t);
	free(t);
}

struct effects_opts {
	const char *state;
	uint64_t limit;
};

static int effects_extra(int c, const char *arg, void *ctx)
{
	struct effects_opts *e = ctx;

	if (c == 's')
		e->state = arg;
	else if (c == 'l')
		return bm_parse_u64(arg, 1, 10000, &e->limit);
	return 0;
}

int bm_cmd_effects(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "state", required_argument, NULL, 's' }, { "limit", required_argument, NULL, 'l' }, { NULL, 0, NULL, 0 },
	};
	struct effects_opts eo = { NULL, 50 };
	struct client_opts o;
	char path[256];
	json_t *out = NULL, *e;
	size_t i;
	int ret;

	ret = client_args("effects", argc, argv, &o,
			  "Usage: burstmeter effects [--state STATE] [--limit N] [--json] [--socket PATH]\n"
			  "List this tenant's effects, newest first.\n", extra, effects_extra, &eo);
	if (ret >= 0)
		return ret;
	snprintf(path, sizeof(path), "/v1/effects?limit=%llu%s%s", (unsigned long long)eo.limit,
		 eo.state ? "&state=" : "", eo.state ? eo.state : "");
	ret = call(&o, "GET", path, &out);
	if (!ret && o.json)
		print_json(out);
	else if (!ret) {
		printf("%-24s %-12s %-18s %-8s %s\n", "ID", "TENANT", "STATE", "PRIO", "TOOL");
		json_array_foreach(json_object_get(out, "effects"), i, e)
			printf("%-24s %-12s %-18s %-8lld %s\n", json_string_value(json_object_get(e, "id")),
			       json_string_value(json_object_get(e, "tenant")), json_string_value(json_object_get(e, "state")),
			       (long long)json_integer_value(json_object_get(e, "priority")),
			       json_string_value(json_object_get(e, "tool")));
	}
	json_decref(out);
	return ret;
}

static int show_extra(int c, const char *arg, void *ctx)
{
	*(const char **)ctx = arg;
	return c != 'g';
}

/* The stored timeline (outcome.timeline) back into a series, and the SVG. */
static int write_svg(const json_t *eff, const char *file)
{
	const json_t *o = json_object_get(eff, "outcome"), *t = json_object_get(o, "timeline"), *a, *x;
	struct bm_timeline_mark marks[64];
	struct bm_timeline tl = { 0 };
	struct bm_series s = { 0 };
	char title[512], labels[64][96];
	double v[BM_DIM__MAX];
	size_t i, n, m = 0;
	FILE *f;
	int d, err;

	if (!t)
		return bm_err("the effect has no timeline (still running, or it never ran)"), 1;
	s.window_ns = (uint64_t)(json_number_value(json_object_get(t, "window_ms")) * 1e6 *
				 (double)json_integer_value(json_object_get(t, "step_windows")));
	n = json_array_size(json_object_get(t, bm_window_dim_name(BM_DIM_CPU)));
	for (i = 0; i < n; i++) {
		for (d = 0; d < BM_DIM__MAX; d++)
			v[d] = json_number_value(json_array_get(json_object_get(t, bm_window_dim_name(d)), i));
		if (bm_series_push(&s, v))
			break;
	}
	json_array_foreach(json_object_get(o, "actions"), i, x) {
		if (m >= BM_ARRAY_SIZE(marks))
			break;
		snprintf(labels[m], sizeof(labels[m]), "%s (%s)", json_string_value(json_object_get(x, "action")),
			 json_string_value(json_object_get(x, "reason")));
		marks[m].at_ms = json_number_value(json_object_get(x, "at_ms"));
		marks[m].label = labels[m];
		m++;
	}
	a = json_object_get(o, "limits");
	tl.ceiling[BM_DIM_CPU] = json_number_value(json_object_get(a, "cpu_cores"));
	tl.ceiling[BM_DIM_MEM] = json_number_value(json_object_get(a, "memory_bytes"));
	tl.ceiling[BM_DIM_PIDS] = json_number_value(json_object_get(a, "pids"));
	snprintf(title, sizeof(title), "effect %s: %s", json_string_value(json_object_get(eff, "id")),
		 json_string_value(json_object_get(o, "intent")) ?: "");
	tl.title = title;
	tl.s = &s;
	tl.marks = marks;
	tl.n_marks = m;
	f = fopen(file, "we");
	err = f ? bm_timeline_svg(f, &tl) : -errno;
	if (f && fclose(f) && !err)
		err = -errno;
	bm_series_free(&s);
	if (err)
		bm_err("failed to write %s: %s", file, strerror(-err));
	return err ? 1 : 0;
}

int bm_cmd_show(int argc, char **argv)
{
	static const struct option extra[] = { { "svg", required_argument, NULL, 'g' }, { NULL, 0, NULL, 0 } };
	const char *svg = NULL;
	struct client_opts o;
	json_t *out = NULL;
	char path[128];
	int ret;

	ret = client_args("show", argc, argv, &o,
			  "Usage: burstmeter show ID [--json] [--svg FILE] [--socket PATH]\n"
			  "An effect's state, transitions and outcome; --svg draws its timeline.\n", extra, show_extra, &svg);
	if (ret >= 0)
		return ret;
	if (optind != argc - 1 || !bm_valid_name(argv[optind]))
		return usage_error("show", "expected one effect id");
	snprintf(path, sizeof(path), "/v1/effects/%s", argv[optind]);
	ret = call(&o, "GET", path, &out);
	if (!ret && svg)
		ret = write_svg(out, svg);
	if (!ret && (o.json || !svg))
		print_json(out);
	json_decref(out);
	return ret;
}

int bm_cmd_cancel(int argc, char **argv)
{
	struct client_opts o;
	json_t *out = NULL;
	char path[128];
	int ret;

	ret = client_args("cancel", argc, argv, &o,
			  "Usage: burstmeter cancel ID [--socket PATH]\n"
			  "Cancel an effect: SIGTERM, then kill after the grace.\n", NULL, NULL, NULL);
	if (ret >= 0)
		return ret;
	if (optind != argc - 1 || !bm_valid_name(argv[optind]))
		return usage_error("cancel", "expected one effect id");
	snprintf(path, sizeof(path), "/v1/effects/%s/cancel", argv[optind]);
	ret = call(&o, "POST", path, &out);
	if (!ret && o.json)
		print_json(out);
	json_decref(out);
	return ret;
}

/* Probes give a command a few seconds; answer within them even when the agent is stuck. */
#define HEALTH_TIMEOUT_MS 4000

int bm_cmd_health(int argc, char **argv)
{
	struct client_opts o;
	json_t *out = NULL;
	const char *status;
	int st, ret;

	ret = client_args("health", argc, argv, &o,
			  "Usage: burstmeter health [--json] [--socket PATH]\n"
			  "Ask the agent whether it is healthy (GET /v1/healthz): exit 0 if it is, 1 if not,\n"
			  "with one line saying why. For liveness and readiness probes.\n"
			  "\n"
			  "  --socket PATH        the agent's API socket (default " BM_AGENT_SOCKET ")\n"
			  "  --json               print the agent's answer as JSON\n"
			  "\n"
			  "EXAMPLES\n"
			  "  burstmeter health\n"
			  "  burstmeter health --socket /run/burstmeter/api.sock --json\n", NULL, NULL, NULL);
	if (ret >= 0)
		return ret;
	if (optind != argc)
		return usage_error("health", "unexpected argument");
	st = bm_client_call(o.socket, "GET", "/v1/healthz", NULL, &out, HEALTH_TIMEOUT_MS);
	status = json_string_value(json_object_get(out, "status"));
	if (st < 0)
		bm_err("unhealthy: cannot reach the agent at %s: %s", o.socket, strerror(-st));
	else if (st != 200 || !status || strcmp(status, "ok"))
		bm_err("unhealthy: the agent at %s answered %d%s%s", o.socket, st, status ? ", status " : "",
		       status ? status : "");
	else if (o.json)
		print_json(out);
	else
		printf("healthy: %lld running, %lld queued%s\n",
		       (long long)json_integer_value(json_object_get(out, "running")),
		       (long long)json_integer_value(json_object_get(out, "queued")),
		       json_is_true(json_object_get(out, "adopted")) ? ", meter adopted from pins" : "");
	ret = st == 200 && status && !strcmp(status, "ok") ? 0 : 1;
	json_decref(out);
	return ret;
}

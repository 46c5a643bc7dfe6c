// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/config.h"
#include "base/common.h"
#include "base/parse.h"
#include "cli/advise.h"
#include "cli/advise_cmd.h"

static const char usage[] =
"Usage: burstmeter advise [--tool KIND] [--tenant T] [--state-dir DIR] [--json]\n"
"What each tool kind used, from the agent's store of outcomes, and the ceilings and\n"
"requests to give it: percentiles of every peak and of the duration, how often each\n"
"ceiling was hit, and recommendations as run flags, a request's sandbox and a pod's\n"
"resources, each with the number of runs behind it.\n"
"\n"
"  --tool KIND          only this tool kind (a command's basename, e.g. pytest)\n"
"  --tenant T           only this tenant's effects (default: every tenant's)\n"
"  --state-dir DIR      the agent's state directory (default " BM_AGENT_STATE_DIR ")\n"
"  --json               the report as one JSON object\n"
"\n"
"Limits are the p99 of the runs' peaks (the timeout: of their wall time) x 1.25,\n"
"rounded up; requests the p95 of their averages. Where 1% of the runs or more hit a\n"
"ceiling, what they needed above it is unknown: no limit is recommended for it.\n"
"I/O (--io-read-bps, --io-write-bps, --io-iops; the sandbox's io_*) and /tmp's size\n"
"(--tmp-size, max_ephemeral_storage) are advised only for runs that did any.\n"
"\n"
"EXAMPLES\n"
"  burstmeter advise\n"
"  burstmeter advise --tool pytest --tenant acme\n"
"  burstmeter advise --json | jq '.tools[0].recommend.sandbox'\n";

/* Bytes in binary units, one decimal: "512", "12.0Ki", "3.5Mi", "1.2Gi". */
static const char *bytes(double v, char *buf, size_t len)
{
	static const char *const units[] = { "Ki", "Mi", "Gi", "Ti" };
	int u = -1;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%.0f", v);
	else
		snprintf(buf, len, "%.1f%s", v, units[u]);
	return buf;
}

static const char *fig_text(const char *key, const json_t *v, char *buf, size_t len)
{
	double x = json_number_value(v);

	if (json_is_null(v))
		snprintf(buf, len, "-");
	else if (strstr(key, "bytes"))
		bytes(x, buf, len);
	else if (!strcmp(key, "pids") || !strcmp(key, "io_ops_per_s"))
		snprintf(buf, len, "%.0f", x);
	else
		snprintf(buf, len, "%.2f", x);
	return buf;
}

static void print_dims(FILE *f, const json_t *dims)
{
	char a[4][32], c[32];
	const char *key;
	json_t *d;

	fprintf(f, "  %-23s %6s %9s %9s %9s %9s  %s\n", "peak", "runs", "p50", "p95", "p99", "max",
		"ceiling hits");
	json_object_foreach((json_t *)dims, key, d) {
		json_t *hits = json_object_get(d, "ceiling_hits"), *at = json_object_get(d, "ceiling");

		fprintf(f, "  %-23s %6lld %9s %9s %9s %9s  %lld", key,
			(long long)json_integer_value(json_object_get(d, "runs")),
			fig_text(key, json_object_get(d, "p50"), a[0], sizeof(a[0])),
			fig_text(key, json_object_get(d, "p95"), a[1], sizeof(a[1])),
			fig_text(key, json_object_get(d, "p99"), a[2], sizeof(a[2])),
			fig_text(key, json_object_get(d, "max"), a[3], sizeof(a[3])),
			(long long)json_integer_value(hits));
		if (json_is_number(at))
			fprintf(f, " (at %s)", fig_text(key, at, c, sizeof(c)));
		fputc('\n', f);
	}
}

static void print_recommend(FILE *f, const json_t *r)
{
	const json_t *flags = json_object_get(r, "run_flags"), *pod = json_object_get(r, "pod"), *x;
	char *sb = json_dumps(json_object_get(r, "sandbox"), JSON_COMPACT);
	char *req = json_dumps(json_object_get(pod, "requests"), JSON_COMPACT);
	char *lim = json_dumps(json_object_get(pod, "limits"), JSON_COMPACT);
	size_t i;

	fprintf(f, "  recommended, from %lld runs (limits p99 x 1.25, requests p95 of the averages):\n",
		(long long)json_integer_value(json_object_get(r, "runs")));
	fprintf(f, "    run       ");
	json_array_foreach(flags, i, x)
		fprintf(f, "%s%s", i ? " " : "", json_string_value(x));
	fprintf(f, "%s\n", json_array_size(flags) ? "" : "(none: see the notes)");
	fprintf(f, "    sandbox   %s\n", sb ? sb : "{}");
	fprintf(f, "    pod       requests %s, limits %s (burstmeter podspec reads them from "
		"sandbox.cpu_request, cpu_limit, memory_request, memory_limit; its /tmp's sizeLimit from "
		"max_ephemeral_storage)\n", req ? req : "{}", lim ? lim : "{}");
	json_array_foreach(json_object_get(r, "notes"), i, x)
		fprintf(f, "    note      %s\n", json_string_value(x));
	free(sb);
	free(req);
	free(lim);
}

void bm_advise_print(FILE *f, const json_t *report)
{
	const json_t *tools = json_object_get(report, "tools"), *t, *n;
	const char *reason;
	size_t i;
	bool first;

	if (!json_array_size(tools))
		fprintf(f, "no ended effects%s%s%s%s\n",
			json_is_string(json_object_get(report, "tool")) ? " of tool " : "",
			json_string_value(json_object_get(report, "tool")) ?: "",
			json_is_string(json_object_get(report, "tenant")) ? " of tenant " : "",
			json_string_value(json_object_get(report, "tenant")) ?: "");
	json_array_foreach(tools, i, t) {
		fprintf(f, "%s%s: %lld runs (", i ? "\n" : "", json_string_value(json_object_get(t, "tool")),
			(long long)json_integer_value(json_object_get(t, "runs")));
		first = true;
		json_object_foreach((json_t *)json_object_get(t, "reasons"), reason, n) {
			fprintf(f, "%s%s %lld", first ? "" : ", ", reason, (long long)json_integer_value(n));
			first = false;
		}
		fprintf(f, ")\n");
		print_dims(f, json_object_get(t, "dims"));
		print_recommend(f, json_object_get(t, "recommend"));
	}
}

static int bad(const char *what, const char *v)
{
	bm_err("invalid %s '%s' (see 'burstmeter advise --help')", what, v);
	return BM_EXIT_USAGE;
}

int bm_cmd_advise(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tool", required_argument, NULL, 't' }, { "tenant", required_argument, NULL, 'T' },
		{ "state-dir", required_argument, NULL, 'd' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	const char *tool = NULL, *tenant = NULL, *dir = BM_AGENT_STATE_DIR;
	char db[PATH_MAX + 16], err[512];
	struct bm_store *st;
	json_t *rep;
	bool json = false;
	int c, ret = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h')
			return fputs(usage, stdout), 0;
		if (c == 'j')
			json = true;
		else if (c == 't' && (!*optarg || strlen(optarg) > 255 || strchr(optarg, '/')))
			return bad("--tool", optarg);
		else if (c == 't')
			tool = optarg;
		else if (c == 'T' && !bm_valid_name(optarg))
			return bad("--tenant", optarg);
		else if (c == 'T')
			tenant = optarg;
		else if (c == 'd' && (!*optarg || strlen(optarg) >= PATH_MAX))
			return bad("--state-dir", optarg);
		else if (c == 'd')
			dir = optarg;
		else
			return bm_err("unknown or incomplete option (see 'burstmeter advise --help')"),
			       BM_EXIT_USAGE;
	}
	if (optind < argc)
		return bad("argument", argv[optind]);
	/* a reader: never create a store where there is none */
	snprintf(db, sizeof(db), "%s/state.db", dir);
	if (access(db, F_OK))
		return bm_err_errno(-errno, "failed to read %s (is --state-dir the agent's?)", db), 1;
	st = bm_store__open(dir, err, sizeof(err));
	if (!st)
		return bm_err("failed to open the state store: %s", err[0] ? err : strerror(errno)), 1;
	rep = bm_advise_report(st, tenant, tool);
	if (!rep) {
		ret = 1;
		bm_err("failed to read the outcomes in %s: %s", db, strerror(errno));
	} else if (json) {
		ret = json_dumpf(rep, stdout, JSON_COMPACT | JSON_REAL_PRECISION(6)) || puts("") < 0;
	} else {
		bm_advise_print(stdout, rep);
	}
	json_decref(rep);
	bm_store__free(st);
	return ret;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A request's declared intent, tool and trace context. Declarations are
 * quantities read by the sandbox's own reader (bm_req_quantity()), so that
 * "256Mi", 268435456 and "0.25Gi" cannot disagree, and each is held against
 * the request's own limit here; the policy's levels are the agent's to hold
 * it against (agent/intent.c), once it knows which policy applies.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/request_intent.h"
#include "agent/request_sandbox.h"
#include "base/common.h"
#include "base/parse.h"
#include "effect/trace.h"

#define TIB (1024ULL * 1024 * 1024 * 1024)
#define WEEK_NS (604800ULL * BM_NSEC_PER_SEC)

static const struct {
	const char *key;
	bm_req_parse_fn parse;
	uint64_t min, max;
	const char *expect;
} decls[BM_X__MAX] = {
	[BM_X_CPU] = { "cpu_cores", bm_parse_cores, 1, 1024000,
		       "peak cores 0.001..1024 (e.g. 1.5 or \"1500m\")" },
	[BM_X_MEM] = { "memory_bytes", bm_parse_size, 1, 64 * TIB,
		       "peak resident bytes (e.g. 268435456 or \"256Mi\")" },
	[BM_X_PIDS] = { "pids", bm_parse_u64, 1, 4194304, "peak tasks 1..4194304" },
	[BM_X_NET_RATE] = { "net_tx_bytes_per_s", bm_parse_size, 0, 1ULL << 50,
			    "peak bytes sent per second (e.g. 1048576 or \"50M\")" },
	[BM_X_NET_BYTES] = { "net_tx_bytes", bm_parse_size, 0, 1ULL << 60,
			     "bytes sent in all (e.g. 0 or \"10M\")" },
	[BM_X_WALL] = { "wall_seconds", bm_parse_duration_ns, BM_NSEC_PER_MSEC, WEEK_NS,
			"seconds 0.001..604800 (e.g. 30 or \"2m\")" },
};

/* A declaration above the request's own limit: it could never be had. */
static void over_limit(struct bm_req_errs *e, const struct bm_expect *x, enum bm_xdim d,
		       uint64_t limit, const char *what, double unit, const char *units)
{
	char field[64], want[32], have[32];

	if (!(x->set & BM_X_BIT(d)) || !limit || x->v[d] <= limit)
		return;
	snprintf(field, sizeof(field), "expect.%s", decls[d].key);
	/* bytes and tasks as they are, cores and seconds in decimals */
	if (unit == 1) {
		snprintf(want, sizeof(want), "%llu", (unsigned long long)x->v[d]);
		snprintf(have, sizeof(have), "%llu", (unsigned long long)limit);
	} else {
		snprintf(want, sizeof(want), "%.9g", (double)x->v[d] / unit);
		snprintf(have, sizeof(have), "%.9g", (double)limit / unit);
	}
	bm_req_error(e, field, "declared %s %s, above sandbox.%s %s %s: the call could never have "
		     "it", want, units, what, have, units);
}

void bm_expect_parse(struct bm_req_errs *e, json_t *v, const struct bm_sandbox *sb,
		     struct bm_expect *x)
{
	static const char *const keys[] = { "cpu_cores", "memory_bytes", "pids",
					    "net_tx_bytes_per_s", "net_tx_bytes", "wall_seconds",
					    NULL };
	char field[64];
	unsigned int before;
	json_t *q;
	int d;

	memset(x, 0, sizeof(*x));
	if (!v)
		return;
	if (!json_is_object(v)) {
		bm_req_error(e, "expect", "must be an object: {cpu_cores, memory_bytes, pids, "
			     "net_tx_bytes_per_s, net_tx_bytes, wall_seconds}");
		return;
	}
	bm_req_unknown_keys(e, "expect.", v, keys);
	for (d = 0; d < BM_X__MAX; d++) {
		q = json_object_get(v, decls[d].key);
		if (!q)
			continue;
		snprintf(field, sizeof(field), "expect.%s", decls[d].key);
		before = e->n;
		bm_req_quantity(e, field, q, decls[d].parse, decls[d].min, decls[d].max,
				decls[d].expect, &x->v[d]);
		if (e->n == before)
			x->set |= BM_X_BIT(d);
	}
	over_limit(e, x, BM_X_CPU, sb->cpu_limit_milli, "cpu_limit", 1000, "cores");
	over_limit(e, x, BM_X_MEM, sb->memory_limit, "memory_limit", 1, "bytes");
	over_limit(e, x, BM_X_PIDS, sb->pids_limit, "pids_limit", 1, "tasks");
	over_limit(e, x, BM_X_WALL, sb->timeout_ns, "timeout", 1e9, "s");
}

/* ns as exact decimal seconds, trailing zeros left out: "1.5", "600", "0.000000001" */
static json_t *seconds_json(uint64_t ns)
{
	char buf[48];
	int n = snprintf(buf, sizeof(buf), "%llu.%09llu", (unsigned long long)(ns / BM_NSEC_PER_SEC),
			 (unsigned long long)(ns % BM_NSEC_PER_SEC));

	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
	return json_string(buf);
}

json_t *bm_expect_request_json(const struct bm_expect *x)
{
	json_t *o = json_object(), *v;
	char milli[32];
	int d, bad = !o;

	for (d = 0; d < BM_X__MAX; d++) {
		if (!(x->set & BM_X_BIT(d)))
			continue;
		if (d == BM_X_CPU) {
			snprintf(milli, sizeof(milli), "%llum", (unsigned long long)x->v[d]);
			v = json_string(milli);
		} else if (d == BM_X_WALL) {
			v = seconds_json(x->v[d]);
		} else {
			v = json_integer((json_int_t)x->v[d]);
		}
		bad |= json_object_set_new(o, decls[d].key, v);
	}
	if (bad) {
		json_decref(o);
		errno = ENOMEM;
		return NULL;
	}
	return o;
}

void bm_req_tool(struct bm_req_errs *e, json_t *v, char out[BM_REQ_TOOL_MAX + 1])
{
	const char *s = bm_req_string(e, "tool", v, BM_REQ_TOOL_MAX);
	const unsigned char *p;

	if (!s)
		return;
	for (p = (const unsigned char *)s; *p; p++)
		if (*p <= ' ' || *p == 0x7f || *p == '/')
			break;
	if (!*s || *p || !strcmp(s, ".") || !strcmp(s, ".."))
		bm_req_error(e, "tool", "\"%.*s\": expected a tool kind (a command's basename, e.g. "
			     "\"pytest\"): 1-%d bytes without '/', white space or control characters",
			     bm_req_quote_len(s, BM_REQ_QUOTE_MAX), s, BM_REQ_TOOL_MAX);
	else
		strcpy(out, s);		/* at most BM_REQ_TOOL_MAX bytes */
}

void bm_req_traceparent(struct bm_req_errs *e, const char *field, json_t *v, char *out)
{
	const char *s = bm_req_string(e, field, v, BM_TRACEPARENT_MAX), *why;

	if (!s)
		return;
	if (bm_traceparent_check(s, &why))
		bm_req_error(e, field, "invalid traceparent \"%.*s\": %s",
			     bm_req_quote_len(s, BM_REQ_QUOTE_MAX), s, why);
	else
		strcpy(out, s);		/* at most BM_TRACEPARENT_MAX bytes */
}

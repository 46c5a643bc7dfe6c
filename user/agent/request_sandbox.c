// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The "sandbox" member of an execution request: CPU, memory, timeout and
 * storage quantities, the network policy with its egress CIDRs, and the
 * hardening flags. A quantity may be a JSON number or a string with units;
 * both forms go through the same parse.h function, so "0.5", 0.5 and "500m"
 * cannot disagree. Its strings are Kubernetes quantities (bm_parse_k8s_*()),
 * as in the pod spec `burstmeter podspec` writes from them: "2G" is 2*10^9
 * bytes, "2Gi" 2*2^30, "1e9" 10^9.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "agent/request_sandbox.h"
#include "base/common.h"
#include "base/parse.h"

#define MIB (1024ULL * 1024)
#define TIB (MIB * MIB)
#define CPU_MAX_MILLI 1024000ULL	/* 1024 cores */
#define TIMEOUT_MAX_NS (604800ULL * BM_NSEC_PER_SEC)	/* one week */

static const char *const sandbox_keys[] = {
	"cpu_request", "cpu_limit", "memory_request", "memory_limit", "pids_limit", "timeout_seconds",
	"timeout_ns", "max_ephemeral_storage", "network_policy", "allowed_egress_cidrs",
	"read_only_root_fs", "run_as_non_root", "drop_all_capabilities", "workspace", "io_read_bps",
	"io_write_bps", "io_iops", NULL,
};

struct quantity {
	const char *key;
	bm_req_parse_fn parse;
	uint64_t min, max;
	size_t off;		/* of the uint64_t in struct bm_sandbox */
	const char *expect;	/* the accepted forms, for messages */
};

#define CPU_EXPECT "cores 0.001..1024 (e.g. 0.5 or \"2\") or millicores (e.g. \"500m\")"
#define SIZE_EXPECT "a size 1Mi..64Ti (bytes, e.g. 268435456, or e.g. \"256Mi\")"
#define BPS_EXPECT "bytes per second 4Ki..1Ti (e.g. 52428800, or e.g. \"50Mi\")"
#define SB_OFF(f) offsetof(struct bm_sandbox, f)

static const struct quantity quantities[] = {
	{ "cpu_request", bm_parse_k8s_cpu, 1, CPU_MAX_MILLI, SB_OFF(cpu_request_milli), CPU_EXPECT },
	{ "cpu_limit", bm_parse_k8s_cpu, 1, CPU_MAX_MILLI, SB_OFF(cpu_limit_milli), CPU_EXPECT },
	{ "memory_request", bm_parse_k8s_bytes, MIB, 64 * TIB, SB_OFF(memory_request), SIZE_EXPECT },
	{ "memory_limit", bm_parse_k8s_bytes, MIB, 64 * TIB, SB_OFF(memory_limit), SIZE_EXPECT },
	{ "pids_limit", bm_parse_u64, 1, 4194304, SB_OFF(pids_limit), "a task count 1..4194304" },
	{ "timeout_seconds", bm_parse_duration_ns, BM_NSEC_PER_MSEC, TIMEOUT_MAX_NS,
	  SB_OFF(timeout_ns), "seconds 0.001..604800 (e.g. 600) or a duration (e.g. \"10m\")" },
	{ "max_ephemeral_storage", bm_parse_k8s_bytes, MIB, 64 * TIB, SB_OFF(max_ephemeral_storage),
	  SIZE_EXPECT },
	{ "io_read_bps", bm_parse_k8s_bytes, 4096, MIB * MIB, SB_OFF(io_read_bps), BPS_EXPECT },
	{ "io_write_bps", bm_parse_k8s_bytes, 4096, MIB * MIB, SB_OFF(io_write_bps), BPS_EXPECT },
	{ "io_iops", bm_parse_u64, 1, 1000000, SB_OFF(io_iops), "operations per second 1..1000000" },
};

/*
 * A JSON number as the decimal text the parse.h functions read: reals with
 * 9 fraction digits (ns for a timeout in seconds), never an exponent.
 * Returns -ERANGE for a negative number (text still filled, for the message).
 */
static int number_text(json_t *v, char *buf, size_t size)
{
	if (json_is_integer(v))
		snprintf(buf, size, "%lld", (long long)json_integer_value(v));
	else
		snprintf(buf, size, "%.9f", json_real_value(v));
	return buf[0] == '-' ? -ERANGE : 0;
}

void bm_req_quantity(struct bm_req_errs *e, const char *field, json_t *v, bm_req_parse_fn parse,
		     uint64_t min, uint64_t max, const char *expect, uint64_t *dst)
{
	char text[400];		/* "%.9f" of DBL_MAX: 319 bytes */
	const char *s = text;
	int err;

	if (json_is_number(v)) {
		err = number_text(v, text, sizeof(text));
	} else if (json_is_string(v)) {
		s = bm_req_string(e, field, v, SIZE_MAX);
		if (!s)
			return;
		err = 0;
	} else {
		bm_req_error(e, field, "must be a number or a string: %s", expect);
		return;
	}
	if (!err)
		err = parse(s, min, max, dst);
	if (err == -ERANGE)
		bm_req_error(e, field, "%.*s is out of range: expected %s",
			     bm_req_quote_len(s, BM_REQ_QUOTE_MAX), s, expect);
	else if (err)
		bm_req_error(e, field, "invalid \"%.*s\": expected %s",
			     bm_req_quote_len(s, BM_REQ_QUOTE_MAX), s, expect);
}

static void parse_quantity(struct bm_req_errs *e, json_t *sb, const struct quantity *q,
			   struct bm_sandbox *out)
{
	json_t *v = json_object_get(sb, q->key);
	char field[64];

	if (!v)
		return;
	snprintf(field, sizeof(field), "sandbox.%s", q->key);
	bm_req_quantity(e, field, v, q->parse, q->min, q->max, q->expect,
			(uint64_t *)((char *)out + q->off));
}

/* The canonical form's timeout: integer ns, exclusive with timeout_seconds. */
static void parse_timeout_ns(struct bm_req_errs *e, json_t *sb, struct bm_sandbox *out)
{
	json_t *v = json_object_get(sb, "timeout_ns");
	json_int_t ns;

	if (!v)
		return;
	if (json_object_get(sb, "timeout_seconds")) {
		bm_req_error(e, "sandbox.timeout_ns",
			     "give timeout_seconds or timeout_ns, not both");
		return;
	}
	ns = json_integer_value(v);
	if (!json_is_integer(v) || ns < (json_int_t)BM_NSEC_PER_MSEC ||
	    ns > (json_int_t)TIMEOUT_MAX_NS) {
		bm_req_error(e, "sandbox.timeout_ns", "must be an integer %llu..%llu (ns)",
			     BM_NSEC_PER_MSEC, TIMEOUT_MAX_NS);
		return;
	}
	out->timeout_ns = (uint64_t)ns;
}

/* A request above its limit could never be granted: say so before anything runs. */
static void check_request_le_limit(struct bm_req_errs *e, const struct bm_sandbox *sb)
{
	if (sb->cpu_request_milli && sb->cpu_limit_milli &&
	    sb->cpu_request_milli > sb->cpu_limit_milli)
		bm_req_error(e, "sandbox.cpu_request",
			     "cpu_request %llum is above cpu_limit %llum",
			     (unsigned long long)sb->cpu_request_milli,
			     (unsigned long long)sb->cpu_limit_milli);
	if (sb->memory_request && sb->memory_limit && sb->memory_request > sb->memory_limit)
		bm_req_error(e, "sandbox.memory_request",
			     "memory_request %llu bytes is above memory_limit %llu bytes",
			     (unsigned long long)sb->memory_request,
			     (unsigned long long)sb->memory_limit);
}

/* Returns false when the policy is given but unknown (then cidrs cannot be judged). */
static bool parse_netpol(struct bm_req_errs *e, json_t *v, struct bm_sandbox *out)
{
	const char *s;

	if (!v)
		return true;
	s = bm_req_string(e, "sandbox.network_policy", v, SIZE_MAX);
	if (!s)
		return false;
	if (!bm_netpol_parse(s, &out->network_policy))
		return true;
	bm_req_error(e, "sandbox.network_policy",
		     "\"%.*s\": expected \"none\", \"egress_restricted\", \"egress_allow_list\" "
		     "or \"full\"", bm_req_quote_len(s, BM_REQ_QUOTE_MAX), s);
	return false;
}

static void parse_cidr(struct bm_req_errs *e, const char *field, json_t *v, struct bm_sandbox *out)
{
	char net[BM_CIDR_STRLEN];
	struct bm_cidr c;
	const char *s;
	int err, n;

	s = bm_req_string(e, field, v, SIZE_MAX);
	if (!s)
		return;
	err = bm_cidr_parse(s, &c);
	n = bm_req_quote_len(s, BM_REQ_QUOTE_MAX);
	if (err == -EDOM && !bm_cidr_format(&c, net, sizeof(net)))
		bm_req_error(e, field, "host bits set in \"%.*s\": did you mean \"%s\"?", n, s,
			     net);
	else if (err == -ERANGE)
		bm_req_error(e, field, "prefix length out of range in \"%.*s\": 0..%d", n, s,
			     c.family == AF_INET ? 32 : 128);
	else if (err)
		bm_req_error(e, field, "invalid CIDR \"%.*s\": expected e.g. \"10.0.0.0/8\" or "
			     "\"2001:db8::/32\"", n, s);
	else
		out->cidrs[out->n_cidrs++] = c;
}

/* policy_known: network_policy is valid (or absent), so required/forbidden can be judged. */
static void parse_cidrs(struct bm_req_errs *e, json_t *v, bool policy_known,
			struct bm_sandbox *out)
{
	static const char field[] = "sandbox.allowed_egress_cidrs";
	bool allow = out->network_policy == BM_NET_EGRESS_ALLOW_LIST;
	char elem[64];
	size_t i, n;
	json_t *a;

	if (policy_known && allow && (!v || (json_is_array(v) && !json_array_size(v))))
		bm_req_error(e, field, "at least one CIDR required with network_policy "
			     "\"egress_allow_list\"");
	if (!v)
		return;
	if (policy_known && !allow)
		bm_req_error(e, field, "only allowed with network_policy \"egress_allow_list\"");
	if (!json_is_array(v)) {
		bm_req_error(e, field, "must be an array of strings");
		return;
	}
	n = json_array_size(v);
	if (n > BM_REQ_MAX_CIDRS) {
		bm_req_error(e, field, "%zu CIDRs, at most %d", n, BM_REQ_MAX_CIDRS);
		return;
	}
	json_array_foreach(v, i, a) {
		snprintf(elem, sizeof(elem), "%s[%zu]", field, i);
		parse_cidr(e, elem, a, out);
	}
}

static void parse_flags(struct bm_req_errs *e, json_t *sb, struct bm_sandbox *out)
{
	static const struct {
		const char *key;
		size_t off;
	} flags[] = {
		{ "read_only_root_fs", SB_OFF(read_only_root_fs) },
		{ "run_as_non_root", SB_OFF(run_as_non_root) },
		{ "drop_all_capabilities", SB_OFF(drop_all_capabilities) },
	};
	char field[64];
	size_t i;
	json_t *v;

	for (i = 0; i < BM_ARRAY_SIZE(flags); i++) {
		v = json_object_get(sb, flags[i].key);
		if (!v)
			continue;
		snprintf(field, sizeof(field), "sandbox.%s", flags[i].key);
		if (!json_is_boolean(v))
			bm_req_error(e, field, "must be true or false");
		else
			*(bool *)((char *)out + flags[i].off) = json_is_true(v);
	}
}

/*
 * An absolute path without "..", bound read-write in the effect. That it
 * exists is checked at submission (bm_sandbox_check_host()), not here: a
 * stored request read back after a restart must parse whatever became of it.
 */
static void parse_workspace(struct bm_req_errs *e, json_t *v, struct bm_sandbox *out)
{
	const char *s;

	if (!v)
		return;
	s = bm_req_string(e, "sandbox.workspace", v, PATH_MAX - 1);
	if (!s)
		return;
	if (s[0] != '/')
		bm_req_error(e, "sandbox.workspace", "\"%.*s\" is not an absolute path",
			     bm_req_quote_len(s, BM_REQ_QUOTE_MAX), s);
	else if (!strcmp(s, "/"))
		bm_req_error(e, "sandbox.workspace",
			     "\"/\" is the whole filesystem: name a directory in it");
	else if (strstr(s, "/../") || (strlen(s) >= 3 && !strcmp(s + strlen(s) - 3, "/..")))
		bm_req_error(e, "sandbox.workspace", "must not contain a \"..\" component");
	else
		/* at most PATH_MAX - 1 bytes; the request's (bm_request_free()) */
		e->oom |= !(out->workspace = strdup(s));
}

void bm_sandbox_parse(struct bm_req_errs *e, json_t *v, struct bm_sandbox *sb)
{
	bool policy_known;
	size_t i;

	memset(sb, 0, sizeof(*sb));
	sb->network_policy = BM_NET_FULL;
	if (!v)
		return;
	if (!json_is_object(v)) {
		bm_req_error(e, "sandbox", "must be an object");
		return;
	}
	bm_req_unknown_keys(e, "sandbox.", v, sandbox_keys);
	for (i = 0; i < BM_ARRAY_SIZE(quantities); i++)
		parse_quantity(e, v, &quantities[i], sb);
	parse_timeout_ns(e, v, sb);
	check_request_le_limit(e, sb);
	policy_known = parse_netpol(e, json_object_get(v, "network_policy"), sb);
	parse_cidrs(e, json_object_get(v, "allowed_egress_cidrs"), policy_known, sb);
	parse_flags(e, v, sb);
	parse_workspace(e, json_object_get(v, "workspace"), sb);
}

int bm_sandbox_check_host(const struct bm_sandbox *sb, const char **field, char *msg, size_t len)
{
	struct stat st;

	if (!*bm_sandbox_workspace(sb))
		return 0;
	*field = "sandbox.workspace";
	if (stat(sb->workspace, &st) < 0) {
		snprintf(msg, len, "%.200s: %s", sb->workspace, strerror(errno));
		return -ENOENT;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(msg, len, "%.200s is not a directory", sb->workspace);
		return -ENOTDIR;
	}
	return 0;
}

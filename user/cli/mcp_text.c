// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The model's view of an effect: one line from its outcome, and its output
 * capped to head and tail. The line leads with what happened and ends with
 * what to change, in the words of the tool's own arguments (limits.memory,
 * timeout_seconds), because the model plans its next call from it.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/mcp_text.h"

#define MIB (1024.0 * 1024.0)

/* up() and larger() for the small positive figures here, without libm */
static double up(double v)
{
	double t = (double)(long long)v;

	return t < v ? t + 1 : t;
}

static double larger(double a, double b)
{
	return a > b ? a : b;
}

int bm_mcp_out__init(struct bm_mcp_out *o, size_t cap)
{
	memset(o, 0, sizeof(*o));
	o->cap = cap;
	o->buf = cap ? malloc(cap) : NULL;
	return cap && !o->buf ? -ENOMEM : 0;
}

void bm_mcp_out__add(struct bm_mcp_out *o, const char *p, size_t n)
{
	size_t head_cap = o->cap / 2, tail_cap = o->cap - head_cap, k;
	char *tail = o->buf + head_cap;

	o->total += n;
	k = head_cap - o->head < n ? head_cap - o->head : n;
	memcpy(o->buf + o->head, p, k);
	o->head += k;
	p += k;
	n -= k;
	if (!tail_cap)
		return;
	/* only the last tail_cap bytes of what is left can survive */
	if (n > tail_cap) {
		p += n - tail_cap;
		n = tail_cap;
	}
	while (n) {
		k = tail_cap - o->tail_pos < n ? tail_cap - o->tail_pos : n;
		memcpy(tail + o->tail_pos, p, k);
		o->tail_pos = (o->tail_pos + k) % tail_cap;
		o->tail_len = o->tail_len + k > tail_cap ? tail_cap : o->tail_len + k;
		p += k;
		n -= k;
	}
}

void bm_mcp_out__free(struct bm_mcp_out *o)
{
	free(o->buf);
	o->buf = NULL;
}

/* Length of the valid UTF-8 sequence at p (n bytes left), 0 if it is not one. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	size_t len, i;
	unsigned int cp;

	if (p[0] && p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

char *bm_mcp_utf8(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	char *out = malloc(n * 3 + 1), *q = out;
	size_t i = 0, k;

	if (!out)
		return NULL;
	while (i < n) {
		k = utf8_len(s + i, n - i);
		if (k) {
			memcpy(q, s + i, k);
			q += k;
			i += k;
		} else {
			memcpy(q, "\xef\xbf\xbd", 3);
			q += 3;
			i++;
		}
	}
	*q = '\0';
	return out;
}

char *bm_mcp_out__text(const struct bm_mcp_out *o, bool *truncated)
{
	size_t head_cap = o->cap / 2, tail_cap = o->cap - head_cap, start, n = 0;
	char *raw, *text, mark[96];
	int m = 0;

	*truncated = o->total > o->head + o->tail_len;
	raw = malloc(o->head + o->tail_len + sizeof(mark));
	if (!raw)
		return NULL;
	memcpy(raw, o->buf, o->head);
	n = o->head;
	if (*truncated)
		m = snprintf(mark, sizeof(mark), "%s[... %llu bytes left out ...]\n",
			     n && raw[n - 1] != '\n' ? "\n" : "",
			     (unsigned long long)(o->total - o->head - o->tail_len));
	memcpy(raw + n, mark, (size_t)m);
	n += (size_t)m;
	/* the ring's oldest byte is at tail_pos once it is full */
	start = o->tail_len == tail_cap ? o->tail_pos : 0;
	if (o->tail_len) {
		memcpy(raw + n, o->buf + head_cap + start, o->tail_len - start);
		memcpy(raw + n + o->tail_len - start, o->buf + head_cap, start);
		n += o->tail_len;
	}
	text = bm_mcp_utf8(raw, n);
	free(raw);
	return text;
}

void bm_mcp_bytes(double v, char *buf, size_t len)
{
	if (v < 1024)
		snprintf(buf, len, "%.0f B", v);
	else if (v < MIB)
		snprintf(buf, len, "%.0f KiB", v / 1024);
	else if (v < 10 * MIB)
		snprintf(buf, len, "%.1f MiB", v / MIB);
	else if (v < 1024 * MIB)
		snprintf(buf, len, "%.0f MiB", v / MIB);
	else
		snprintf(buf, len, "%.1f GiB", v / (1024 * MIB));
}

/* obj.a.b as a number; def if absent or null. */
static double num(const json_t *o, const char *a, const char *b, double def)
{
	const json_t *v = json_object_get(json_object_get(o, a), b);

	return json_is_number(v) ? json_number_value(v) : def;
}

static const char *str(const json_t *o, const char *a, const char *b)
{
	const char *s = json_string_value(json_object_get(json_object_get(o, a), b));

	return s ? s : "";
}

struct line {
	char *p;
	size_t len, at;
};

static void add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (l->at >= l->len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(l->p + l->at, l->len - l->at, fmt, ap);
	va_end(ap);
	l->at = n < 0 ? l->at : l->at + (size_t)n;
}

static void secs(double s, char *buf, size_t len)
{
	snprintf(buf, len, s < 10 ? "%.2f s" : "%.1f s", s);
}

/* A memory ceiling to suggest: half again what it had, rounded up to 64 MiB. */
static void more_memory(double have, char *buf, size_t len)
{
	double want = up(have * 1.5 / (64 * MIB)) * 64;

	/* in the request's units: Kubernetes quantities, where "M" is 10^6 */
	if (want >= 1024)
		snprintf(buf, len, "%.0fGi", up(want / 1024));
	else
		snprintf(buf, len, "%.0fMi", want);
}

static void peaks(struct line *l, const json_t *o)
{
	char mem[32], net[32];
	double tx = num(o, "peak", "net_tx_bytes_per_s", 0);

	bm_mcp_bytes(num(o, "peak", "memory_bytes", 0), mem, sizeof(mem));
	add(l, "; peak cpu %.2f cores, mem %s, %.0f tasks", num(o, "peak", "cpu_cores", 0), mem,
	    num(o, "peak", "pids", 0));
	if (tx > 0) {
		bm_mcp_bytes(tx, net, sizeof(net));
		add(l, ", net %s/s", net);
	}
}

/* Why it was stopped at a ceiling, at what, and what to change. */
static void ceiling(struct line *l, const json_t *o, const char *reason, const char *after)
{
	double lim;
	char a[32], b[32];

	if (!strcmp(reason, "memory_ceiling")) {
		lim = num(o, "limits", "memory_bytes", num(o, "peak", "memory_bytes", 0));
		bm_mcp_bytes(lim, a, sizeof(a));
		more_memory(lim, b, sizeof(b));
		add(l, "killed: memory_ceiling at %s after %s; retry with a smaller working set or "
		    "limits.memory >= %s", a, after, b);
	} else if (!strcmp(reason, "pids_ceiling")) {
		lim = num(o, "limits", "pids", num(o, "peak", "pids", 0));
		add(l, "killed: pids_ceiling at %.0f tasks after %s; retry with less parallelism "
		    "(fewer jobs or workers) or limits.pids >= %.0f", lim, after, lim + larger(4, up(lim / 2)));
	} else if (!strcmp(reason, "cpu_ceiling")) {
		add(l, "killed: cpu_ceiling at %.2f cores after %s; retry with fewer threads or a higher "
		    "limits.cpu", num(o, "peak", "cpu_cores", 0), after);
	} else if (!strcmp(reason, "storage_ceiling")) {
		lim = num(o, "limits", "ephemeral_storage_bytes", num(o, "storage", "peak_bytes", 0));
		bm_mcp_bytes(lim, a, sizeof(a));
		add(l, "killed: storage_ceiling at %s of ephemeral storage after %s; retry writing less "
		    "to /tmp or with a larger max_ephemeral_storage", a, after);
	} else if (!strcmp(reason, "io_ceiling")) {
		bm_mcp_bytes(num(o, "peak", "io_write_bytes_per_s", 0), a, sizeof(a));
		add(l, "killed: io_ceiling at %s/s written after %s; retry with less I/O per call", a,
		    after);
	} else {
		bm_mcp_bytes(num(o, "peak", "net_tx_bytes_per_s", 0), a, sizeof(a));
		add(l, "killed: net_ceiling at %s/s after %s; retry sending less per call", a, after);
	}
}

static void expectations(struct line *l, const json_t *o)
{
	json_t *rep = bm_mcp_expect_report(o), *v;
	const char *k;
	bool first = true;
	char a[32], b[32];

	json_object_foreach(rep, k, v) {
		double e = json_number_value(json_object_get(v, "expected"));
		double got = json_number_value(json_object_get(v, "observed"));

		if (!json_is_true(json_object_get(v, "exceeded")))
			continue;
		if (!strcmp(k, "memory_bytes")) {
			bm_mcp_bytes(got, a, sizeof(a));
			bm_mcp_bytes(e, b, sizeof(b));
		} else {
			snprintf(a, sizeof(a), "%.2f", got);
			snprintf(b, sizeof(b), "%.2f", e);
		}
		add(l, "%s %s %s against %s expected", first ? "; beyond what was expected:" : ",", k, a, b);
		first = false;
	}
	json_decref(rep);
}

void bm_mcp_summary(const json_t *o, char *buf, size_t len)
{
	const char *reason = str(o, "termination", "reason"), *advice = str(o, "retry", "advice");
	struct line l = { buf, len, 0 };
	double wall = json_number_value(json_object_get(o, "wall_seconds"));
	double code = num(o, "exit", "code", -1), sig = num(o, "exit", "signal", 0);
	double thr = json_number_value(json_object_get(o, "throttled_seconds"));
	double frz = json_number_value(json_object_get(o, "frozen_seconds"));
	double after_ms = num(o, "retry", "after_ms", 0);
	const char *abbrev = sig > 0 ? sigabbrev_np((int)sig) : NULL, *back;
	char after[32], t[32];

	buf[0] = '\0';
	secs(wall, after, sizeof(after));
	if (!strcmp(reason, "completed")) {
		add(&l, "completed in %s (exit 0)", after);
	} else if (!strcmp(reason, "failed") && (code == 126 || code == 127)) {
		/* said here, not from the advice: an attached effect's outcome has no command of its own */
		add(&l, "failed: exit %.0f: '%s' %s; fix the command", code,
		    json_string_value(json_array_get(json_object_get(o, "command"), 0)) ?: "",
		    code == 127 ? "was not found" : "is not executable");
		advice = "";
	} else if (!strcmp(reason, "failed")) {
		add(&l, "failed: exit %.0f after %s", code, after);
	} else if (!strcmp(reason, "signaled")) {
		add(&l, "signaled: killed by SIG%s after %s", abbrev ? abbrev : "?", after);
	} else if (!strcmp(reason, "deadline")) {
		secs(num(o, "limits", "timeout_seconds", wall), t, sizeof(t));
		add(&l, "deadline: stopped at its %s timeout; raise timeout_seconds or split the work", t);
	} else if (strstr(reason, "_ceiling")) {
		ceiling(&l, o, reason, after);
	} else if (!strcmp(reason, "cancelled")) {
		add(&l, "cancelled after %s (by %s)", after, str(o, "termination", "by"));
	} else if (!strcmp(reason, "meter_error")) {
		add(&l, "meter_error after %s: burstmeter could not meter it", after);
	} else {
		add(&l, "%s after %s", *reason ? reason : "ended", after);
	}
	peaks(&l, o);
	if (thr > 0 || frz > 0)
		add(&l, "; throttled %.2f s, frozen %.2f s", thr, frz);
	expectations(&l, o);
	/* the meter's own words where ours have none: the command's failure, the agent's back-off */
	back = strstr(advice, " earlier ") ? strrchr(advice, ';') : NULL;
	if (!strcmp(reason, "failed") && *advice)
		add(&l, "; %s", advice);
	else if (strstr(advice, " earlier "))
		add(&l, "; %s", back ? back + 2 : advice);
	if (after_ms > 0)
		add(&l, "; retry no sooner than %.0f s from now", up(after_ms / 1000));
}

json_t *bm_mcp_expect_report(const json_t *o)
{
	const json_t *x = json_object_get(o, "expect"), *obs = json_object_get(x, "observed"), *e, *k;
	json_t *rep, *over = json_object_get(x, "exceeded");
	const char *key;
	bool exceeded;
	size_t i;

	if (!json_is_object(json_object_get(x, "declared")))
		return NULL;
	rep = json_object();
	json_object_foreach(json_object_get(x, "declared"), key, e) {
		exceeded = false;
		json_array_foreach(over, i, k)
			exceeded |= !strcmp(json_string_value(k) ?: "", key);
		json_object_set_new(rep, key, json_pack("{s:f, s:f, s:b}", "expected", json_number_value(e),
							"observed", json_number_value(json_object_get(obs, key)),
							"exceeded", exceeded));
	}
	return rep;
}

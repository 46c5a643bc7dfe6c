// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for user/base/parse.c: the numbers, sizes, durations,
 * CPU quantities and names of the command line, config and policy files and
 * API requests. The first byte picks the range (the whole of uint64_t, or
 * the callers' own), the rest is the text. Besides memory errors it checks
 * that an accepted value is in its range and reads back the same from its
 * canonical text (bytes; ns as seconds with 9 decimals; millicores as
 * "<n>m"; the same for Kubernetes quantities), that plain integers agree with strtoull(), and bm_valid_name()
 * against its definition.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/parse.h"
#include "fuzz.h"

struct range {
	uint64_t min, max;
};

/* [0] everything; then what the callers pass (request_sandbox.c, policy_yaml.c, config.c) */
static const struct range u64_ranges[] = { { 0, UINT64_MAX }, { 1, 4194304 }, { 0, 3600000 } };
static const struct range size_ranges[] = { { 0, UINT64_MAX },
					    { 1ULL << 20, 64ULL << 40 },
					    { 1, 1ULL << 50 } };
static const struct range dur_ranges[] = { { 0, UINT64_MAX }, { 1000000, 604800000000000ULL } };
static const struct range core_ranges[] = { { 0, UINT64_MAX }, { 1, 1024000 } };

#define PICK(a, sel) (&(a)[(sel) % (sizeof(a) / sizeof((a)[0]))])

static bool all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

static void check_u64(const char *s, const struct range *r)
{
	unsigned long long ref;
	uint64_t v = 0;
	char *end;
	int err;

	err = bm_parse_u64(s, r->min, r->max, &v);
	CHECK(!err || err == -EINVAL || err == -ERANGE, "u64 '%s': error %d", s, err);
	/* -ERANGE when the digits before what is not one overflow */
	if (!all_digits(s)) {
		CHECK(err, "u64 '%s' is not a plain integer but gave %llu", s,
		      (unsigned long long)v);
		return;
	}
	errno = 0;
	ref = strtoull(s, &end, 10);
	if (errno == ERANGE) {
		CHECK(err == -ERANGE, "u64 '%s' overflows but gave %d", s, err);
		return;
	}
	if (ref < r->min || ref > r->max) {
		CHECK(err == -ERANGE, "u64 '%s' out of range but gave %d", s, err);
		return;
	}
	CHECK(!err && v == ref, "u64 '%s': %d, %llu, not %llu", s, err, (unsigned long long)v, ref);
}

/* An accepted value is in range and its canonical text reads back the same. */
static void check_units(const char *kind,
			int (*parse)(const char *, uint64_t, uint64_t, uint64_t *), const char *s,
			const struct range *r)
{
	uint64_t v = 0, back = 0;
	char text[64];
	int err;

	err = parse(s, r->min, r->max, &v);
	CHECK(!err || err == -EINVAL || err == -ERANGE, "%s '%s': error %d", kind, s, err);
	if (err)
		return;
	CHECK(v >= r->min && v <= r->max, "%s '%s': %llu out of range", kind, s,
	      (unsigned long long)v);
	if (!strcmp(kind, "duration"))
		snprintf(text, sizeof(text), "%llu.%09llu", (unsigned long long)(v / 1000000000ULL),
			 (unsigned long long)(v % 1000000000ULL));
	else if (strstr(kind, "cores"))
		snprintf(text, sizeof(text), "%llum", (unsigned long long)v);
	else
		snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
	err = parse(text, r->min, r->max, &back);
	CHECK(!err && back == v, "%s '%s' = %llu, but '%s' gives %d, %llu", kind, s,
	      (unsigned long long)v, text, err, (unsigned long long)back);
}

static void check_name(const char *s)
{
	static const char ok[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-";
	size_t n = strlen(s);
	bool want = n >= 1 && n <= BM_NAME_MAX && s[0] != '.' && strspn(s, ok) == n;

	CHECK(bm_valid_name(s) == want, "name '%s': %d", s, !want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned int sel;
	char *s;

	if (!size)
		return 0;
	sel = data[0];
	s = fuzz_cstr(data + 1, size - 1);
	check_u64(s, PICK(u64_ranges, sel));
	check_units("size", bm_parse_size, s, PICK(size_ranges, sel));
	check_units("duration", bm_parse_duration_ns, s, PICK(dur_ranges, sel));
	check_units("cores", bm_parse_cores, s, PICK(core_ranges, sel));
	check_units("k8s bytes", bm_parse_k8s_bytes, s, PICK(size_ranges, sel));
	check_units("k8s cores", bm_parse_k8s_cpu, s, PICK(core_ranges, sel));
	check_name(s);
	free(s);
	return 0;
}

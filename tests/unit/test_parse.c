// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/base/parse.h: every string a user, a config file or an API request hands
 * us goes through these five functions, so each accepted form is pinned to
 * its exact value and each malformed one to its exact error.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/parse.h"

#define KIB 1024ULL
#define MIB (KIB * KIB)
#define GIB (MIB * KIB)
#define TIB (GIB * KIB)
#define NS_PER_S 1000000000ULL
#define NS_PER_MS 1000000ULL

typedef int (*parse_fn)(const char *s, uint64_t min, uint64_t max, uint64_t *out);

struct ok_case {
	const char *in;
	uint64_t want;
};

/* Sentinel written before each call: a parser must overwrite it on success. */
#define UNSET 0xdeadbeefdeadbeefULL
#define N(a) (sizeof(a) / sizeof((a)[0]))

static void check_ok(const char *what, parse_fn fn, const struct ok_case *c, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t v = UNSET;
		int err = fn(c[i].in, 0, UINT64_MAX, &v);

		if (err || v != c[i].want)
			fail_msg("%s(\"%s\"): err %d value %llu, want 0 and %llu", what, c[i].in,
				 err, (unsigned long long)v, (unsigned long long)c[i].want);
	}
}

static void check_err(const char *what, parse_fn fn, const char *const *in, size_t n, int want)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t v = UNSET;
		int err = fn(in[i], 0, UINT64_MAX, &v);

		if (err != want)
			fail_msg("%s(\"%s\"): err %d (value %llu), want %d", what,
				 in[i] ? in[i] : "(null)", err, (unsigned long long)v, want);
	}
}

/* Malformed for every parser: no sign, no blanks, no hex, digits on both sides of a dot. */
static const char *const malformed[] = {
	NULL, "", "abc", "12x", "-1", "+1", " 1", "1 ", "1.", ".5", "0x10", "1e3", "1,5", "\t1",
	"1\n", "١", "1..5", "1.5.5", "--1",
};

static void test_parse_u64_accepts_plain_decimal(void **state)
{
	static const struct ok_case c[] = {
		{ "0", 0 }, { "1", 1 }, { "42", 42 },
		{ "007", 7 },	/* decimal, never octal */
		{ "4294967296", 1ULL << 32 },
		{ "18446744073709551615", UINT64_MAX },
	};

	check_ok("bm_parse_u64", bm_parse_u64, c, N(c));
}

static void test_parse_u64_rejects_malformed(void **state)
{
	/* an integer parser has no use for a fraction, even one of zero */
	static const char *const extra[] = { "1.0", "1.5", "1K", "1k", "1s" };

	check_err("bm_parse_u64", bm_parse_u64, malformed, N(malformed),
		  -EINVAL);
	check_err("bm_parse_u64", bm_parse_u64, extra, N(extra), -EINVAL);
}

static void test_parse_u64_overflow_is_erange(void **state)
{
	static const char *const in[] = {
		"18446744073709551616", "18446744073709551620", "99999999999999999999",
		"100000000000000000000000000000",
	};

	check_err("bm_parse_u64", bm_parse_u64, in, N(in), -ERANGE);
}

static void test_parse_u64_range_is_inclusive(void **state)
{
	uint64_t v = UNSET;

	assert_int_equal(bm_parse_u64("1", 1, 4194304, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(bm_parse_u64("4194304", 1, 4194304, &v), 0);
	assert_int_equal(v, 4194304);
	assert_int_equal(bm_parse_u64("0", 1, 4194304, &v), -ERANGE);
	assert_int_equal(bm_parse_u64("4194305", 1, 4194304, &v), -ERANGE);
	assert_int_equal(bm_parse_u64("7", 7, 7, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(bm_parse_u64("8", 7, 7, &v), -ERANGE);
}

static void test_parse_size_accepts_every_unit(void **state)
{
	static const struct ok_case c[] = {
		{ "0", 0 }, { "4096", 4096 }, { "4096B", 4096 },
		{ "1K", KIB }, { "1k", KIB }, { "1Ki", KIB }, { "1KB", KIB }, { "1KiB", KIB },
		{ "512K", 512 * KIB },
		{ "1M", MIB }, { "1Mi", MIB }, { "1MB", MIB }, { "1MiB", MIB },
		{ "512M", 512 * MIB },
		{ "2G", 2 * GIB }, { "1Gi", GIB }, { "1GB", GIB }, { "1GiB", GIB },
		{ "1T", TIB }, { "1Ti", TIB }, { "1TB", TIB }, { "1TiB", TIB }, { "64T", 64 * TIB },
		/* powers of 1024 as cgroupfs and Kubernetes' binary suffixes read them */
		{ "1.5G", GIB + GIB / 2 }, { "0.5K", 512 }, { "0.25M", MIB / 4 }, { "1.5Ki", 1536 },
		/* a fraction that does not divide evenly rounds down, never up */
		{ "0.1G", GIB / 10 },
		/* the largest whole count of TiB that fits in 64 bits */
		{ "16777215T", (16777216ULL - 1) * TIB },
	};

	check_ok("bm_parse_size", bm_parse_size, c, N(c));
}

static void test_parse_size_rejects_malformed(void **state)
{
	static const char *const extra[] = {
		"K", "1P", "1Pi", "1KK", "1 K", "1iK", "1Kib", "1KIB", "1b", "G1", "1.K", "1E",
	};

	check_err("bm_parse_size", bm_parse_size, malformed, N(malformed),
		  -EINVAL);
	check_err("bm_parse_size", bm_parse_size, extra, N(extra), -EINVAL);
}

static void test_parse_size_overflow_is_erange(void **state)
{
	static const char *const in[] = {
		"18446744073709551616", "99999999999T", "16777216T", "17179869184G",
		"18014398509481984K",
	};

	check_err("bm_parse_size", bm_parse_size, in, N(in), -ERANGE);
}

static void test_parse_size_range_applies_after_the_unit(void **state)
{
	uint64_t v = UNSET;

	/* the --memory range: 1M-64T */
	assert_int_equal(bm_parse_size("1M", MIB, 64 * TIB, &v), 0);
	assert_int_equal(v, MIB);
	assert_int_equal(bm_parse_size("64T", MIB, 64 * TIB, &v), 0);
	assert_int_equal(v, 64 * TIB);
	assert_int_equal(bm_parse_size("1K", MIB, 64 * TIB, &v), -ERANGE);
	assert_int_equal(bm_parse_size("1048575", MIB, 64 * TIB, &v), -ERANGE);
	assert_int_equal(bm_parse_size("65T", MIB, 64 * TIB, &v), -ERANGE);
	assert_int_equal(bm_parse_size("0", MIB, 64 * TIB, &v), -ERANGE);
}

static void test_parse_duration_accepts_every_unit(void **state)
{
	static const struct ok_case c[] = {
		{ "0", 0 }, { "2", 2 * NS_PER_S }, { "2s", 2 * NS_PER_S },
		{ "1.5", 1500000000ULL }, { "1.5s", 1500000000ULL },
		{ "250ms", 250000000ULL }, { "0.5ms", 500000ULL }, { "10us", 10000ULL },
		{ "1m", 60 * NS_PER_S }, { "10m", 600 * NS_PER_S }, { "1.5m", 90 * NS_PER_S },
		{ "1h", 3600 * NS_PER_S }, { "0.5h", 1800 * NS_PER_S },
		{ "604800", 604800 * NS_PER_S }, { "307445734m", 307445734ULL * 60 * NS_PER_S },
		/* nine fraction digits are nanoseconds; a tenth is below resolution */
		{ "0.000000001", 1 }, { "0.0000000019", 1 },
		/* exactly UINT64_MAX ns, spelled in seconds */
		{ "18446744073.709551615", UINT64_MAX },
	};

	check_ok("bm_parse_duration_ns", bm_parse_duration_ns, c, N(c));
}

static void test_parse_duration_rejects_malformed(void **state)
{
	static const char *const extra[] = {
		"s", "ms", "8d", "1w", "1S", "1MS", "1 s", "1sec", "1ms5", "1.s", "1e3s", "1y",
	};

	check_err("bm_parse_duration_ns", bm_parse_duration_ns, malformed,
		  N(malformed), -EINVAL);
	check_err("bm_parse_duration_ns", bm_parse_duration_ns, extra,
		  N(extra), -EINVAL);
}

static void test_parse_duration_overflow_is_erange(void **state)
{
	static const char *const in[] = {
		"99999999999h", "18446744074", "18446744073.709551616", "307445735m",
		"18446744073709551616ms",
	};

	check_err("bm_parse_duration_ns", bm_parse_duration_ns, in, N(in),
		  -ERANGE);
}

static void test_parse_duration_range(void **state)
{
	uint64_t v = UNSET, max = 7 * 86400 * NS_PER_S;

	/* the --timeout range: 1 ms to 7 days */
	assert_int_equal(bm_parse_duration_ns("1ms", NS_PER_MS, max, &v), 0);
	assert_int_equal(v, NS_PER_MS);
	assert_int_equal(bm_parse_duration_ns("168h", NS_PER_MS, max, &v), 0);
	assert_int_equal(v, max);
	assert_int_equal(bm_parse_duration_ns("0", NS_PER_MS, max, &v), -ERANGE);
	assert_int_equal(bm_parse_duration_ns("999us", NS_PER_MS, max, &v), -ERANGE);
	assert_int_equal(bm_parse_duration_ns("604801", NS_PER_MS, max, &v), -ERANGE);
}

static void test_parse_cores_decimal_and_millicores(void **state)
{
	static const struct ok_case c[] = {
		{ "0", 0 }, { "0.5", 500 }, { "2", 2000 }, { "1.25", 1250 }, { "0.001", 1 },
		{ "1500m", 1500 }, { "500m", 500 }, { "1m", 1 }, { "1024", 1024000 },
		/* below a millicore rounds down */
		{ "0.0009", 0 },
	};

	check_ok("bm_parse_cores", bm_parse_cores, c, N(c));
}

static void test_parse_cores_rejects_malformed(void **state)
{
	static const char *const extra[] = { "m", "1M", "1k", "1 m", "1mm", "2c", "1.5 ", "1u" };

	check_err("bm_parse_cores", bm_parse_cores, malformed, N(malformed),
		  -EINVAL);
	check_err("bm_parse_cores", bm_parse_cores, extra, N(extra), -EINVAL);
}

static void test_parse_cores_range_and_overflow(void **state)
{
	uint64_t v = UNSET;

	/* the --cpu range: 1 millicore to 1024 cores */
	assert_int_equal(bm_parse_cores("1024", 1, 1024000, &v), 0);
	assert_int_equal(v, 1024000);
	assert_int_equal(bm_parse_cores("1m", 1, 1024000, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(bm_parse_cores("0", 1, 1024000, &v), -ERANGE);
	assert_int_equal(bm_parse_cores("0.0001", 1, 1024000, &v), -ERANGE);
	assert_int_equal(bm_parse_cores("2000", 1, 1024000, &v), -ERANGE);
	assert_int_equal(bm_parse_cores("1024.001", 1, 1024000, &v), -ERANGE);
	/* 2^64 / 1000 cores does not fit in millicores */
	assert_int_equal(bm_parse_cores("18446744073709552", 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(bm_parse_cores("18446744073709551616m", 0, UINT64_MAX, &v), -ERANGE);
}

/* Kubernetes quantities (resource.Quantity), exactly: decimal and binary suffixes, exponents. */
static void test_parse_k8s_bytes_every_form(void **state)
{
	static const struct ok_case c[] = {
		{ "0", 0 }, { "1000", 1000 }, { "1k", 1000 }, { "1Ki", KIB }, { "2M", 2000000 },
		{ "2Mi", 2 * MIB }, { "2G", 2000000000 }, { "2Gi", 2 * GIB }, { "1T", 1000000000000ULL },
		{ "1Ti", TIB }, { "1P", 1000000000000000ULL }, { "1Pi", 1ULL << 50 },
		{ "1E", 1000000000000000000ULL }, { "1Ei", 1ULL << 60 }, { "15Ei", 15ULL << 60 },
		{ "1e9", 1000000000 }, { "1E9", 1000000000 }, { "1e+9", 1000000000 },
		{ "2.5e8", 250000000 }, { "12e-1", 2 }, { "1.5G", 1500000000 },
		{ "1.5Gi", GIB + GIB / 2 }, { ".5Gi", GIB / 2 }, { "2.", 2 }, { "+1G", 1000000000 },
		{ "0001Mi", MIB }, { "1000m", 1 }, { "1500m", 2 }, { "1m", 1 }, { "0.1", 1 },
		{ "0m", 0 }, { "1.0000000000000000000000000000000001", 2 },
		{ "18446744073709551615", UINT64_MAX }, { "18446744073709551615000m", UINT64_MAX },
		{ "0.000000000000000000000000000000000000000001e42", 1 }, { "0e99", 0 },
	};

	check_ok("bm_parse_k8s_bytes", bm_parse_k8s_bytes, c, N(c));
}

static void test_parse_k8s_cpu_every_form(void **state)
{
	static const struct ok_case c[] = {
		{ "500m", 500 }, { "0.5", 500 }, { "2", 2000 }, { "1.25", 1250 }, { "1e3", 1000000 },
		{ "5e-1", 500 }, { "1e-3", 1 }, { "1k", 1000000 }, { "1Ki", 1024000 },
		/* finer than a millicore rounds up, as the API server rounds it */
		{ "0.0001", 1 }, { "1.0005", 1001 }, { "1.0000", 1000 }, { "0", 0 },
	};

	check_ok("bm_parse_k8s_cpu", bm_parse_k8s_cpu, c, N(c));
}

static void test_parse_k8s_rejects_malformed_and_huge(void **state)
{
	static const char *const bad[] = {
		NULL, "", "abc", "-1", " 1", "1 ", ".", "+", "1..5", "1.5.5", "0x10", "1e", "1e+",
		"1e3m", "1Gi5", "1GB", "1g", "1K", "1KiB", "1Q", "e9", "Gi", "1,5", "--1", "1ee3",
		"1e1.5", "1\n", "1 Gi",
	};
	static const char *const huge[] = {
		"18446744073709551616", "16Ei", "19E", "1e20", "1e1001", "1000000000000000000000000000000",
		"18446744073709551615001m",
	};

	check_err("bm_parse_k8s_bytes", bm_parse_k8s_bytes, bad, N(bad), -EINVAL);
	check_err("bm_parse_k8s_bytes", bm_parse_k8s_bytes, huge, N(huge), -ERANGE);
	check_err("bm_parse_k8s_cpu", bm_parse_k8s_cpu, (const char *const[]){ "18446744073709552" },
		  1, -ERANGE);
}

static void test_parse_k8s_range_after_rounding(void **state)
{
	uint64_t v = UNSET;

	assert_int_equal(bm_parse_k8s_bytes("1Mi", MIB, 64 * TIB, &v), 0);
	assert_int_equal(v, MIB);
	assert_int_equal(bm_parse_k8s_bytes("1M", MIB, 64 * TIB, &v), -ERANGE);
	assert_int_equal(bm_parse_k8s_bytes("64Ti", MIB, 64 * TIB, &v), 0);
	assert_int_equal(bm_parse_k8s_bytes("70.4T", MIB, 64 * TIB, &v), -ERANGE);
	assert_int_equal(bm_parse_k8s_cpu("0.0001", 1, 1024000, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(bm_parse_k8s_cpu("0", 1, 1024000, &v), -ERANGE);
}

static void test_valid_name_accepts(void **state)
{
	static const char *const ok[] = {
		"tc-42", "a.b_c", "a", "A", "0", "default", "run-0123456789ab", "x..y", "a.",
		"UPPER_lower-09",
	};
	char max[BM_NAME_MAX + 1];
	size_t i;

	for (i = 0; i < N(ok); i++)
		if (!bm_valid_name(ok[i]))
			fail_msg("bm_valid_name(\"%s\") is false, want true", ok[i]);
	memset(max, 'n', BM_NAME_MAX);
	max[BM_NAME_MAX] = '\0';
	assert_int_equal(BM_NAME_MAX, 64);
	assert_true(bm_valid_name(max));
}

static void test_valid_name_rejects(void **state)
{
	/* "." and ".." are paths, a leading dot hides a cgroup; the rest are outside the set */
	static const char *const bad[] = {
		"", ".", "..", ".hidden", "a/b", "/a", "a b", "é", "a\n", "a\tb", "a:b", "a*",
		"a\\b", "tc-42\x7f", "\xff",
	};
	char long_name[BM_NAME_MAX + 2];
	size_t i;

	assert_false(bm_valid_name(NULL));
	for (i = 0; i < N(bad); i++)
		if (bm_valid_name(bad[i]))
			fail_msg("bm_valid_name(\"%s\") is true, want false", bad[i]);
	memset(long_name, 'n', BM_NAME_MAX + 1);
	long_name[BM_NAME_MAX + 1] = '\0';
	assert_false(bm_valid_name(long_name));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_u64_accepts_plain_decimal),
		cmocka_unit_test(test_parse_u64_rejects_malformed),
		cmocka_unit_test(test_parse_u64_overflow_is_erange),
		cmocka_unit_test(test_parse_u64_range_is_inclusive),
		cmocka_unit_test(test_parse_size_accepts_every_unit),
		cmocka_unit_test(test_parse_size_rejects_malformed),
		cmocka_unit_test(test_parse_size_overflow_is_erange),
		cmocka_unit_test(test_parse_size_range_applies_after_the_unit),
		cmocka_unit_test(test_parse_duration_accepts_every_unit),
		cmocka_unit_test(test_parse_duration_rejects_malformed),
		cmocka_unit_test(test_parse_duration_overflow_is_erange),
		cmocka_unit_test(test_parse_duration_range),
		cmocka_unit_test(test_parse_cores_decimal_and_millicores),
		cmocka_unit_test(test_parse_cores_rejects_malformed),
		cmocka_unit_test(test_parse_cores_range_and_overflow),
		cmocka_unit_test(test_parse_k8s_bytes_every_form),
		cmocka_unit_test(test_parse_k8s_cpu_every_form),
		cmocka_unit_test(test_parse_k8s_rejects_malformed_and_huge),
		cmocka_unit_test(test_parse_k8s_range_after_rounding),
		cmocka_unit_test(test_valid_name_accepts),
		cmocka_unit_test(test_valid_name_rejects),
	};

	return cmocka_run_group_tests_name("parse", tests, NULL, NULL);
}

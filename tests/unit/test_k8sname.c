// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/base/k8sname.h: the names the API server accepts, each rule pinned
 * from both sides (the last accepted, the first refused), as apimachinery's
 * validation has them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "base/k8sname.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static char buf[512];

/* c repeated n times (n < sizeof(buf)) */
static const char *rep(char c, size_t n)
{
	memset(buf, c, n);
	buf[n] = '\0';
	return buf;
}

struct want {
	const char *s;
	bool ok;
};

static void check(bool (*fn)(const char *), const char *name, const struct want *w, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (fn(w[i].s) != w[i].ok)
			fail_msg("%s(\"%s\"): %d, expected %d", name, w[i].s, !w[i].ok, w[i].ok);
}

static void test_k8sname_dns_label(void **state)
{
	static const struct want w[] = {
		{ "agents", true }, { "a", true }, { "0", true }, { "a-b-1", true },
		{ "", false }, { "-a", false }, { "a-", false }, { "A", false }, { "a.b", false },
		{ "a_b", false }, { "a b", false }, { "ä", false },
	};

	check(bm_k8s_dns_label, "dns_label", w, N(w));
	assert_true(bm_k8s_dns_label(rep('a', 63)));
	assert_false(bm_k8s_dns_label(rep('a', 64)));
}

static void test_k8sname_dns_subdomain(void **state)
{
	static const struct want w[] = {
		{ "run-42", true }, { "run.42", true }, { "a.b.c", true }, { "0.0", true },
		{ "", false }, { ".a", false }, { "a.", false }, { "a..b", false },
		{ "a.-b", false },
		{ "a-.b", false }, { "Run-42", false }, { "run_42", false }, { "run/42", false },
	};
	char s[300];

	check(bm_k8s_dns_subdomain, "dns_subdomain", w, N(w));
	/* 253 in all, whatever the parts */
	memset(s, 'a', 253);
	s[253] = '\0';
	s[100] = s[200] = '.';
	assert_true(bm_k8s_dns_subdomain(s));
	s[253] = 'a';
	s[254] = '\0';
	assert_false(bm_k8s_dns_subdomain(s));
}

static void test_k8sname_label_value(void **state)
{
	static const struct want w[] = {
		{ "", true }, { "acme", true }, { "Acme_Corp.1-x", true }, { "a", true },
		{ "9", true },
		{ "-a", false }, { "a-", false }, { "_a", false }, { "a.", false },
		{ "a b", false },
		{ "a/b", false }, { "a:b", false }, { "é", false },
	};

	check(bm_k8s_label_value, "label_value", w, N(w));
	assert_true(bm_k8s_label_value(rep('x', 63)));
	assert_false(bm_k8s_label_value(rep('x', 64)));
}

static void test_k8sname_label_key(void **state)
{
	static const struct want w[] = {
		{ "team", true }, { "Team_1", true }, { "app.kubernetes.io/name", true },
		{ "example.com/a.b-c_d", true }, { "a/b", true },
		{ "", false }, { "/team", false }, { "example.com/", false },
		{ "Example.com/a", false },
		{ "a/b/c", false }, { "-team", false }, { "team-", false }, { "te am", false },
		{ "a..b/c", false },
	};
	char s[600];

	check(bm_k8s_label_key, "label_key", w, N(w));
	/* the name: 63 at most; the prefix: a 253-byte subdomain */
	snprintf(s, sizeof(s), "x/%s", rep('n', 63));
	assert_true(bm_k8s_label_key(s));
	snprintf(s, sizeof(s), "x/%s", rep('n', 64));
	assert_false(bm_k8s_label_key(s));
	memset(s, 'p', 253);
	s[60] = s[120] = s[180] = '.';
	snprintf(s + 253, sizeof(s) - 253, "/n");
	assert_true(bm_k8s_label_key(s));
	memset(s, 'p', 254);
	s[60] = s[120] = s[180] = '.';
	snprintf(s + 254, sizeof(s) - 254, "/n");
	assert_false(bm_k8s_label_key(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_k8sname_dns_label),
		cmocka_unit_test(test_k8sname_dns_subdomain),
		cmocka_unit_test(test_k8sname_label_value),
		cmocka_unit_test(test_k8sname_label_key),
	};

	return cmocka_run_group_tests_name("k8sname", tests, NULL, NULL);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/base/yamlout.h: the layout kubectl users know, and strings that
 * come back as the same strings: each is written, read back with libyaml
 * (yamlcheck.h, YAML 1.1 resolution) and compared; the ones that must be
 * quoted are checked to be.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/yamlout.h"
#include "yamlcheck.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* v written as YAML into a malloc'd string. */
static char *write(json_t *v, int *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*err = bm_yaml_write(f, v);
	fclose(f);
	return buf;
}

static void expect_yaml(json_t *v, const char *want)
{
	int err;
	char *got = write(v, &err);

	assert_int_equal(err, 0);
	assert_string_equal(got, want);
	free(got);
	json_decref(v);
}

static void test_yamlout_layout_as_kubectl(void **state)
{
	expect_yaml(json_pack("{s:s, s:{s:{s:s}}, s:[{s:s, s:[s, s]}, {s:s}], s:i, s:b, s:n, "
			      "s:{}, s:[]}",
			      "kind", "Pod", "metadata", "labels", "app", "x", "containers",
			      "name", "a", "command", "sh", "run", "name", "b", "num", -7, "t", 1,
			      "z", "o", "l"),
		    "kind: Pod\n"
		    "metadata:\n"
		    "  labels:\n"
		    "    app: x\n"
		    "containers:\n"
		    "- name: a\n"
		    "  command:\n"
		    "  - sh\n"
		    "  - run\n"
		    "- name: b\n"
		    "num: -7\n"
		    "t: true\n"
		    "z: null\n"
		    "o: {}\n"
		    "l: []\n");
	/* a sequence in a sequence, an empty top level */
	expect_yaml(json_pack("[[s, s], [], {}]", "a", "b"), "-\n  - a\n  - b\n- []\n- {}\n");
	expect_yaml(json_object(), "{}\n");
}

static void test_yamlout_plain_or_quoted(void **state)
{
	static const struct {
		const char *s, *written;
	} w[] = {
		{ "agent", "agent" }, { "/workspace", "/workspace" },
		{ "burstmeter.io/run", "burstmeter.io/run" },
		{ "RuntimeDefault", "RuntimeDefault" }, { "_x", "_x" },
		{ "a-b.c_d/e", "a-b.c_d/e" },
		/* numbers, quantities, YAML 1.1 booleans and null: quoted */
		{ "2", "\"2\"" }, { "500m", "\"500m\"" }, { "2Gi", "\"2Gi\"" },
		{ "1e3", "\"1e3\"" },
		{ "yes", "\"yes\"" }, { "No", "\"No\"" }, { "ON", "\"ON\"" }, { "off", "\"off\"" },
		{ "y", "\"y\"" }, { "n", "\"n\"" }, { "true", "\"true\"" }, { "Null", "\"Null\"" },
		/* indicators and structure */
		{ "", "\"\"" }, { "-m", "\"-m\"" }, { ".inf", "\".inf\"" }, { "~", "\"~\"" },
		{ "a: b", "\"a: b\"" }, { "a#b", "\"a#b\"" }, { "[x]", "\"[x]\"" },
		{ "{x}", "\"{x}\"" },
		{ "x,y", "\"x,y\"" }, { "*a", "\"*a\"" }, { "&a", "\"&a\"" }, { "!t", "\"!t\"" },
		{ "|", "\"|\"" }, { ">", "\">\"" }, { "%x", "\"%x\"" }, { "@x", "\"@x\"" },
		{ "`x", "\"`x\"" },
		{ "a b", "\"a b\"" }, { " a", "\" a\"" }, { "a ", "\"a \"" },
		{ "10.0.0.0/8", "\"10.0.0.0/8\"" },
		{ "registry.example/agent:1.2", "\"registry.example/agent:1.2\"" },
		/* escapes: quote, backslash, controls, the YAML 1.1 line breaks */
		{ "say \"hi\"", "\"say \\\"hi\\\"\"" }, { "C:\\dir", "\"C:\\\\dir\"" },
		{ "a\nb", "\"a\\nb\"" }, { "a\tb", "\"a\\tb\"" }, { "a\rb", "\"a\\x0db\"" },
		{ "\x1b[2J", "\"\\x1b[2J\"" }, { "del\x7f", "\"del\\x7f\"" },
		{ "nel\xc2\x85", "\"nel\\N\"" },
		{ "ls\xe2\x80\xa8ps\xe2\x80\xa9", "\"ls\\Lps\\P\"" },
		{ "\xef\xbb\xbf" "bom", "\"\\uFEFFbom\"" }, { "caf\xc3\xa9", "\"caf\xc3\xa9\"" },
	};
	char want[128];
	size_t i;

	for (i = 0; i < N(w); i++) {
		snprintf(want, sizeof(want), "k: %s\n", w[i].written);
		expect_yaml(json_pack("{s:s}", "k", w[i].s), want);
	}
	/* keys follow the same rules */
	expect_yaml(json_pack("{s:i, s:i}", "2", 1, "a: b", 2), "\"2\": 1\n\"a: b\": 2\n");
}

/* Whatever the string, libyaml reads back the same string (and the same structure). */
static void test_yamlout_reads_back_equal(void **state)
{
	static const char *const hostile[] = {
		"", "2", "-", "- x", "? x", ": x", "x:", "#", "'", "\"", "\\", "\n", "\n\n", " ",
		"\t",
		"yes", "NO", "~", "null", "0x1f", "0o17", "1_000", "+1", ".5", "1:30", "2026-11-30",
		"<<", "=", "a\\nb", "\x01\x02\x1f", "\xc2\x85\xe2\x80\xa8\xe2\x80\xa9\xef\xbb\xbf",
		"\xf0\x9f\x9a\x80 rocket", "--- doc", "...", "%YAML 1.2", "!!str x", "&a *a",
	};
	json_t *doc = json_object(), *arr = json_array(), *back;
	char key[16], *text;
	size_t i;
	int err;

	for (i = 0; i < N(hostile); i++) {
		snprintf(key, sizeof(key), "k%zu", i);
		json_object_set_new(doc, key, json_string(hostile[i]));
		json_object_set_new(doc, hostile[i], json_integer((json_int_t)i));
		json_array_append_new(arr, json_string(hostile[i]));
	}
	json_object_set_new(doc, "list", arr);
	json_object_set_new(doc, "nested", json_pack("[{s:[{s:s}]}]", "a", "b", "c"));
	text = write(doc, &err);
	assert_int_equal(err, 0);
	back = yc_load(text, strlen(text));
	if (!back || json_array_size(back) != 1 || !json_equal(json_array_get(back, 0), doc))
		fail_msg("did not read back equal:\n%s", text);
	json_decref(back);
	json_decref(doc);
	free(text);
}

static void test_yamlout_refuses_a_scalar(void **state)
{
	json_t *s = json_string("x");
	int err;
	char *t = write(s, &err);

	assert_int_equal(err, -EINVAL);
	assert_string_equal(t, "");
	free(t);
	json_decref(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yamlout_layout_as_kubectl),
		cmocka_unit_test(test_yamlout_plain_or_quoted),
		cmocka_unit_test(test_yamlout_reads_back_equal),
		cmocka_unit_test(test_yamlout_refuses_a_scalar),
	};

	return cmocka_run_group_tests_name("yamlout", tests, NULL, NULL);
}

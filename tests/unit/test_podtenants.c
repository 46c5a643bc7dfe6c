// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter podtenants` (user/cli/pod_cmds.c over user/agent/podtenants.h):
 * pod objects shaped as the API's (tests/fixtures/pods/tenants: a watch
 * with --output-watch-events, a List) into the agent's pod_tenants file.
 * The file must equal CASE.MODE.expected; a label wins, the namespace only
 * with --namespace, a bad value is no tenant, a deleted pod leaves; the
 * file is replaced by rename (a reader holding the old one keeps it whole)
 * and nothing else is left in its directory; bad usage exits 125.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/podtenants.h"
#include "base/common.h"
#include "base/parse.h"
#include "cli/pod_cmds.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static char dir[] = "/tmp/bm-podtenants.XXXXXX";

static void fixture(char *buf, size_t len, const char *name)
{
	char src[] = __FILE__, *slash = strrchr(src, '/');

	if (slash)
		*slash = '\0';
	slash = strrchr(src, '/');
	if (slash) {
		*slash = '\0';
		snprintf(buf, len, "%s/fixtures/pods/tenants/%s", src, name);
	} else {
		snprintf(buf, len, "tests/fixtures/pods/tenants/%s", name);
	}
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *b = calloc(1, 1 << 16);

	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	assert_non_null(b);
	b[fread(b, 1, (1 << 16) - 1, f)] = '\0';
	fclose(f);
	return b;
}

/* The files in dir, other than out: none may be left (no temporary file). */
static int others(const char *out)
{
	struct dirent *d;
	DIR *dp = opendir(dir);
	int n = 0;

	assert_non_null(dp);
	while ((d = readdir(dp)))
		n += strcmp(d->d_name, ".") && strcmp(d->d_name, "..") && strcmp(d->d_name, out);
	closedir(dp);
	return n;
}

static int cmd(char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	return bm_cmd_podtenants(argc, argv);
}

#define CMD(...) cmd((char *[]){ "podtenants", __VA_ARGS__, NULL })

static void expect_file(const char *path, const char *expected)
{
	char want[512];
	char *got, *w;

	fixture(want, sizeof(want), expected);
	got = slurp(path);
	w = slurp(want);
	if (strcmp(got, w))
		fail_msg("%s differs from %s; got:\n%s", path, want, got);
	free(got);
	free(w);
}

static int setup(void **state)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char path[512];
	struct dirent *d;
	DIR *dp = opendir(dir);

	while (dp && (d = readdir(dp))) {
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
			unlink(path);
	}
	if (dp)
		closedir(dp);
	return rmdir(dir);
}

static void test_podtenants_watch_by_label_and_by_namespace(void **state)
{
	char in[512], out[512];

	fixture(in, sizeof(in), "watch-events.json");
	snprintf(out, sizeof(out), "%s/label", dir);
	assert_int_equal(CMD("--out", out, in), 0);
	expect_file(out, "watch-events.label.expected");
	snprintf(out, sizeof(out), "%s/ns", dir);
	assert_int_equal(CMD("-o", out, "--namespace", in), 0);
	expect_file(out, "watch-events.namespace.expected");
	/* a List (kubectl get -o json), with a label key of our own */
	fixture(in, sizeof(in), "list.json");
	snprintf(out, sizeof(out), "%s/team", dir);
	assert_int_equal(CMD("--label", "team", "--out", out, in), 0);
	expect_file(out, "list.team.expected");
	unlink(out);
	snprintf(out, sizeof(out), "%s/ns", dir);
	unlink(out);
	snprintf(out, sizeof(out), "%s/label", dir);
	assert_int_equal(others("label"), 0);
	unlink(out);
}

static void test_podtenants_map_rules(void **state)
{
	struct bm_podtenants_opts lbl = { BM_PODTENANTS_LABEL, false }, ns = { "", true };
	char t[BM_NAME_MAX + 1];
	json_t *p;

	p = json_pack("{s:s, s:{s:s, s:s, s:{s:s}}}", "kind", "Pod", "metadata", "uid", "u1",
		      "namespace", "team-x", "labels", BM_PODTENANTS_LABEL, "acme");
	assert_int_equal(bm_podtenant_of(p, &lbl, t, sizeof(t)), 0);
	assert_string_equal(t, "acme");
	assert_int_equal(bm_podtenant_of(p, &ns, t, sizeof(t)), 0);
	assert_string_equal(t, "team-x");
	json_decref(p);
	/* a value longer than a tenant may be: none (64 is the most) */
	p = json_pack("{s:{s:{s:s}}}", "metadata", "labels", BM_PODTENANTS_LABEL,
		      "a1234567890123456789012345678901234567890123456789012345678901234");
	assert_int_equal(bm_podtenant_of(p, &lbl, t, sizeof(t)), -ENOENT);
	json_decref(p);
	p = json_pack("{s:{s:s}}", "metadata", "namespace", "..");
	assert_int_equal(bm_podtenant_of(p, &ns, t, sizeof(t)), -ENOENT);
	json_decref(p);
}

static void test_podtenants_feed_counts_changes_and_refuses(void **state)
{
	struct bm_podtenants_opts o = { BM_PODTENANTS_LABEL, false };
	struct bm_podtenants *t = bm_podtenants__new();
	char err[256] = "";
	json_t *d;

	assert_non_null(t);
	d = json_pack("{s:s, s:{s:s, s:{s:s}}}", "kind", "Pod", "metadata", "uid",
		      "0f0e0d0c-1111-4222-8333-444455556666", "labels", BM_PODTENANTS_LABEL, "acme");
	assert_int_equal(bm_podtenants__feed(t, d, &o, err, sizeof(err)), 1);
	/* the same again changes nothing: the file is not rewritten */
	assert_int_equal(bm_podtenants__feed(t, d, &o, err, sizeof(err)), 0);
	json_decref(d);
	/* a uid the agent could never see in a cgroup path is not written */
	d = json_pack("{s:s, s:{s:s, s:{s:s}}}", "kind", "Pod", "metadata", "uid", "../x y",
		      "labels", BM_PODTENANTS_LABEL, "acme");
	assert_int_equal(bm_podtenants__feed(t, d, &o, err, sizeof(err)), 0);
	json_decref(d);
	assert_int_equal(bm_podtenants__count(t), 1);
	d = json_pack("{s:s, s:{s:s}}", "type", "ERROR", "object", "message", "too old");
	assert_int_equal(bm_podtenants__feed(t, d, &o, err, sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "too old"));
	json_decref(d);
	d = json_pack("{s:s, s:{}}", "kind", "Service", "metadata");
	assert_int_equal(bm_podtenants__feed(t, d, &o, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "not a Pod"));
	json_decref(d);
	d = json_pack("{s:s, s:{}}", "type", "SOMETHING", "object");
	assert_int_equal(bm_podtenants__feed(t, d, &o, err, sizeof(err)), -EINVAL);
	json_decref(d);
	bm_podtenants__free(t);
}

/* Replaced by rename: a reader that opened the old file reads it whole. */
static void test_podtenants_write_is_atomic(void **state)
{
	struct bm_podtenants_opts o = { BM_PODTENANTS_LABEL, false };
	struct bm_podtenants *t = bm_podtenants__new();
	char out[512], err[256], buf[512];
	struct stat a, b;
	FILE *old;
	json_t *d;
	size_t n;

	snprintf(out, sizeof(out), "%s/pod_tenants", dir);
	assert_int_equal(bm_podtenants__write(t, out), 0);
	assert_int_equal(stat(out, &a), 0);
	assert_int_equal(a.st_mode & 0777, 0644);
	old = fopen(out, "r");
	assert_non_null(old);
	d = json_pack("{s:s, s:{s:s, s:{s:s}}}", "kind", "Pod", "metadata", "uid", "abc",
		      "labels", BM_PODTENANTS_LABEL, "acme");
	assert_int_equal(bm_podtenants__feed(t, d, &o, err, sizeof(err)), 1);
	json_decref(d);
	assert_int_equal(bm_podtenants__write(t, out), 0);
	assert_int_equal(stat(out, &b), 0);
	assert_int_not_equal(a.st_ino, b.st_ino);
	n = fread(buf, 1, sizeof(buf) - 1, old);
	buf[n] = '\0';
	fclose(old);
	assert_string_equal(buf, "# <pod uid> <tenant>: burstmeter podtenants, 0 pods\n");
	assert_int_equal(others("pod_tenants"), 0);
	/* a directory that is not there: an error, and nothing made */
	snprintf(out, sizeof(out), "%s/none/pod_tenants", dir);
	assert_int_equal(bm_podtenants__write(t, out), -ENOENT);
	bm_podtenants__free(t);
	snprintf(out, sizeof(out), "%s/pod_tenants", dir);
	unlink(out);
}

static void test_podtenants_bad_usage(void **state)
{
	char out[512];

	snprintf(out, sizeof(out), "%s/bad", dir);
	assert_int_equal(CMD("/dev/null"), BM_EXIT_USAGE);
	assert_int_equal(CMD("--out", out, "--label", "Not A Key", "/dev/null"), BM_EXIT_USAGE);
	assert_int_equal(CMD("--out", out, "--label", ""), BM_EXIT_USAGE);
	assert_int_equal(CMD("--out", out, "a", "b"), BM_EXIT_USAGE);
	assert_int_equal(CMD("--out", out, "--"), BM_EXIT_USAGE);
	assert_int_equal(CMD("--out", out, "--nope"), BM_EXIT_USAGE);
	assert_int_equal(others(""), 0);
	/* input that is no pod: 125, the file written empty at the start stays so */
	assert_int_equal(CMD("--out", out, "/etc/hostname"), BM_EXIT_USAGE);
	unlink(out);
	assert_int_equal(others(""), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_podtenants_watch_by_label_and_by_namespace),
		cmocka_unit_test(test_podtenants_map_rules),
		cmocka_unit_test(test_podtenants_feed_counts_changes_and_refuses),
		cmocka_unit_test(test_podtenants_write_is_atomic),
		cmocka_unit_test(test_podtenants_bad_usage),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

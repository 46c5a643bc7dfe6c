// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/cli/run_opts.h bm_run_parse_args(): input is validated before anything is
 * created, and a bad value gets one line on stderr naming the flag
 * (docs/DESIGN.md). stdout and stderr are captured around every call so the
 * tests can hold the parser to that, and so --help does not mix into TAP.
 */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/run_opts.h"

#define MIB (1024ULL * 1024)
#define TIB (MIB * MIB)
#define NS_PER_S 1000000000ULL
#define NS_PER_MS 1000000ULL
#define C64 "0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789ABCDEF"

static char out_buf[1 << 14], err_buf[1 << 14];

static void read_back(FILE *f, char *buf, size_t len)
{
	size_t n;

	fflush(f);
	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/* Parse a NULL-terminated vector (argv[0] is "run") with stdout/stderr captured. */
static int parse_v(struct bm_run_opts *o, char **argv)
{
	FILE *out = tmpfile(), *err = tmpfile();
	int argc = 0, saved_out, saved_err, rc;

	assert_non_null(out);
	assert_non_null(err);
	while (argv[argc])
		argc++;
	fflush(stdout);
	fflush(stderr);
	saved_out = dup(STDOUT_FILENO);
	saved_err = dup(STDERR_FILENO);
	dup2(fileno(out), STDOUT_FILENO);
	dup2(fileno(err), STDERR_FILENO);
	rc = bm_run_parse_args(argc, argv, o);
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, STDOUT_FILENO);
	dup2(saved_err, STDERR_FILENO);
	close(saved_out);
	close(saved_err);
	read_back(out, out_buf, sizeof(out_buf));
	read_back(err, err_buf, sizeof(err_buf));
	return rc;
}

#define PARSE(o, ...) parse_v((o), (char *[]){ "run", __VA_ARGS__, NULL })

/* A valid parse says nothing: stderr is for errors, stdout for data. */
static void assert_quiet(void)
{
	if (err_buf[0] || out_buf[0])
		fail_msg("unexpected output: stdout '%s' stderr '%s'", out_buf, err_buf);
}

static void test_parse_args_defaults(void **state)
{
	struct bm_run_opts o;

	assert_int_equal(PARSE(&o, "--", "true"), 1);
	assert_quiet();
	assert_string_equal(o.tenant, "default");
	assert_int_equal(o.window_ns, 10 * NS_PER_MS);
	assert_null(o.intent);
	assert_null(o.policy);
	assert_null(o.outcome);
	assert_int_equal(o.limits.cpu_milli, 0);
	assert_int_equal(o.limits.memory_bytes, 0);
	assert_int_equal(o.limits.pids, 0);
	assert_int_equal(o.limits.timeout_ns, 0);
	assert_false(o.json || o.hist || o.quiet || o.verbose || o.meter_hash);
	assert_string_equal(o.argv[0], "true");
	assert_null(o.argv[1]);
}

static void test_parse_args_generated_id_is_a_name(void **state)
{
	struct bm_run_opts a, b;

	assert_int_equal(PARSE(&a, "--", "true"), 1);
	assert_int_equal(PARSE(&b, "--", "true"), 1);
	assert_non_null(a.id);
	assert_true(bm_valid_name(a.id));
	assert_int_equal(strncmp(a.id, "run-", 4), 0);
	assert_true(strlen(a.id) > 4);
	/* two runs in the same second must not share an id (and a cgroup) */
	assert_string_not_equal(a.id, b.id);
}

static void test_parse_args_every_flag_sets_its_field(void **state)
{
	char policy[] = "/tmp/bm-test-policy-XXXXXX";
	int fd = mkstemp(policy);
	struct bm_run_opts o;
	int rc;

	assert_true(fd >= 0);
	close(fd);
	rc = PARSE(&o, "--id", "tc-42", "--tenant", "acme", "--intent", "run the tests \xc3\xa9",
		   "--cpu", "1500m", "--memory", "1.5G", "--pids", "64", "--timeout", "250ms",
		   "--window-ms", "50", "--policy", policy, "--outcome", "/tmp/o.json", "--json",
		   "--hist", "-q", "-v", "--meter-hash", "--io-read-bps", "50M", "--io-write-bps", "20Mi",
		   "--io-iops", "300", "--", "pytest", "-x");
	unlink(policy);
	assert_int_equal(rc, 1);
	assert_quiet();
	assert_string_equal(o.id, "tc-42");
	assert_string_equal(o.tenant, "acme");
	assert_string_equal(o.intent, "run the tests \xc3\xa9");
	assert_int_equal(o.limits.cpu_milli, 1500);
	assert_int_equal(o.limits.memory_bytes, 1536 * MIB);
	assert_int_equal(o.limits.pids, 64);
	assert_int_equal(o.limits.timeout_ns, 250 * NS_PER_MS);
	assert_int_equal(o.limits.io_read_bps, 50 * MIB);
	assert_int_equal(o.limits.io_write_bps, 20 * MIB);
	assert_int_equal(o.limits.io_iops, 300);
	assert_int_equal(o.window_ns, 50 * NS_PER_MS);
	assert_string_equal(o.policy, policy);
	assert_string_equal(o.outcome, "/tmp/o.json");
	assert_true(o.json && o.hist && o.quiet && o.verbose && o.meter_hash);
	assert_string_equal(o.argv[0], "pytest");
	assert_string_equal(o.argv[1], "-x");
	assert_null(o.argv[2]);

	/* long forms and --opt=value */
	assert_int_equal(PARSE(&o, "--id=tc-1", "--window-ms=20", "--quiet", "--verbose",
			       "--outcome", "-", "--", "true"), 1);
	assert_string_equal(o.id, "tc-1");
	assert_int_equal(o.window_ns, 20 * NS_PER_MS);
	assert_true(o.quiet && o.verbose);
	assert_string_equal(o.outcome, "-");
}

static void test_parse_args_accepts_range_edges(void **state)
{
	char intent[BM_INTENT_MAX + 1];
	struct bm_run_opts o;

	memset(intent, 'i', BM_INTENT_MAX);
	intent[BM_INTENT_MAX] = '\0';
	assert_int_equal(PARSE(&o, "--tenant", C64, "--intent", intent, "--cpu", "0.001",
			       "--memory", "1M", "--pids", "1", "--timeout", "1ms",
			       "--window-ms", "1", "--", "true"), 1);
	assert_quiet();
	assert_string_equal(o.tenant, C64);
	assert_int_equal(strlen(o.intent), BM_INTENT_MAX);
	assert_int_equal(o.limits.cpu_milli, 1);
	assert_int_equal(o.limits.memory_bytes, MIB);
	assert_int_equal(o.limits.pids, 1);
	assert_int_equal(o.limits.timeout_ns, NS_PER_MS);
	assert_int_equal(o.window_ns, NS_PER_MS);
	assert_int_equal(PARSE(&o, "--cpu", "1024", "--memory", "64T", "--pids", "4194304",
			       "--timeout", "604800", "--window-ms", "1000", "--", "true"), 1);
	assert_int_equal(o.limits.cpu_milli, 1024000);
	assert_int_equal(o.limits.memory_bytes, 64 * TIB);
	assert_int_equal(o.limits.pids, 4194304);
	assert_int_equal(o.limits.timeout_ns, 604800 * NS_PER_S);
	assert_int_equal(o.window_ns, 1000 * NS_PER_MS);
}

static void test_parse_args_command_boundaries(void **state)
{
	struct bm_run_opts o;

	/* without "--" the first word that is not an option starts the command */
	assert_int_equal(PARSE(&o, "--id", "x", "ls", "-l", "--id", "y"), 1);
	assert_string_equal(o.id, "x");
	assert_string_equal(o.argv[0], "ls");
	assert_string_equal(o.argv[1], "-l");
	assert_string_equal(o.argv[2], "--id");
	assert_string_equal(o.argv[3], "y");
	assert_null(o.argv[4]);
	/* after "--" even an option-looking word is the command */
	assert_int_equal(PARSE(&o, "--", "--weird", "--help"), 1);
	assert_string_equal(o.argv[0], "--weird");
	assert_string_equal(o.argv[1], "--help");
	assert_quiet();
}

static void test_parse_args_help(void **state)
{
	struct bm_run_opts o;

	assert_int_equal(PARSE(&o, "--help"), 0);
	assert_int_equal(strncmp(out_buf, "Usage: burstmeter run", 21), 0);
	assert_string_equal(err_buf, "");
	assert_int_equal(PARSE(&o, "--id", "x", "-h", "--", "true"), 0);
	assert_int_equal(strncmp(out_buf, "Usage: burstmeter run", 21), 0);
}

/* s with newlines shown as \n, so a failure report stays one TAP line */
static const char *oneline(const char *s)
{
	static char buf[4][1024];
	static int next;
	char *b = buf[next++ & 3], *d = b;

	for (; *s && d < b + sizeof(buf[0]) - 3; s++) {
		if (*s == '\n') {
			*d++ = '\\';
			*d++ = 'n';
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
	return b;
}

/* -EINVAL, nothing on stdout, and exactly one line on stderr that names what: */
static void check_rejected(char **argv, const char *what)
{
	struct bm_run_opts o;
	char *nl;
	int rc = parse_v(&o, argv);

	nl = strchr(err_buf, '\n');
	if (rc != -EINVAL || out_buf[0] || !nl || nl[1] || !strstr(err_buf, what))
		fail_msg("run %s %s ...: rc %d, stderr '%s', want -EINVAL and one line naming %s",
			 argv[1] ? oneline(argv[1]) : "",
			 argv[1] && argv[2] ? oneline(argv[2]) : "", rc, oneline(err_buf), what);
}

#define REJECT(what, ...) check_rejected((char *[]){ "run", __VA_ARGS__, NULL }, what)

static void test_parse_args_rejects_bad_names(void **state)
{
	REJECT("--id", "--id", "", "--", "true");
	REJECT("--id", "--id", ".hidden", "--", "true");
	REJECT("--id", "--id", "..", "--", "true");
	REJECT("--id", "--id", "a/b", "--", "true");
	REJECT("--id", "--id", "a b", "--", "true");
	REJECT("--id", "--id", C64 "x", "--", "true");
	REJECT("--tenant", "--tenant", C64 "x", "--", "true");
	REJECT("--tenant", "--tenant", ".acme", "--", "true");
	REJECT("--tenant", "--tenant", "", "--", "true");
}

static void test_parse_args_rejects_bad_intent(void **state)
{
	char intent[BM_INTENT_MAX + 2];

	memset(intent, 'i', BM_INTENT_MAX + 1);
	intent[BM_INTENT_MAX + 1] = '\0';
	REJECT("--intent", "--intent", intent, "--", "true");
	/* JSON carries UTF-8: no overlongs, surrogates, truncations or stray bytes */
	REJECT("--intent", "--intent", "\xc0\xaf", "--", "true");
	REJECT("--intent", "--intent", "\xe0\x80\xaf", "--", "true");
	REJECT("--intent", "--intent", "\xed\xa0\x80", "--", "true");
	REJECT("--intent", "--intent", "ok \xe2\x82", "--", "true");
	REJECT("--intent", "--intent", "\xe2\x82 ok", "--", "true");
	REJECT("--intent", "--intent", "\xff", "--", "true");
	REJECT("--intent", "--intent", "\x80", "--", "true");
	REJECT("--intent", "--intent", "\xf4\x90\x80\x80", "--", "true");	/* > U+10FFFF */
}

static void test_parse_args_rejects_bad_numbers(void **state)
{
	static const char *const bad[][2] = {
		{ "--cpu", "0" }, { "--cpu", "-1" }, { "--cpu", "abc" }, { "--cpu", "2000" },
		{ "--cpu", "" }, { "--cpu", "0.5 " },
		{ "--memory", "0" }, { "--memory", "1K" }, { "--memory", "1P" },
		{ "--memory", "abc" }, { "--memory", "65T" },
		{ "--pids", "0" }, { "--pids", "4194305" }, { "--pids", "-3" }, { "--pids", "1.0" },
		{ "--timeout", "0" }, { "--timeout", "abc" }, { "--timeout", "8d" },
		{ "--timeout", "1e3" }, { "--timeout", "604801" }, { "--timeout", "-5" },
		{ "--window-ms", "0" }, { "--window-ms", "1001" }, { "--window-ms", "12x" },
		{ "--window-ms", "1.5" }, { "--window-ms", "10ms" },
		{ "--io-read-bps", "0" }, { "--io-read-bps", "4095" }, { "--io-write-bps", "2T" },
		{ "--io-write-bps", "fast" }, { "--io-iops", "0" }, { "--io-iops", "1000001" },
		{ "--io-iops", "1.5" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_rejected((char *[]){ "run", (char *)bad[i][0], (char *)bad[i][1], "--",
					   "true", NULL }, bad[i][0]);
}

static void test_parse_args_rejects_bad_paths(void **state)
{
	REJECT("--outcome", "--outcome", "/nonexistent-bm-dir/o.json", "--", "true");
	REJECT("--outcome", "--outcome", "", "--", "true");
	REJECT("--policy", "--policy", "/nonexistent-bm-dir/policy.yaml", "--", "true");
}

static void test_parse_args_rejects_unknown_flags(void **state)
{
	REJECT("--bogus", "--bogus", "--", "true");
	REJECT("-x", "-x", "--", "true");
}

static void test_parse_args_rejects_missing_or_extra_values(void **state)
{
	/* the flag is the last word: getopt has nothing to give it */
	REJECT("--id", "--id");
	REJECT("--cpu", "--cpu");
	REJECT("--outcome", "--outcome");
	/* a switch given a value */
	REJECT("--json", "--json=yes", "--", "true");
}

static void test_parse_args_rejects_missing_command(void **state)
{
	check_rejected((char *[]){ "run", NULL }, "command");
	REJECT("command", "--id", "x");
	REJECT("command", "--");
	REJECT("command", "--", "");
	REJECT("command", "--json", "--", "");
}

static void test_parse_args_error_stays_one_line(void **state)
{
	/* a hostile value must not forge a second line in the log */
	REJECT("--id", "--id", "a\nburstmeter: all good", "--", "true");
	REJECT("--tenant", "--tenant", "\n", "--", "true");
}

/* ------------------------------------------------------------ the sandbox flags */

static void test_sandbox_flags_default_to_none(void **state)
{
	struct bm_run_opts o;

	assert_int_equal(PARSE(&o, "--", "true"), 1);
	assert_int_equal(o.sb.sb.network_policy, BM_NET_FULL);
	assert_false(o.sb.isolate || o.sb.set_user || o.sb.clean_env);
	assert_false(o.sb.sb.read_only_root_fs || o.sb.sb.run_as_non_root ||
		     o.sb.sb.drop_all_capabilities);
	assert_int_equal(o.sb.sb.max_ephemeral_storage, 0);
	assert_string_equal(bm_sandbox_workspace(&o.sb.sb), "");
	assert_string_equal(o.sb.cwd, "");
	assert_int_equal(o.sb.n_env, 0);
	assert_int_equal(o.sb.sb.n_cidrs, 0);
}

/* Each flag sets its key of the request's sandbox, as an agent's request would have it. */
static void test_sandbox_flags_set_their_keys(void **state)
{
	char ws[] = "/tmp/bm-test-ws-XXXXXX", cwd[PATH_MAX + 8], real[PATH_MAX];
	struct bm_run_opts o;
	int rc;

	assert_non_null(mkdtemp(ws));
	assert_non_null(realpath(ws, real));
	snprintf(cwd, sizeof(cwd), "%s", real);
	rc = PARSE(&o, "--network", "restricted", "--allow-egress", "127.0.0.2/32", "--allow-egress",
		   "2001:db8::/32", "--read-only-root", "--tmp-size", "16M", "--workspace", ws,
		   "--user", "1000:2000", "--drop-caps", "--clean-env", "--env", "A=1", "--env",
		   "B=x=y", "--cwd", cwd, "--", "true");
	rmdir(ws);
	assert_int_equal(rc, 1);
	assert_quiet();
	assert_int_equal(o.sb.sb.network_policy, BM_NET_EGRESS_ALLOW_LIST);
	assert_int_equal(o.sb.sb.n_cidrs, 2);
	assert_int_equal(o.sb.sb.cidrs[0].prefix, 32);
	assert_int_equal(o.sb.sb.cidrs[1].prefix, 32);
	assert_true(o.sb.sb.read_only_root_fs);
	assert_int_equal(o.sb.sb.max_ephemeral_storage, 16 * MIB);
	assert_string_equal(o.sb.sb.workspace, real);
	assert_true(o.sb.set_user && o.sb.user_flag);
	assert_int_equal(o.sb.uid, 1000);
	assert_int_equal(o.sb.gid, 2000);
	/* a uid that is not 0 is what the request calls run_as_non_root */
	assert_true(o.sb.sb.run_as_non_root);
	assert_true(o.sb.sb.drop_all_capabilities);
	assert_true(o.sb.clean_env);
	assert_int_equal(o.sb.n_env, 2);
	assert_string_equal(o.sb.env[1], "B=x=y");
	assert_string_equal(o.sb.cwd, real);
	assert_true(o.sb.isolate);

	/* each alone: what it implies, and what it does not */
	assert_int_equal(PARSE(&o, "--network", "none", "--", "true"), 1);
	assert_int_equal(o.sb.sb.network_policy, BM_NET_NONE);
	assert_true(o.sb.isolate);
	assert_int_equal(PARSE(&o, "--allow-egress", "10.0.0.0/8", "--", "true"), 1);
	assert_int_equal(o.sb.sb.network_policy, BM_NET_EGRESS_ALLOW_LIST);
	assert_int_equal(PARSE(&o, "--network", "full", "--", "true"), 1);
	assert_false(o.sb.isolate);
	assert_int_equal(PARSE(&o, "--tmp-size", "1M", "--", "true"), 1);
	assert_false(o.sb.sb.read_only_root_fs);
	assert_int_equal(o.sb.sb.max_ephemeral_storage, MIB);
	assert_true(o.sb.isolate);
	/* the rest read-only: a workspace is for writing there alone */
	assert_int_equal(PARSE(&o, "--workspace", "/tmp", "--", "true"), 1);
	assert_true(o.sb.sb.read_only_root_fs);
	assert_int_equal(PARSE(&o, "--env", "A=1", "--cwd", "/", "--", "true"), 1);
	assert_false(o.sb.isolate || o.sb.clean_env);
	assert_int_equal(PARSE(&o, "--drop-caps", "--", "true"), 1);
	assert_true(o.sb.isolate);
	assert_false(o.sb.set_user);
	assert_quiet();
}

static void test_sandbox_user_names_and_non_root(void **state)
{
	struct passwd *pw = getpwnam("nobody");
	struct bm_run_opts o;

	assert_non_null(pw);
	assert_int_equal(PARSE(&o, "--user", "nobody", "--", "true"), 1);
	assert_int_equal(o.sb.uid, pw->pw_uid);
	assert_int_equal(o.sb.gid, pw->pw_gid);
	/* a numeric uid with a user takes that user's group */
	assert_int_equal(PARSE(&o, "--user", "65534", "--", "true"), 1);
	assert_int_equal(o.sb.gid, getpwuid(65534) ? getpwuid(65534)->pw_gid : 65534);
	/* one no user has: its own number as its group */
	assert_int_equal(PARSE(&o, "--user", "4000123", "--", "true"), 1);
	assert_int_equal(o.sb.uid, 4000123);
	assert_int_equal(o.sb.gid, 4000123);
	assert_int_equal(PARSE(&o, "--user", "nobody:0", "--", "true"), 1);
	assert_int_equal(o.sb.gid, 0);
	assert_int_equal(PARSE(&o, "--user", "0", "--", "true"), 1);
	assert_false(o.sb.sb.run_as_non_root);
	assert_true(o.sb.set_user);
	/* standalone there is no agent to give a uid: nobody's */
	assert_int_equal(PARSE(&o, "--non-root", "--", "true"), 1);
	assert_true(o.sb.sb.run_as_non_root && o.sb.set_user && !o.sb.user_flag);
	assert_int_equal(o.sb.uid, pw->pw_uid);
	assert_true(o.sb.isolate);
	assert_int_equal(PARSE(&o, "--non-root", "--user", "1000", "--", "true"), 1);
	assert_int_equal(o.sb.uid, 1000);
	assert_quiet();
}

static void test_sandbox_rejects_bad_values(void **state)
{
	static const char *const bad[][3] = {
		{ "--network", "nothing", "--network" }, { "--network", "", "--network" },
		{ "--network", "egress_allow_list", "--network" },
		{ "--allow-egress", "10.0.0.1/8", "10.0.0.0/8" },
		{ "--allow-egress", "abc", "--allow-egress" },
		{ "--allow-egress", "1.2.3.4/33", "--allow-egress" },
		{ "--tmp-size", "0", "--tmp-size" }, { "--tmp-size", "1K", "--tmp-size" },
		{ "--tmp-size", "65T", "--tmp-size" }, { "--tmp-size", "big", "--tmp-size" },
		{ "--workspace", "/nonexistent-bm-ws", "--workspace" },
		{ "--workspace", "/etc/passwd", "--workspace" }, { "--workspace", "/", "--workspace" },
		{ "--user", "nosuchuser-bm", "--user" }, { "--user", "", "--user" },
		{ "--user", ":", "--user" }, { "--user", "1000:", "--user" },
		{ "--user", "1000:nosuchgroup-bm", "--user" }, { "--user", "-1", "--user" },
		{ "--user", "4294967295", "--user" },
		{ "--env", "=x", "--env" }, { "--env", "1A=x", "--env" }, { "--env", "A", "--env" },
		{ "--env", "A B=x", "--env" }, { "--env", "A-B=x", "--env" },
		{ "--cwd", "/nonexistent-bm-dir", "--cwd" }, { "--cwd", "/etc/passwd", "--cwd" },
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_rejected((char *[]){ "run", (char *)bad[i][0], (char *)bad[i][1], "--",
					   "true", NULL }, bad[i][2]);
	/* flags that contradict each other: one line naming the one that cannot be */
	REJECT("--allow-egress", "--network", "none", "--allow-egress", "10.0.0.0/8", "--", "true");
	REJECT("--allow-egress", "--allow-egress", "10.0.0.0/8", "--network", "full", "--", "true");
	REJECT("--non-root", "--non-root", "--user", "0", "--", "true");
	REJECT("--cwd", "--read-only-root", "--cwd", "/tmp", "--", "true");
	REJECT("--cwd", "--tmp-size", "8M", "--cwd", "/tmp", "--", "true");
	/* switches take no value */
	REJECT("--read-only-root", "--read-only-root=yes", "--", "true");
	REJECT("--drop-caps", "--drop-caps=1", "--", "true");
}

static void test_sandbox_bounds_of_the_lists(void **state)
{
	char *argv[2 * 260 + 4], cidrs[65][32], envs[257][16];
	struct bm_run_opts o;
	int n = 0, i;

	argv[n++] = "run";
	for (i = 0; i < 64; i++) {
		snprintf(cidrs[i], sizeof(cidrs[i]), "10.0.%d.0/24", i);
		argv[n++] = "--allow-egress";
		argv[n++] = cidrs[i];
	}
	argv[n++] = "--";
	argv[n++] = "true";
	argv[n] = NULL;
	assert_int_equal(parse_v(&o, argv), 1);
	assert_int_equal(o.sb.sb.n_cidrs, 64);
	snprintf(cidrs[64], sizeof(cidrs[64]), "10.1.0.0/24");
	argv[n - 2] = "--allow-egress";
	argv[n - 1] = cidrs[64];
	argv[n++] = "--";
	argv[n++] = "true";
	argv[n] = NULL;
	check_rejected(argv, "at most 64");
	n = 1;
	for (i = 0; i < 257; i++) {
		snprintf(envs[i], sizeof(envs[i]), "K%d=v", i);
		argv[n++] = "--env";
		argv[n++] = envs[i];
	}
	argv[n++] = "--";
	argv[n++] = "true";
	argv[n] = NULL;
	check_rejected(argv, "at most 256");
}

static void test_sandbox_environment(void **state)
{
	struct bm_run_opts o;
	char **v;
	int i;

	assert_int_equal(PARSE(&o, "--", "true"), 1);
	assert_int_equal(bm_run_sandbox_envp(&o.sb, &v), 0);
	assert_null(v);
	/* clean: the pairs, and a PATH to find commands by */
	assert_int_equal(PARSE(&o, "--clean-env", "--env", "FOO=bar", "--env", "FOO=baz", "--", "true"), 1);
	assert_int_equal(bm_run_sandbox_envp(&o.sb, &v), 0);
	assert_string_equal(v[0], "FOO=baz");
	assert_int_equal(strncmp(v[1], "PATH=/", 6), 0);
	assert_null(v[2]);
	free(v);
	assert_int_equal(PARSE(&o, "--clean-env", "--env", "PATH=/x", "--", "true"), 1);
	assert_int_equal(bm_run_sandbox_envp(&o.sb, &v), 0);
	assert_string_equal(v[0], "PATH=/x");
	assert_null(v[1]);
	free(v);
	/* not clean: ours, with the pair set over ours */
	assert_int_equal(setenv("BM_TEST_SBX", "old", 1), 0);
	assert_int_equal(PARSE(&o, "--env", "BM_TEST_SBX=new", "--env", "BM_TEST_SBX2=2", "--", "true"), 1);
	assert_int_equal(bm_run_sandbox_envp(&o.sb, &v), 0);
	for (i = 0; v[i] && strncmp(v[i], "BM_TEST_SBX=", 12); i++)
		;
	assert_non_null(v[i]);
	assert_string_equal(v[i], "BM_TEST_SBX=new");
	for (i = 0; v[i] && strcmp(v[i], "BM_TEST_SBX2=2"); i++)
		;
	assert_non_null(v[i]);
	for (i = 0; v[i] && strncmp(v[i], "HOME=", 5) && strncmp(v[i], "PATH=", 5); i++)
		;
	assert_non_null(v[i]);
	free(v);
	unsetenv("BM_TEST_SBX");
}

/* Through the agent the command is run's own child: what only root can give it, by flag. */
static void test_sandbox_needs_root_through_the_agent(void **state)
{
	static const struct {
		const char *flag, *arg, *named;
	} cases[] = {
		{ "--network", "none", "--network none" }, { "--read-only-root", NULL, "--read-only-root" },
		{ "--tmp-size", "8M", "--tmp-size" }, { "--workspace", "/tmp", "--workspace" },
		{ "--user", "0", "--user" }, { "--user", "1001", "--user" },
		{ "--user", "1000", NULL }, { "--network", "restricted", NULL },
		{ "--allow-egress", "10.0.0.0/8", NULL }, { "--drop-caps", NULL, NULL },
		{ "--non-root", NULL, NULL }, { "--clean-env", NULL, NULL },
	};
	struct bm_run_opts o;
	const char *got;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].arg)
			assert_int_equal(PARSE(&o, (char *)cases[i].flag, (char *)cases[i].arg, "--", "true"), 1);
		else
			assert_int_equal(PARSE(&o, (char *)cases[i].flag, "--", "true"), 1);
		got = bm_run_sandbox_needs_root(&o.sb, 1000);
		if (cases[i].named ? !got || strcmp(got, cases[i].named) : got != NULL)
			fail_msg("%s %s as uid 1000: %s, want %s", cases[i].flag,
				 cases[i].arg ? cases[i].arg : "", got ? got : "NULL",
				 cases[i].named ? cases[i].named : "NULL");
		assert_null(bm_run_sandbox_needs_root(&o.sb, 0));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_args_defaults),
		cmocka_unit_test(test_parse_args_generated_id_is_a_name),
		cmocka_unit_test(test_parse_args_every_flag_sets_its_field),
		cmocka_unit_test(test_parse_args_accepts_range_edges),
		cmocka_unit_test(test_parse_args_command_boundaries),
		cmocka_unit_test(test_parse_args_help),
		cmocka_unit_test(test_parse_args_rejects_bad_names),
		cmocka_unit_test(test_parse_args_rejects_bad_intent),
		cmocka_unit_test(test_parse_args_rejects_bad_numbers),
		cmocka_unit_test(test_parse_args_rejects_bad_paths),
		cmocka_unit_test(test_parse_args_rejects_unknown_flags),
		cmocka_unit_test(test_parse_args_rejects_missing_or_extra_values),
		cmocka_unit_test(test_parse_args_rejects_missing_command),
		cmocka_unit_test(test_parse_args_error_stays_one_line),
		cmocka_unit_test(test_sandbox_flags_default_to_none),
		cmocka_unit_test(test_sandbox_flags_set_their_keys),
		cmocka_unit_test(test_sandbox_user_names_and_non_root),
		cmocka_unit_test(test_sandbox_rejects_bad_values),
		cmocka_unit_test(test_sandbox_bounds_of_the_lists),
		cmocka_unit_test(test_sandbox_environment),
		cmocka_unit_test(test_sandbox_needs_root_through_the_agent),
	};

	return cmocka_run_group_tests_name("run_opts", tests, NULL, NULL);
}

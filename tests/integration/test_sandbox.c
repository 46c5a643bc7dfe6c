// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter run`'s sandbox flags, each one both ways: standalone (`run
 * --standalone`) and through an agent of the test's own (`run --socket`,
 * where run makes the sandbox for its own child and the agent filters its
 * egress), with the same checks. Writes outside /tmp and the workspace
 * fail and the host never sees /tmp's; the uid is the one asked for; no
 * capability is held or regained (a setuid-root and a file-capability
 * binary give nothing); a connect to a loopback address outside the
 * allow-list is refused while the listed one is reached; the environment
 * and the directory are what was asked. Every outcome says what was asked
 * (its "sandbox") and what held it ("enforcement"). Then the agent's own
 * launch with a workspace (the same conversion), and what is refused before
 * anything exists: a bad flag, and what a caller that is not root cannot
 * have through the agent. Network tests reach loopback only.
 */
#include <arpa/inet.h>
#include <grp.h>
#include <pwd.h>
#include <linux/capability.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/xattr.h>

#include "runner.h"
#include "agent_fx.h"
#include "base/common.h"

enum mode { STANDALONE, AGENT, N_MODES };

static const char *const mode_name[N_MODES] = { "standalone", "through the agent" };

/* A uid no test file belongs to: what --user asks for. */
#define UID_OTHER "65534"

static void agent_start(void)
{
	/* root's tenant is the token (run names it); uids from the default range (900000-965535) */
	agent_start_cfg("", "max_running: 8\nmax_queued: 64\ntenant_max_running: 100\n"
			"admit_cpu_pressure: 100\nadmit_mem_available: 0\nsocket_mode: \"0666\"\n"
			"tenants:\n  - { uid: 0, tenant: %s }\n", token);
}

static int setup_s(void **state)
{
	return agent_fx_setup(state, "sbx", "bmit-sbx");
}

/* Directories a test made, and files a broken sandbox would have let it write: gone after it. */
static char made[8][PATH_MAX];
static unsigned int n_made;

static int forget_probes(void)
{
	static const char *const probes[] = { "/var/tmp/bm-sbx-%s", "/etc/bm-sbx-%s", "/bm-sbx-%s",
					      "/tmp/bm-sbx-%s-priv", "/var/tmp/bm-sbx-%s-x",
					      "/tmp/bm-sbx-%s-tmp" };
	char path[PATH_MAX];
	unsigned int i;
	int found = 0;

	for (i = 0; i < BM_ARRAY_SIZE(probes); i++) {
		snprintf(path, sizeof(path), probes[i], token);
		if (!unlink(path)) {
			print_error("left behind by the effect: %s\n", path);
			found++;
		}
	}
	for (i = 0; i < n_made; i++)
		rm_rf(made[i]);
	n_made = 0;
	return found;
}

static int teardown_s(void **state)
{
	int found = forget_probes();

	return agent_fx_teardown(state) || found ? -1 : 0;
}

/*
 * burstmeter run with our standard options (tenant, id, outcome, -q), in
 * mode m, then args (flags, "--", the command; NULL-terminated).
 */
static struct res *sbx_run(struct fx *f, enum mode m, const char *const *args)
{
	char *argv[MAX_ARGS];
	struct proc p;
	int n = 0;

	snprintf(f->id, sizeof(f->id), "%s-%u", token, ++run_seq);
	argv[n++] = (char *)bm_bin;
	argv[n++] = "run";
	argv[n++] = "--tenant";
	argv[n++] = token;
	argv[n++] = "--id";
	argv[n++] = f->id;
	argv[n++] = "--outcome";
	argv[n++] = f->outcome;
	argv[n++] = "-q";
	if (m == STANDALONE) {
		argv[n++] = "--standalone";
	} else {
		argv[n++] = "--socket";
		argv[n++] = ag.sock;
	}
	while (*args && n < MAX_ARGS - 1)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	res_free(&f->r);
	unlink(f->outcome);
	p = start_argv(argv);
	return finish_bm(f, &p);
}

#define SBX(f, m, ...) sbx_run((f), (m), (const char *const[]){ __VA_ARGS__, NULL })

/* s with newlines shown as \n (NULL as ""), for one line of a note. */
static const char *oneline_of(const char *s)
{
	static char buf[2][2048];
	static int next;
	char *b = buf[next++ & 1], *d = b;

	for (; s && *s && d < b + sizeof(buf[0]) - 3; s++) {
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

/* It ran to its end, metered, with exit 0; what it printed is r->out. */
static void check_ran(struct fx *f, struct res *r, enum mode m)
{
	if (r->status || !r->o)
		fail_msg("%s: exit %d, stdout '%s', stderr '%s'", mode_name[m], r->status,
			 r->out.p ? r->out.p : "", r->err.p ? r->err.p : "");
	check_completed(f, r);
}

/* Every line of want (each ending in \n) is in what the command printed. */
static void check_said(struct res *r, enum mode m, const char *const *want, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!r->out.p || !strstr(r->out.p, want[i]))
			fail_msg("%s: expected '%.*s' in what it said:\n%s", mode_name[m],
				 (int)strlen(want[i]) - 1, want[i], r->out.p ? r->out.p : "");
}

/*
 * The outcome's enforcement.key holds a string containing want; through
 * the agent, so does the agent's own record (GET /v1/effects/ID, the
 * store's outcome), not only what run printed.
 */
static void check_held(struct fx *f, struct res *r, enum mode m, const char *key, const char *want)
{
	char path[64], url[128];
	json_t *v, *e = NULL;

	snprintf(path, sizeof(path), "enforcement.%s", key);
	v = jget(r->o, path);
	if (!json_is_string(v) || !strstr(json_string_value(v), want))
		fail_msg("%s: %s is %s, expected it to say '%s'", mode_name[m], path,
			 v ? json_dumps(v, JSON_ENCODE_ANY) : "missing", want);
	if (m != AGENT)
		return;
	snprintf(url, sizeof(url), "/v1/effects/%s", f->id);
	snprintf(path, sizeof(path), "outcome.enforcement.%s", key);
	assert_int_equal(call("GET", url, NULL, &e), 200);
	v = jget(e, path);
	if (!json_is_string(v) || !strstr(json_string_value(v), want))
		fail_msg("%s: the agent's record of %s has %s %s, expected it to say '%s'",
			 mode_name[m], f->id, path, v ? json_dumps(v, JSON_ENCODE_ANY) : "missing",
			 want);
	json_decref(e);
}

/* Through the agent: its record says whose word enforcement.key is ("caller", or NULL: its own). */
static void check_by(struct fx *f, const char *key, const char *by)
{
	char path[64], url[128];
	json_t *e = NULL;

	snprintf(url, sizeof(url), "/v1/effects/%s", f->id);
	snprintf(path, sizeof(path), "outcome.enforcement.by.%s", key);
	assert_int_equal(call("GET", url, NULL, &e), 200);
	if (by)
		assert_string_equal(json_string_value(jget(e, path)) ?: "missing", by);
	else
		assert_null(jget(e, path));
	json_decref(e);
}

static bool sandbox_flag(struct res *r, const char *key)
{
	char path[64];

	snprintf(path, sizeof(path), "sandbox.%s", key);
	return json_is_true(jget(r->o, path));
}

/* A new directory of ours (mode 0755), removed after the test whatever its end. */
static void make_dir(char *tmpl)
{
	if (!mkdtemp(tmpl))
		fail_msg("mkdtemp %s: %s", tmpl, strerror(errno));
	assert_true(n_made < BM_ARRAY_SIZE(made));
	snprintf(made[n_made++], sizeof(made[0]), "%s", tmpl);
	assert_int_equal(chmod(tmpl, 0755), 0);
}

/*
 * --read-only-root, --tmp-size, --workspace: the workspace (under /tmp, so
 * that the private /tmp must not hide it) takes writes the host sees; the
 * private /tmp takes writes the host never sees; a host directory under
 * /tmp beside the workspace is not there; the root, /etc and /var/tmp
 * refuse. The same script without the flags writes beside the workspace:
 * the check can fail.
 */
static void test_sbx_filesystem(void **state)
{
	struct fx *f = *state;
	char ws[] = "/tmp/bm-sbx-ws.XXXXXX", out[] = "/tmp/bm-sbx-out.XXXXXX";
	char script[4096], file[PATH_MAX + 32], priv[64], real[PATH_MAX], alone[PATH_MAX + 128];
	static const char *const want[] = {
		"ws=rw\n", "tmp=rw\n", "beside=none\n", "vartmp=ro\n", "etc=ro\n", "root=ro\n",
		"tmpsize=16777216\n", "pid=2\n", "init=bm-init\n",
	};
	struct res *r;
	int m;

	agent_start();
	make_dir(ws);
	make_dir(out);
	assert_non_null(realpath(ws, real));
	snprintf(priv, sizeof(priv), "/tmp/bm-sbx-%s-priv", token);
	snprintf(script, sizeof(script),
		 "touch %s/in && echo ws=rw; touch %s && echo tmp=rw;"
		 "touch %s/x 2>/dev/null && echo beside=rw || echo beside=none;"
		 "touch /var/tmp/bm-sbx-%s 2>/dev/null && echo vartmp=rw || echo vartmp=ro;"
		 "touch /etc/bm-sbx-%s 2>/dev/null && echo etc=rw || echo etc=ro;"
		 "touch /bm-sbx-%s 2>/dev/null && echo root=rw || echo root=ro;"
		 "echo tmpsize=$(($(stat -f -c '%%b * %%S' /tmp)));"
		 "echo pid=$$; echo init=$(cat /proc/1/comm)",
		 ws, priv, out, token, token, token);
	for (m = 0; m < N_MODES; m++) {
		r = SBX(f, m, "--workspace", ws, "--tmp-size", "16M", "--", "/bin/sh", "-c", script);
		check_ran(f, r, m);
		integ_note("%s: it said %s", mode_name[m], oneline_of(r->out.p));
		check_said(r, m, want, BM_ARRAY_SIZE(want));
		/* what it wrote in the workspace is the host's; in its /tmp, never */
		snprintf(file, sizeof(file), "%s/in", ws);
		assert_int_equal(access(file, F_OK), 0);
		assert_int_equal(unlink(file), 0);
		assert_int_equal(access(priv, F_OK), -1);
		snprintf(file, sizeof(file), "%s/x", out);
		assert_int_equal(access(file, F_OK), -1);
		/* the outcome: asked (the request's form), and held */
		assert_true(sandbox_flag(r, "read_only_root_fs"));
		assert_string_equal(jstr(r->o, "sandbox.workspace"), real);
		assert_int_equal(jint(r->o, "sandbox.max_ephemeral_storage"), 16 << 20);
		check_held(f, r, m, "read_only_root", "mount_setattr");
		check_held(f, r, m, "tmp", "tmpfs 16 MiB on /tmp");
		check_held(f, r, m, "workspace", real);
		check_held(f, r, m, "namespaces", "pid");
	}
	/* --read-only-root alone: the same walls, a private /tmp of the default size */
	snprintf(script, sizeof(script),
		 "touch %s && echo tmp=rw; touch %s/x 2>/dev/null && echo beside=rw || echo beside=none;"
		 "touch /var/tmp/bm-sbx-%s 2>/dev/null && echo vartmp=rw || echo vartmp=ro;"
		 "touch /etc/bm-sbx-%s 2>/dev/null && echo etc=rw || echo etc=ro;"
		 "echo tmpsize=$(($(stat -f -c '%%b * %%S' /tmp)))", priv, out, token, token);
	for (m = 0; m < N_MODES; m++) {
		r = SBX(f, m, "--read-only-root", "--", "/bin/sh", "-c", script);
		check_ran(f, r, m);
		check_said(r, m, (const char *const[]){ "tmp=rw\n", "beside=none\n", "vartmp=ro\n",
							"etc=ro\n", "tmpsize=67108864\n" }, 5);
		assert_int_equal(access(priv, F_OK), -1);
		assert_true(sandbox_flag(r, "read_only_root_fs"));
		assert_null(jget(r->o, "sandbox.workspace"));
		check_held(f, r, m, "tmp", "tmpfs 64 MiB on /tmp");
		/* --tmp-size alone: a private /tmp of that size over a root that stays writable */
		snprintf(file, sizeof(file), "/tmp/bm-sbx-%s-tmp", token);
		snprintf(alone, sizeof(alone), "touch %s && echo tmp=rw;"
			 "echo tmpsize=$(($(stat -f -c '%%b * %%S' /tmp)))", file);
		r = SBX(f, m, "--tmp-size", "8M", "--", "/bin/sh", "-c", alone);
		check_ran(f, r, m);
		check_said(r, m, (const char *const[]){ "tmp=rw\n", "tmpsize=8388608\n" }, 2);
		assert_int_equal(access(file, F_OK), -1);
		assert_false(sandbox_flag(r, "read_only_root_fs"));
		assert_null(jget(r->o, "enforcement.read_only_root"));
	}
	/* no flag: the host's /tmp, beside the workspace, is written (only there: it is ours) */
	snprintf(script, sizeof(script), "touch %s/x 2>/dev/null && echo beside=rw || echo beside=none", out);
	r = SBX(f, STANDALONE, "--", "/bin/sh", "-c", script);
	check_ran(f, r, STANDALONE);
	check_said(r, STANDALONE, (const char *const[]){ "beside=rw\n" }, 1);
	assert_null(jget(r->o, "enforcement.read_only_root"));
	agent_fx_finish(state);
}

/*
 * --user UID:GID, --user NAME, --user NAME:GROUP, --non-root: every uid and gid of the
 * command's (real, effective, saved, fs) is the one asked for, and no
 * supplementary group is left. --non-root standalone is nobody; through
 * the agent it is the uid the agent gives the tenant (its dynamic range).
 */
static void test_sbx_user(void **state)
{
	static const char script[] =
		"awk '/^(Uid|Gid|Groups|NoNewPrivs):/ {print $1 $2 \",\" $3 \",\" $4 \",\" $5}' "
		"/proc/self/status";
	static const char *const want[] = {
		"Uid:65534,65534,65534,65534\n", "Gid:65534,65534,65534,65534\n", "Groups:,,,\n",
		"NoNewPrivs:1,,,\n",
	};
	struct passwd *pw = getpwuid(65534);
	/* a group other than the user's own (daemon's, gid 1) */
	struct group *gr = getgrgid(1);
	struct fx *f = *state;
	struct res *r;
	char held[64], ug[128];
	const char *u;
	double uid;
	int m;

	agent_start();
	if (!pw || !gr)
		integ_note("no user has uid 65534 or no group gid 1 here: --user NAME[:GROUP] "
			   "is not tried by name");
	for (m = 0; m < N_MODES; m++) {
		r = SBX(f, m, "--user", UID_OTHER ":" UID_OTHER, "--", "/bin/sh", "-c", script);
		check_ran(f, r, m);
		check_said(r, m, want, BM_ARRAY_SIZE(want));
		assert_true(sandbox_flag(r, "run_as_non_root"));
		check_held(f, r, m, "user", "setuid 65534:65534");
		/* by name, where the node names 65534 (the 6.1 VM has no /etc/passwd: unit-tested) */
		if (pw) {
			r = SBX(f, m, "--user", pw->pw_name, "--", "/bin/sh", "-c", script);
			check_ran(f, r, m);
			check_said(r, m, want, 1);
		}
		/* USER:GROUP by names: the group's gid, not the user's primary one by chance */
		if (pw && gr) {
			snprintf(ug, sizeof(ug), "%s:%s", pw->pw_name, gr->gr_name);
			r = SBX(f, m, "--user", ug, "--", "/bin/sh", "-c", script);
			check_ran(f, r, m);
			check_said(r, m, (const char *const[]){ "Uid:65534,65534,65534,65534\n",
							"Gid:1,1,1,1\n", "Groups:,,,\n" }, 3);
			check_held(f, r, m, "user", "setuid 65534:1,");
		}
		r = SBX(f, m, "--non-root", "--", "/bin/sh", "-c", script);
		check_ran(f, r, m);
		u = strstr(r->out.p, "Uid:");
		assert_non_null(u);
		uid = atof(u + 4);
		integ_note("%s: --non-root ran as uid %.0f", mode_name[m], uid);
		if (m == STANDALONE)
			assert_between(uid, 65534, 65534);
		else
			assert_between(uid, 900000, 965535);
		assert_true(sandbox_flag(r, "run_as_non_root"));
		snprintf(held, sizeof(held), "setuid %.0f:", uid);
		check_held(f, r, m, "user", held);
	}
	/* without the flags it runs as we are: the check can fail */
	r = SBX(f, STANDALONE, "--", "/bin/sh", "-c", script);
	check_ran(f, r, STANDALONE);
	check_said(r, STANDALONE, (const char *const[]){ "Uid:0,0,0,0\n" }, 1);
	agent_fx_finish(state);
}

/* A copy of /bin/cat at path, root's, with mode; 0 or fails. */
static void copy_cat(const char *path, mode_t mode)
{
	char cmd[PATH_MAX + 64];

	snprintf(cmd, sizeof(cmd), "cp /bin/cat '%s'", path);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(chown(path, 0, 0), 0);
	assert_int_equal(chmod(path, mode), 0);
}

/* File capabilities on path (as setcap cap_dac_override,cap_dac_read_search,cap_sys_admin+ep). */
static void set_file_caps(const char *path)
{
	struct vfs_cap_data d = { 0 };
	uint32_t caps = 1u << CAP_DAC_OVERRIDE | 1u << CAP_DAC_READ_SEARCH | 1u << CAP_SYS_ADMIN;

	d.magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE;
	d.data[0].permitted = caps;
	if (setxattr(path, "security.capability", &d, XATTR_CAPS_SZ_2, 0))
		fail_msg("setxattr security.capability on %s: %s", path, strerror(errno));
}

static void launch(json_t *req);

/*
 * --drop-caps, as root: every set empty and no_new_privs; a setuid-root
 * binary and one with file capabilities give nothing back; a file only
 * CAP_DAC_OVERRIDE could read stays unread; no user namespace can be
 * made to hold them again (as root and as another uid). Without the flag
 * the same root reads it, and the same uid makes one: the check can fail.
 */
static void test_sbx_drop_caps(void **state)
{
	static const char *const want[] = {
		"CapInh:0000000000000000\n", "CapPrm:0000000000000000\n", "CapEff:0000000000000000\n",
		"CapBnd:0000000000000000\n", "CapAmb:0000000000000000\n", "NoNewPrivs:1\n",
		"suid-CapPrm:0000000000000000\n", "suid-CapEff:0000000000000000\n",
		"secret=denied\n", "fcap-secret=denied\n",
	};
	static const char *const want_userns[] = {
		"unshare-Ur=refused\n", "unshare EPERM\n", "clone EPERM\n", "clone3 ENOSYS\n",
		"thread ok\n", "fork ok\n",
	};
	char dir[] = "/tmp/bm-sbx-caps.XXXXXX", path[PATH_MAX + 32], script[4096];
	char userns[PATH_MAX + 128];
	struct fx *f = *state;
	struct res *r;
	int m, fd, u;

	agent_start();
	make_dir(dir);
	snprintf(path, sizeof(path), "%s/suid-cat", dir);
	copy_cat(path, 04755);
	snprintf(path, sizeof(path), "%s/fcap-cat", dir);
	copy_cat(path, 0755);
	set_file_caps(path);
	/* daemon's (uid 1), its alone: root reads it only with CAP_DAC_OVERRIDE */
	snprintf(path, sizeof(path), "%s/secret", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "secret\n", 7), 7);
	close(fd);
	assert_int_equal(chown(path, 1, 1), 0);
	snprintf(script, sizeof(script),
		 "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs)' /proc/self/status | tr -d ' \\t';"
		 "%s/suid-cat /proc/self/status | grep -E '^Cap(Prm|Eff)' | tr -d ' \\t' | sed 's/^/suid-/';"
		 "if s=$(%s/fcap-cat /proc/self/status 2>/dev/null); then echo \"$s\" | "
		 "grep -E '^Cap(Prm|Eff)' | tr -d ' \\t' | sed 's/^/fcap-/'; else echo fcap=refused; fi;"
		 "cat %s/secret >/dev/null 2>&1 && echo secret=read || echo secret=denied;"
		 "%s/fcap-cat %s/secret >/dev/null 2>&1 && echo fcap-secret=read || echo fcap-secret=denied",
		 dir, dir, dir, dir, dir);
	for (m = 0; m < N_MODES; m++) {
		r = SBX(f, m, "--drop-caps", "--", "/bin/sh", "-c", script);
		check_ran(f, r, m);
		check_said(r, m, want, BM_ARRAY_SIZE(want));
		integ_note("%s, --drop-caps: %s", mode_name[m], oneline_of(r->out.p));
		/*
		 * A binary whose file capabilities are effective is not run at all
		 * when it cannot have them (the kernel's "capability-dumb" rule):
		 * refused, or run with nothing, is what no capability regained is.
		 */
		if (!strstr(r->out.p, "fcap=refused\n"))
			check_said(r, m, (const char *const[]){ "fcap-CapPrm:0000000000000000\n",
								"fcap-CapEff:0000000000000000\n" }, 2);
		assert_true(sandbox_flag(r, "drop_all_capabilities"));
		check_held(f, r, m, "caps", "bounding set empty");
		check_held(f, r, m, "namespaces", "pid");
		/* run made them for its own child: the agent keeps them as its caller's word */
		if (m == AGENT) {
			check_by(f, "caps", "caller");
			check_by(f, "namespaces", "caller");
		}
	}
	/*
	 * No user namespace to regain them in (in one of its own a process holds
	 * every capability over it): unshare(1) -Ur, and bm-userns's unshare(),
	 * clone() and clone3() with CLONE_NEWUSER, as root and as another uid;
	 * threads and forks still work (glibc falls back from clone3 to clone).
	 */
	/* absolute: the agent's launch below runs elsewhere */
	assert_non_null(realpath(wl("bm-userns"), path));
	snprintf(userns, sizeof(userns), "unshare -Ur grep CapEff /proc/self/status 2>/dev/null || "
		 "echo unshare-Ur=refused; %s", path);
	for (m = 0; m < N_MODES; m++) {
		for (u = 0; u < 2; u++) {
			if (u)
				r = SBX(f, m, "--drop-caps", "--user", UID_OTHER, "--", "/bin/sh", "-c",
					userns);
			else
				r = SBX(f, m, "--drop-caps", "--", "/bin/sh", "-c", userns);
			check_ran(f, r, m);
			integ_note("%s, --drop-caps%s, user namespaces: %s", mode_name[m],
				   u ? " --user " UID_OTHER : "", oneline_of(r->out.p));
			check_said(r, m, want_userns, BM_ARRAY_SIZE(want_userns));
			assert_null(strstr(r->out.p, "CapEff"));
			check_held(f, r, m, "caps", "seccomp: no new user namespace");
		}
	}
	/* the agent's own launch with drop_all_capabilities: the same filter (effect/exec.c) */
	{
		static char log[4096];
		char logp[PATH_MAX + 64];
		json_t *e;

		launch(json_pack("{s:s, s:[s, s, s], s:{s:b}}", "id", "caps1", "argv", "/bin/sh",
				 "-c", userns, "sandbox", "drop_all_capabilities", 1));
		e = wait_final("caps1", 20000);
		snprintf(logp, sizeof(logp), "%s/logs/%s@caps1.log", ag.state, token);
		assert_true(bm_read_file(AT_FDCWD, logp, log, sizeof(log)) > 0);
		integ_note("the agent's launch, drop_all_capabilities, user namespaces: %s",
			   oneline_of(log));
		assert_string_equal(jstr(e, "state"), "succeeded");
		for (u = 0; u < (int)BM_ARRAY_SIZE(want_userns); u++)
			assert_non_null(strstr(log, want_userns[u]));
		assert_null(strstr(log, "CapEff"));
		assert_non_null(strstr(jstr(e, "outcome.enforcement.caps"), "seccomp"));
		assert_null(jget(e, "outcome.enforcement.by"));
		json_decref(e);
	}
	/* without --drop-caps the same probe makes one and holds every capability: it can fail */
	if (bm_read_file(AT_FDCWD, "/proc/sys/user/max_user_namespaces", path, sizeof(path)) > 0 &&
	    atoi(path) > 0) {
		r = SBX(f, STANDALONE, "--user", UID_OTHER, "--", "/bin/sh", "-c", userns);
		check_ran(f, r, STANDALONE);
		integ_note("without --drop-caps, --user %s: %s", UID_OTHER, oneline_of(r->out.p));
		check_said(r, STANDALONE, (const char *const[]){ "unshare ok CapEff:",
				"clone ok CapEff:", "clone3 ok CapEff:" }, 3);
		assert_null(strstr(r->out.p, "unshare-Ur=refused"));
		assert_null(strstr(r->out.p, "ok CapEff:0000000000000000"));
	} else {
		integ_note("user namespaces are off on this kernel: no control for the probe");
	}
	r = SBX(f, STANDALONE, "--", "/bin/sh", "-c", script);
	check_ran(f, r, STANDALONE);
	integ_note("without --drop-caps: %s", oneline_of(r->out.p));
	check_said(r, STANDALONE, (const char *const[]){ "secret=read\n", "fcap-secret=read\n",
							  "fcap-CapEff:" }, 3);
	assert_null(strstr(r->out.p, "fcap-CapEff:0000000000000000\n"));
	assert_null(strstr(r->out.p, "CapEff:0000000000000000\n"));
	agent_fx_finish(state);
}

/* A TCP listener on addr (numeric) at *port (0: any, then set): the fd. */
static int listen_on(const char *addr, unsigned short *port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int fd;

	if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(*port);
		len = sizeof(*a4);
	} else {
		assert_int_equal(inet_pton(AF_INET6, addr, &a6->sin6_addr), 1);
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(*port);
		len = sizeof(*a6);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 64))
		fail_msg("listen on %s:%u: %s", addr, *port, strerror(errno));
	assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &len), 0);
	*port = ntohs(ss.ss_family == AF_INET ? a4->sin_port : a6->sin6_port);
	return fd;
}

/* Each address's verdict (tcp and udp alike) for .1, .2, .3, .4, ::1, ::ffff:127.0.0.3. */
static void verdicts(char *buf, size_t len, const char *const v[6])
{
	static const char *const to[] = { "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4", "::1",
					  "::ffff:127.0.0.3" };
	size_t n = 0;
	int i;

	for (i = 0; i < 6; i++)
		n += (size_t)snprintf(buf + n, len - n, "tcp %s %s\nudp %s %s\n", to[i], v[i], to[i],
				      v[i]);
}

/*
 * --network restricted, --allow-egress with one CIDR, with two, with an
 * IPv6 one (::1/128), --network none, and full: the test listens on
 * 127.0.0.1-4 and ::1 (one port), bm-probe connects (TCP) and sends (UDP)
 * to each. Restricted reaches its own host only; an allow-list that and
 * its CIDRs, never .3 unless listed (nor as ::ffff:127.0.0.3); none has a
 * loopback of its own, where nothing listens; full reaches all.
 */
static void test_sbx_network(void **state)
{
	static const char *const addrs[] = { "127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4",
					     "::1" };
	static const struct {
		const char *args[4];
		const char *v[6];	/* .1 .2 .3 .4 ::1 ::ffff:.3 */
		const char *held, *policy, *cidrs;
	} cases[] = {
		{ { "--network", "restricted" }, { "ok", "EPERM", "EPERM", "EPERM", "ok", "EPERM" },
		  "its own host only", "egress_restricted", NULL },
		{ { "--allow-egress", "127.0.0.2/32" }, { "ok", "ok", "EPERM", "EPERM", "ok", "EPERM" },
		  "its own host and 1 CIDR", "egress_allow_list", "127.0.0.2/32" },
		/* two: each reached, what lies between them not */
		{ { "--allow-egress", "127.0.0.2/32", "--allow-egress", "127.0.0.4/30" },
		  { "ok", "ok", "EPERM", "ok", "ok", "EPERM" },
		  "its own host and 2 CIDRs", "egress_allow_list", "127.0.0.2/32,127.0.0.4/30" },
		/* an IPv6 one: the filter takes it, and it opens no IPv4 address */
		{ { "--allow-egress", "::1/128" }, { "ok", "EPERM", "EPERM", "EPERM", "ok", "EPERM" },
		  "its own host and 1 CIDR", "egress_allow_list", "::1/128" },
		{ { "--network", "none" }, { 0 }, "netns (loopback only)", "none", NULL },
		{ { "--network", "full" }, { "ok", "ok", "ok", "ok", "ok", "ok" }, NULL, "full", NULL },
	};
	int fds[BM_ARRAY_SIZE(addrs)];
	struct fx *f = *state;
	unsigned short port = 0;
	char port_s[8], probe[PATH_MAX], want[1024], got[256];
	struct res *r;
	unsigned int i, k;
	size_t n;
	json_t *c;
	int m;

	for (i = 0; i < BM_ARRAY_SIZE(addrs); i++)
		fds[i] = listen_on(addrs[i], &port);
	snprintf(port_s, sizeof(port_s), "%u", port);
	snprintf(probe, sizeof(probe), "%s", wl("bm-probe"));
	agent_start();
	for (m = 0; m < N_MODES; m++) {
		for (i = 0; i < BM_ARRAY_SIZE(cases); i++) {
			const char *a0 = cases[i].args[0], *a1 = cases[i].args[1];
			const char *a2 = cases[i].args[2] ? cases[i].args[2] : "--";

			if (cases[i].args[2])
				r = SBX(f, m, a0, a1, a2, cases[i].args[3], "--", probe, port_s, "127.0.0.1",
					"127.0.0.2", "127.0.0.3", "127.0.0.4", "::1", "::ffff:127.0.0.3");
			else
				r = SBX(f, m, a0, a1, "--", probe, port_s, "127.0.0.1", "127.0.0.2",
					"127.0.0.3", "127.0.0.4", "::1", "::ffff:127.0.0.3");
			check_ran(f, r, m);
			if (cases[i].v[0]) {
				verdicts(want, sizeof(want), cases[i].v);
				if (strcmp(r->out.p, want))
					fail_msg("%s, %s %s %s: it said\n%sexpected\n%s", mode_name[m], a0, a1,
						 cases[i].args[2] ? cases[i].args[3] : "", r->out.p, want);
			}
			/* in its own namespace nothing of ours listens: every connect is refused */
			for (k = 0; !strcmp(cases[i].policy, "none") && k < BM_ARRAY_SIZE(addrs); k++) {
				char line[64];

				snprintf(line, sizeof(line), "tcp %s ECONNREFUSED\n", addrs[k]);
				check_said(r, m, (const char *const[]){ line }, 1);
			}
			assert_string_equal(jstr(r->o, "sandbox.network_policy"), cases[i].policy);
			/* the CIDRs asked, in the request's form, in order */
			got[0] = '\0';
			n = 0;
			json_array_foreach(jget(r->o, "sandbox.allowed_egress_cidrs"), k, c)
				n += (size_t)snprintf(got + n, sizeof(got) - n, "%s%s", k ? "," : "",
						      json_string_value(c));
			assert_string_equal(got, cases[i].cidrs ? cases[i].cidrs : "");
			if (cases[i].held)
				check_held(f, r, m, "network", cases[i].held);
			else
				assert_null(jget(r->o, "enforcement.network"));
			/* the egress filter is the agent's own; the namespace of none is run's */
			if (m == AGENT && cases[i].held)
				check_by(f, "network", strcmp(cases[i].policy, "none") ? NULL : "caller");
		}
	}
	for (i = 0; i < BM_ARRAY_SIZE(addrs); i++)
		close(fds[i]);
	agent_fx_finish(state);
}

/*
 * --clean-env with --env: the command's environment is the pairs and a
 * PATH, nothing of ours; --env alone adds to ours; --cwd is where it runs,
 * and is entered as the --user: a directory that uid cannot enter is
 * never entered for it (125, and nothing of it ran).
 */
static void test_sbx_env_cwd(void **state)
{
	char dir[] = "/tmp/bm-sbx-cwd.XXXXXX", priv[PATH_MAX + 16], real[PATH_MAX], want[PATH_MAX + 8];
	char mark[128];
	struct fx *f = *state;
	struct res *r;
	int m;

	agent_start();
	make_dir(dir);
	assert_non_null(realpath(dir, real));
	snprintf(priv, sizeof(priv), "%s/private", real);
	assert_int_equal(mkdir(priv, 0700), 0);
	assert_int_equal(setenv("BM_SBX_MARK", token, 1), 0);
	snprintf(mark, sizeof(mark), "BM_SBX_MARK=%s\n", token);
	for (m = 0; m < N_MODES; m++) {
		r = SBX(f, m, "--clean-env", "--env", "FOO=bar baz", "--env", "A=1", "--", "/usr/bin/env");
		check_ran(f, r, m);
		if (strcmp(r->out.p, "FOO=bar baz\nA=1\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:"
			   "/usr/bin:/sbin:/bin\n"))
			fail_msg("%s: --clean-env gave it\n%s", mode_name[m], r->out.p);
		check_held(f, r, m, "env", "clean: 3 variables");
		r = SBX(f, m, "--env", "FOO=bar", "--", "/usr/bin/env");
		check_ran(f, r, m);
		check_said(r, m, (const char *const[]){ "FOO=bar\n", mark }, 2);
		r = SBX(f, m, "--cwd", dir, "--", "/bin/pwd");
		check_ran(f, r, m);
		snprintf(want, sizeof(want), "%s\n", real);
		assert_string_equal(r->out.p, want);
		check_held(f, r, m, "cwd", real);
		/* root could go in; the uid it runs as cannot */
		r = SBX(f, m, "--cwd", priv, "--user", UID_OTHER, "--", "/bin/pwd");
		integ_note("%s: --cwd %s as %s: exit %d, %s", mode_name[m], priv, UID_OTHER, r->status,
			   oneline_of(r->err.p));
		assert_int_equal(r->status, 125);
		assert_string_equal(r->out.p ? r->out.p : "", "");
		assert_non_null(strstr(r->err.p, strerror(EACCES)));
	}
	unsetenv("BM_SBX_MARK");
	agent_fx_finish(state);
}

/* POST a launch (the agent runs it): it must be running. */
static void launch(json_t *req)
{
	json_t *e = NULL;
	int st = call("POST", "/v1/effects", req, &e);

	if (st != 201)
		fail_msg("POST: %d %s", st, e ? json_dumps(e, JSON_COMPACT) : "");
	json_decref(e);
}

/*
 * The agent's own launches go through the same conversion: sandbox.workspace
 * with read_only_root_fs is written, the rest refused; a workspace the host
 * does not have is 400, naming it, before anything exists.
 */
static void test_sbx_agent_launch_workspace(void **state)
{
	char ws[] = "/var/tmp/bm-sbx-ws.XXXXXX", script[1024], file[PATH_MAX + 16], log[PATH_MAX + 64];
	static char buf[4096];
	struct fx *f = *state;
	json_t *req, *e = NULL;

	agent_start();
	make_dir(ws);
	snprintf(script, sizeof(script), "touch %s/in && echo ws=rw;"
		 "touch /var/tmp/bm-sbx-%s-x 2>/dev/null && echo vartmp=rw || echo vartmp=ro", ws, token);
	req = json_pack("{s:s, s:[s, s, s], s:{s:b, s:s}}", "id", "ws1", "argv", "/bin/sh", "-c", script,
			"sandbox", "read_only_root_fs", 1, "workspace", ws);
	launch(req);
	e = wait_final("ws1", 20000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	snprintf(log, sizeof(log), "%s/logs/%s@ws1.log", ag.state, token);
	assert_true(bm_read_file(AT_FDCWD, log, buf, sizeof(buf)) > 0);
	integ_note("the agent's effect said: %s", oneline_of(buf));
	assert_non_null(strstr(buf, "ws=rw\n"));
	assert_non_null(strstr(buf, "vartmp=ro\n"));
	snprintf(file, sizeof(file), "%s/in", ws);
	assert_int_equal(access(file, F_OK), 0);
	assert_string_equal(jstr(e, "outcome.sandbox.workspace"), ws);
	assert_non_null(strstr(jstr(e, "outcome.enforcement.workspace"), ws));
	assert_non_null(strstr(jstr(e, "outcome.enforcement.read_only_root"), "mount_setattr"));
	json_decref(e);
	e = NULL;
	req = json_pack("{s:s, s:[s], s:{s:b, s:s}}", "id", "ws2", "argv", "/bin/true", "sandbox",
			"read_only_root_fs", 1, "workspace", "/nonexistent-bm-ws");
	assert_int_equal(call("POST", "/v1/effects", req, &e), 400);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(e, "fields"), 0),
							      "field")), "sandbox.workspace");
	json_decref(e);
	e = NULL;
	assert_int_equal(call("GET", "/v1/effects/ws2", NULL, &e), 404);
	json_decref(e);
	assert_int_equal(cgroups_created(f), 1);
	agent_fx_finish(state);
}

/* run as uid (a forked child: setgid, setuid, exec) with args: its status, stderr in err. */
static int run_as(uid_t uid, const char *const *args, char *err, size_t len)
{
	char *argv[MAX_ARGS];
	int p[2], n = 0, status;
	ssize_t got = 0, k;
	pid_t pid;

	argv[n++] = (char *)bm_bin;
	argv[n++] = "run";
	while (*args && n < MAX_ARGS - 1)
		argv[n++] = (char *)*args++;
	argv[n] = NULL;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	while ((k = read(p[0], err + got, len - 1 - (size_t)got)) > 0)
		got += k;
	err[got] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Exit 125, exactly one line naming what, and nothing made. */
static void check_refused(struct fx *f, int status, const char *err, const char *what)
{
	const char *nl = strchr(err, '\n');

	if (status != 125 || !nl || nl[1] || !strstr(err, what))
		fail_msg("exit %d, stderr '%s': want 125 and one line naming %s", status, err, what);
	assert_int_equal(cgroups_created(f), 0);
}

/*
 * Refused before anything exists, both ways: a bad flag (exit 125, one
 * line naming it, no cgroup, no effect); through the agent, what a caller
 * that is not root cannot have (its command is its own child), while what
 * it can have (the agent's egress filter: its own host reached, another
 * loopback address refused; no capabilities; a clean environment) it gets.
 */
static void test_sbx_refused_before_anything(void **state)
{
	struct fx *f = *state;
	char err[4096], sock_arg[PATH_MAX + 16], id[64], probe[PATH_MAX], port_s[8];
	unsigned short port = 0;
	json_t *list = NULL;
	struct res *r;
	int m, st, fds[2];

	agent_start();
	(void)cgroups_created(f);
	for (m = 0; m < N_MODES; m++) {
		r = SBX(f, m, "--network", "nothing", "--", "/bin/true");
		check_refused(f, r->status, r->err.p, "--network");
		r = SBX(f, m, "--workspace", "/nonexistent-bm-ws", "--", "/bin/true");
		check_refused(f, r->status, r->err.p, "--workspace");
		r = SBX(f, m, "--allow-egress", "10.0.0.1/8", "--", "/bin/true");
		check_refused(f, r->status, r->err.p, "10.0.0.0/8");
		assert_null(r->o);
	}
	/* the token in its id: its cgroup (burstmeter.uid-65534@ID) would be seen */
	snprintf(sock_arg, sizeof(sock_arg), "%s", ag.sock);
	snprintf(id, sizeof(id), "%s-nr", token);
	st = run_as(NOBODY, (const char *const[]){ "--socket", sock_arg, "--id", id, "-q",
						   "--read-only-root", "--", "/bin/true", NULL }, err, sizeof(err));
	check_refused(f, st, err, "--read-only-root");
	st = run_as(NOBODY, (const char *const[]){ "--socket", sock_arg, "--id", id, "-q", "--network",
						   "none", "--", "/bin/true", NULL }, err, sizeof(err));
	check_refused(f, st, err, "--network none");
	st = run_as(NOBODY, (const char *const[]){ "--socket", sock_arg, "--id", id, "-q", "--user", "0",
						   "--", "/bin/true", NULL }, err, sizeof(err));
	check_refused(f, st, err, "--user");
	assert_int_equal(call_as_json(NOBODY, "GET", "/v1/effects", NULL, &list), 200);
	assert_int_equal(json_array_size(json_object_get(list, "effects")), 0);
	json_decref(list);
	/* what it can have, it gets: its own uid (which --non-root asks), no capabilities, the filter */
	st = run_as(NOBODY, (const char *const[]){ "--socket", sock_arg, "--id", id, "-q", "--non-root", "--drop-caps",
						   "--network", "restricted", "--clean-env", "--",
						   "/bin/sh", "-c",
						   "id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status | tr -d ' \\t'; env | wc -l",
						   NULL }, err, sizeof(err));
	integ_note("not root, through the agent: exit %d, %s", st, oneline_of(err));
	assert_int_equal(st, 0);
	assert_non_null(strstr(err, "65534\nCapEff:0000000000000000\nNoNewPrivs:1\n"));
	assert_int_equal(cgroups_created(f), 1);
	/* and its egress filter holds: its own host reached, another loopback address refused */
	fds[0] = listen_on("127.0.0.1", &port);
	fds[1] = listen_on("127.0.0.2", &port);
	snprintf(port_s, sizeof(port_s), "%u", port);
	snprintf(probe, sizeof(probe), "%s", wl("bm-probe"));
	snprintf(id, sizeof(id), "%s-nr2", token);
	st = run_as(NOBODY, (const char *const[]){ "--socket", sock_arg, "--id", id, "-q", "--network",
						   "restricted", "--", probe, port_s, "127.0.0.1",
						   "127.0.0.2", NULL }, err, sizeof(err));
	integ_note("not root, through the agent, --network restricted: exit %d, %s", st, oneline_of(err));
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(st, 0);
	assert_string_equal(err, "tcp 127.0.0.1 ok\nudp 127.0.0.1 ok\n"
				 "tcp 127.0.0.2 EPERM\nudp 127.0.0.2 EPERM\n");
	assert_int_equal(cgroups_created(f), 1);
	agent_fx_finish(state);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sbx_filesystem, setup_s, teardown_s),
		cmocka_unit_test_setup_teardown(test_sbx_user, setup_s, teardown_s),
		cmocka_unit_test_setup_teardown(test_sbx_drop_caps, setup_s, teardown_s),
		cmocka_unit_test_setup_teardown(test_sbx_network, setup_s, teardown_s),
		cmocka_unit_test_setup_teardown(test_sbx_env_cwd, setup_s, teardown_s),
		cmocka_unit_test_setup_teardown(test_sbx_agent_launch_workspace, setup_s, teardown_s),
		cmocka_unit_test_setup_teardown(test_sbx_refused_before_anything, setup_s, teardown_s),
	};
	size_t n;
	int rc = runner_init("test_sandbox");

	if (rc)
		return rc;
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("sandbox", tests, n, NULL, NULL);
}

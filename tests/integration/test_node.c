// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A node as it comes: what the agent and `run` need from it, taken away one
 * at a time in a mount namespace of the test's own (so the host keeps its
 * mounts), or by dropping a capability from the bounding set before exec.
 * A node just booted has no bpffs on /sys/fs/bpf: the agent mounts one and
 * works. Anything else missing is one line that names it and the fix, exit
 * status 1 (agent) or 125 (run), and nothing made (no state dir, no pins).
 */
#include "agent_fx.h"

#include <linux/magic.h>
#include <sched.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/mount.h>
#include <sys/statfs.h>

#define EXIT_WAIT_MS 15000

/* What the child's world lacks. */
enum cut { CUT_BPFFS, CUT_BTF, CUT_CGROUP2, CUT_SYS_ADMIN };

/* Every mount of fstype at or under path in our (private) namespace, detached (integ.h). */
static int umount_all(const char *fstype, const char *under)
{
	int n = integ_umount_all(fstype, under);

	if (n < 0)
		_exit(120);
	return n;
}

/* In the child, before exec: take away what cut names. */
static void cut_world(enum cut c)
{
	if (c == CUT_SYS_ADMIN) {
		/* root's capabilities after exec are the bounding set's */
		if (prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0))
			_exit(121);
		return;
	}
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		_exit(122);
	if (c == CUT_BPFFS)
		umount_all("bpf", "/sys/fs/bpf");
	else if (c == CUT_BTF && mount("tmpfs", "/sys/kernel/btf", "tmpfs", 0, "size=4k"))
		_exit(123);
	else if (c == CUT_CGROUP2 && !umount_all("cgroup2", "/"))
		_exit(124);
}

static pid_t spawn_cut(enum cut c, const char *log, char *const argv[])
{
	pid_t pid = fork();
	int fd;

	assert_true(pid >= 0);
	if (!pid) {
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		cut_world(c);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static char *agent_argv[16];

/* The agent's flags; its config admits whatever the node's load (a busy CI machine). */
static void agent_args(const char *pins)
{
	char *const a[] = { (char *)bm_bin, "agent", "--config", ag.cfg, "--socket", ag.sock,
			    "--state-dir", ag.state, "--pin-dir", (char *)pins, "--metrics", "", NULL };
	FILE *f = fopen(ag.cfg, "we");

	assert_non_null(f);
	assert_true(fputs("admit_cpu_pressure: 100\nadmit_mem_available: 0\n", f) >= 0);
	assert_int_equal(fclose(f), 0);
	memcpy(agent_argv, a, sizeof(a));
}

/* Wait for pid to exit; its exit code (128 + N for a signal). */
static int wait_exit(pid_t pid)
{
	int status, t;

	for (t = 0; t < EXIT_WAIT_MS; t += 10) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	fail_msg("pid %d did not exit in %d ms", (int)pid, EXIT_WAIT_MS);
	return -1;
}

/* The log holds exactly one line, and it has want (and, if not NULL, fix) in it. */
static void assert_one_line(const char *log, const char *want, const char *fix)
{
	char line[2048], first[2048] = "";
	FILE *f = fopen(log, "re");
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (n++ == 0)
			snprintf(first, sizeof(first), "%s", line);
	fclose(f);
	if (n != 1 || !strstr(first, want) || (fix && !strstr(first, fix))) {
		dump_file("log", log);
		fail_msg("expected one line with '%s'%s%s, got %d lines", want, fix ? " and " : "",
			 fix ? fix : "", n);
	}
	integ_note("%s", strtok(first, "\n"));
}

static int setup_node(void **state)
{
	assert_int_equal(agent_fx_init("node", "bmit-node"), 0);
	agent_args(ag.pins);
	return 0;
}

static int teardown_node(void **state)
{
	int found = agent_leftovers();

	if (ag.dir[0])
		rm_rf(ag.dir);
	return found ? -1 : 0;
}

static bool file_has(const char *path, const char *needle)
{
	char line[2048];
	bool found = false;
	FILE *f = fopen(path, "re");

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, needle);
	if (f)
		fclose(f);
	return found;
}

static bool is_bpffs(const char *path)
{
	struct statfs st;

	return !statfs(path, &st) && st.f_type == BPF_FS_MAGIC;
}

/* Does /proc/PID/mountinfo list a bpf mount at /sys/fs/bpf? */
static bool pid_has_bpffs(pid_t pid)
{
	char path[64], line[4096], mnt[PATH_MAX], type[64];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (sep && sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 &&
		    sscanf(sep + 3, "%63s", type) == 1)
			found |= !strcmp(mnt, "/sys/fs/bpf") && !strcmp(type, "bpf");
	}
	if (f)
		fclose(f);
	return found;
}

/* A node just booted: no bpffs anywhere. The agent mounts one, pins, meters, and stops cleanly. */
static void test_node_agent_mounts_bpffs(void **state)
{
	bool host_had = is_bpffs("/sys/fs/bpf");
	json_t *e = NULL;
	int t, st = 0;

	ag.pid = spawn_cut(CUT_BPFFS, ag.log, agent_argv);
	for (t = 0; t < AGENT_READY_MS && st != 200; t += 10) {
		json_decref(e);
		e = NULL;
		st = bm_client_call(ag.sock, "GET", "/v1/healthz", NULL, &e, 1000);
		if (st != 200) {
			assert_alive(&ag.pid, "agent", ag.log);
			usleep(10000);
		}
	}
	json_decref(e);
	if (st != 200)
		fail_msg("the agent did not come up without a bpffs (log %s)", ag.log);
	assert_true(pid_has_bpffs(ag.pid));
	/* the mount was the agent's namespace's: the host's stays as it was */
	assert_int_equal(is_bpffs("/sys/fs/bpf"), host_had);
	assert_int_equal(call("POST", "/v1/effects", launch_req("n1", "bm-spike", "100", "100", "2", NULL), &e),
			 201);
	json_decref(e);
	e = wait_final("n1", 20000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	assert_true(jnum(e, "outcome.peak.cpu_cores") > 0.5);
	json_decref(e);
	assert_int_equal(agent_stop(SIGTERM), 0);
	if (!file_has(ag.log, "mounted a BPF filesystem at /sys/fs/bpf"))
		fail_msg("the agent did not say that it mounted bpffs (log %s)", ag.log);
	integ_note("the agent mounted bpffs at /sys/fs/bpf in its namespace and metered n1");
}

/* A precondition missing: the agent says which, in one line, and makes nothing. */
static void check_agent_refuses(enum cut c, const char *want, const char *fix)
{
	pid_t pid = spawn_cut(c, ag.log, agent_argv);

	assert_int_equal(wait_exit(pid), 1);
	assert_one_line(ag.log, want, fix);
	assert_int_equal(access(ag.state, F_OK), -1);
	assert_int_equal(access(ag.pins, F_OK), -1);
	unlink(ag.log);
}

static void test_node_agent_preconditions(void **state)
{
	check_agent_refuses(CUT_BTF, "has no BTF", "CONFIG_DEBUG_INFO_BTF");
	check_agent_refuses(CUT_SYS_ADMIN, "needs CAP_SYS_ADMIN", "run it as root");
	check_agent_refuses(CUT_CGROUP2, "cgroup v2 is not mounted", "mount -t cgroup2");
}

/* --pin-dir on a filesystem that is not bpffs: named, with the fix, and never mounted over. */
static void test_node_pin_dir_not_bpffs(void **state)
{
	char pins[PATH_MAX + 16];
	pid_t pid;

	snprintf(pins, sizeof(pins), "%s/pins", ag.dir);
	agent_args(pins);
	pid = spawn_logged(ag.log, NICE_OURS, agent_argv);
	assert_int_equal(wait_exit(pid), 1);
	assert_one_line(ag.log, "not a BPF filesystem", "mount -t bpf");
	assert_int_equal(access(pins, F_OK), -1);
	assert_int_equal(access(ag.state, F_OK), -1);
}

/* `run` checks the same, before it makes a cgroup: exit 125, one line. */
static void test_node_run_preconditions(void **state)
{
	char *argv[] = { (char *)bm_bin, "run", "--standalone", "-q", "--", "/bin/true", NULL };
	pid_t pid;

	pid = spawn_cut(CUT_SYS_ADMIN, ag.log, argv);
	assert_int_equal(wait_exit(pid), 125);
	assert_one_line(ag.log, "needs CAP_SYS_ADMIN", NULL);
	unlink(ag.log);
	pid = spawn_cut(CUT_BTF, ag.log, argv);
	assert_int_equal(wait_exit(pid), 125);
	assert_one_line(ag.log, "has no BTF", NULL);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_node_agent_mounts_bpffs, setup_node, teardown_node),
		cmocka_unit_test_setup_teardown(test_node_agent_preconditions, setup_node, teardown_node),
		cmocka_unit_test_setup_teardown(test_node_pin_dir_not_bpffs, setup_node, teardown_node),
		cmocka_unit_test_setup_teardown(test_node_run_preconditions, setup_node, teardown_node),
	};
	size_t n;
	int rc = runner_init("test_node");

	if (rc)
		return rc;
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("node", tests, n, NULL, NULL);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's own leaf (agent/place.c enter_leaf()), end to end: the real
 * agent started in a child cgroup of the test's, the one process there. On
 * pure v2 (the VM suite's 6.1) a cgroup holding a process cannot hand
 * controllers to its children, so the agent must say it moved into
 * .../agent, be there with its spawner, the cgroup then enables the memory
 * controller for an effect whose memory.max is its ceiling, and on stop the
 * agent leaves the leaf and removes it. On a hybrid node (this machine) the
 * ceilings are v1's: the agent stays where it was started and makes no leaf.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "runner.h"
#include "agent_fx.h"
#include "base/cgroup.h"
#include "base/cgroup_node.h"
#include "base/common.h"

static char dir[PATH_MAX + 64];	/* the agent's cgroup: cg_parent/bmitNNN-leaf */
static char leaf[PATH_MAX + 128];	/* dir/agent */

/* The agent, as agent_start_cfg() starts it, but into dir's cgroup before it runs. */
static void agent_start_in_dir(const char *cfg)
{
	char *argv[] = { (char *)bm_bin, "agent", "--config", ag.cfg, "--socket", ag.sock,
			 "--state-dir", ag.state, "--pin-dir", ag.pins, "--metrics", "", NULL };
	char procs[PATH_MAX + 96];
	FILE *f;
	int fd;

	f = fopen(ag.cfg, "we");
	assert_non_null(f);
	assert_true(fputs(cfg, f) >= 0);
	assert_int_equal(fclose(f), 0);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	ag.pid = fork();
	assert_true(ag.pid >= 0);
	if (!ag.pid) {
		fd = open(ag.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		if (bm_write_file(AT_FDCWD, procs, "0")) {
			fprintf(stderr, "test_leaf: failed to join %s\n", dir);
			_exit(126);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	agent_wait_ready();
}

/* Is pid listed in cgroup directory d's cgroup.procs? */
static bool has_pid(const char *d, pid_t pid)
{
	char path[PATH_MAX + 160], buf[4096], *p, *end;

	snprintf(path, sizeof(path), "%s/cgroup.procs", d);
	if (bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return false;
	for (p = buf; *p; p = end) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		if (v == pid)
			return true;
	}
	return false;
}

/* Does the space-separated list in file path name word? */
static bool file_has_word(const char *path, const char *word)
{
	char buf[1024], *w, *save = NULL;

	if (bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) <= 0)
		return false;
	for (w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
		if (!strcmp(w, word))
			return true;
	return false;
}

static int setup_l(void **state)
{
	int ret = agent_fx_setup(state, "leaf", "bmit-leaf");

	if (ret)
		return ret;
	snprintf(dir, sizeof(dir), "%s/%s-leaf", cg_parent, token);
	snprintf(leaf, sizeof(leaf), "%s/%s", dir, BM_CGROUP_LEAF);
	if (mkdir(dir, 0755)) {
		print_error("mkdir %s: %s\n", dir, strerror(errno));
		agent_fx_teardown(state);
		return -1;
	}
	return 0;
}

/* The agent gone (and with it its leaf, or the test's rmdir of it): dir goes too. */
static int teardown_l(void **state)
{
	int found = agent_leftovers(), t;

	if (!access(leaf, F_OK)) {
		print_error("%s is left: removing it\n", leaf);
		rmdir(leaf);
		found++;
	}
	for (t = 0; t < 100 && rmdir(dir) && errno == EBUSY; t++)
		usleep(10000);
	if (!access(dir, F_OK)) {
		print_error("failed to remove %s\n", dir);
		found++;
	}
	rm_rf(ag.dir);
	return teardown(state) || found ? -1 : 0;
}

static void test_leaf_agent_moves_and_delegates(void **state)
{
	char cfg[512], moved[3 * PATH_MAX], path[PATH_MAX + 256], buf[64], cg[PATH_MAX];
	struct bm_cgroup_env env;
	json_t *e = NULL, *r;
	bool v2;
	int t;

	assert_int_equal(bm_cgroup_env_detect("/proc/self/mountinfo", "/proc/self/cgroup", &env), 0);
	v2 = env.mode == BM_CG_V2;
	integ_note("cgroups: %s; the agent starts alone in %s",
		   v2 ? "pure v2" : "hybrid (v1 controllers)", dir);
	snprintf(cfg, sizeof(cfg), "admit_cpu_pressure: 100\nadmit_mem_available: 0\n"
		 "tenants:\n  - { uid: 0, tenant: %s }\n", token);
	agent_start_in_dir(cfg);
	snprintf(moved, sizeof(moved), "moved into %s, so that %s can hand controllers", leaf, dir);
	if (!v2) {
		/* hybrid: the v1 controllers take the ceilings; nothing to move for */
		assert_false(log_has(ag.log, "moved into"));
		assert_int_equal(access(leaf, F_OK), -1);
		assert_true(has_pid(dir, ag.pid));
		agent_fx_finish(state);
		return;
	}
	if (!log_has(ag.log, moved)) {
		dump_file("agent", ag.log);
		fail_msg("the agent's log does not say \"%s\"", moved);
	}
	/* the agent is in the leaf, and nobody is left in dir (its spawner went too) */
	assert_true(has_pid(leaf, ag.pid));
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	assert_int_equal(bm_read_file(AT_FDCWD, path, buf, sizeof(buf)), 0);
	/* an effect with a memory ceiling: dir hands it the memory controller */
	r = launch_req("mem", "bm-memtouch", "8", "4000", NULL);
	json_object_set_new(r, "sandbox", json_pack("{s:s}", "memory_limit", "32Mi"));
	assert_int_equal(call("POST", "/v1/effects", r, &e), 201);
	snprintf(cg, sizeof(cg), "%s", jstr(e, "cgroup"));
	json_decref(e);
	e = NULL;
	integ_note("effect in %s", cg);
	assert_int_equal(strncmp(cg, dir, strlen(dir)), 0);
	snprintf(path, sizeof(path), "%s/memory.max", cg);
	for (t = 0; t < 2000 && !(bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) > 0 &&
				  !strcmp(buf, "33554432\n")); t++)
		usleep(10000);
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
	{
		char ctl[512] = "";

		(void)bm_read_file(AT_FDCWD, path, ctl, sizeof(ctl));
		integ_note("%s: %.*s; the effect's memory.max %.*s", path, (int)strcspn(ctl, "\n"), ctl,
			   (int)strcspn(buf, "\n"), buf);
	}
	assert_true(file_has_word(path, "memory"));
	assert_string_equal(buf, "33554432\n");
	e = wait_final("mem", 60000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	json_decref(e);
	/* stopped: back in dir, the leaf removed */
	agent_finish();
	assert_int_equal(access(leaf, F_OK), -1);
	assert_int_equal(errno, ENOENT);
	assert_clean(*state);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_leaf_agent_moves_and_delegates, setup_l,
						teardown_l),
	};
	size_t n;
	int rc = runner_init("test_leaf");

	if (rc)
		return rc;
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("leaf", tests, n, NULL, NULL);
}

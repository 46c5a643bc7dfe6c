// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Tool calls from inside pods, on node layouts built with real cgroups
 * under the test's own: the kubelet's trees of both cgroup drivers (systemd
 * slices, cgroupfs directories; Burstable and Guaranteed pods; containerd's,
 * CRI-O's and a bare id's container), a "harness" placed in a container and
 * in a pid namespace of its own (as a pod's is), calling the agent through
 * its socket with `burstmeter run`. Each call is an effect in its pod's
 * cgroup beside the containers, of the pod's tenant, named in the outcome
 * and in /metrics; the pod's memory.max bounds it (where v2 has the memory
 * controller: the 6.1 VM); a caller in no pod keeps its uid identity, one in
 * a look-alike tree too, and one below the kubelet's root in no container we
 * can name is refused. An agent killed mid-call adopts it in its pod and
 * sweeps what it left there. Everything made is removed.
 */
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "prom_fx.h"
#include "agent/podspec.h"
#include "base/common.h"

#define BIG 8192	/* a path and more */

/* snprintf into an array, which must hold it all */
#define FMT(buf, ...) assert_true(snprintf(buf, sizeof(buf), __VA_ARGS__) < (int)sizeof(buf))

/* The node: where "the kubelet" keeps pods (kubepods_root), as a path and below v2_mount. */
static char node[1024], node_rel[1024];

/* A pod of the layout: its uid, container id, cgroup dirs (relative to node). */
struct pod {
	const char *uid, *cid, *qos;
	const char *pod_dir, *ctr_dir;	/* printf formats of uid (systemd's with '_'), then cid */
	bool systemd;
};

#define C1 "1111111111111111111111111111111111111111111111111111111111111111"
#define C2 "2222222222222222222222222222222222222222222222222222222222222222"
#define C3 "3333333333333333333333333333333333333333333333333333333333333333"

static const struct pod pods[] = {
	{ "0f0e0d0c-1111-4222-8333-444455556666", C1, "burstable",
	  "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice",
	  "cri-containerd-%s.scope", true },
	{ "1a2b3c4d-2222-4333-8444-555566667777", C2, "guaranteed", "kubepods/pod%s", "%s", false },
	{ "2b3c4d5e-3333-4444-8555-666677778888", C3, "guaranteed",
	  "kubepods.slice/kubepods-pod%s.slice", "crio-%s.scope", true },
};

/* The pod's cgroup dir (absolute) in dir; with the container's after it when ctr. */
static void pod_path(const struct pod *p, bool ctr, char *dir, size_t len)
{
	char uid[64], pd[BIG], cd[128];
	size_t i;

	FMT(uid, "%s", p->uid);
	for (i = 0; p->systemd && uid[i]; i++)
		if (uid[i] == '-')
			uid[i] = '_';
	FMT(pd, p->pod_dir, uid);
	FMT(cd, p->ctr_dir, p->cid);
	assert_true(snprintf(dir, len, "%s/%s%s%s", node, pd, ctr ? "/" : "", ctr ? cd : "") < (int)len);
}

/* mkdir -p of an absolute path under node (node included). */
static void mkdirs(const char *path)
{
	char buf[BIG], *s;

	FMT(buf, "%s", path);
	for (s = buf + strlen(v2_mount) + 1; (s = strchr(s, '/')); *s++ = '/') {
		*s = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			fail_msg("mkdir %s: %s", buf, strerror(errno));
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		fail_msg("mkdir %s: %s", buf, strerror(errno));
}

/* Can v2 hand the memory controller down to the pods here (a pure-v2 root, as the VM's)? */
static bool v2_memory(void)
{
	char buf[512];

	return bm_read_file(AT_FDCWD, "/sys/fs/cgroup/cgroup.subtree_control", buf, sizeof(buf)) > 0 &&
	       strstr(buf, "memory") && !strcmp(v2_mount, "/sys/fs/cgroup");
}

/*
 * Enable memory from the node down to dir's parent, as the kubelet does for
 * its tree (the node's own parent must have it, as the VM's root has).
 */
static void delegate_memory(const char *dir)
{
	char buf[BIG], *s;

	FMT(buf, "%s", dir);
	for (s = buf + strlen(node); (s = strchr(s, '/')); *s++ = '/') {
		*s = '\0';
		char ctl[BIG];

		FMT(ctl, "%s/cgroup.subtree_control", buf);
		if (bm_write_file(AT_FDCWD, ctl, "+memory"))
			fail_msg("enable memory in %s: %s", buf, strerror(errno));
	}
}

/* rmdir the whole node, deepest first (only empty cgroups go: the test's own leftovers fail it). */
static int remove_tree(const char *dir)
{
	char sub[BIG];
	struct dirent *de;
	int left = 0;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		FMT(sub, "%s/%s", dir, de->d_name);
		if (!strncmp(de->d_name, "burstmeter.", 11)) {
			print_error("left behind in a pod: cgroup %s\n", sub);
			remove_cgroup(sub);
			left++;
			continue;
		}
		left += remove_tree(sub);
	}
	if (d)
		closedir(d);
	if (rmdir(dir) && errno != ENOENT) {
		print_error("cannot remove %s: %s\n", dir, strerror(errno));
		left++;
	}
	return left;
}

/* What the harness's call does instead of an exec (NULL: exec argv): its exit code. */
typedef int (*harness_fn)(void);

/*
 * The harness: a child placed in cgroup dir (a container's), in a new pid
 * namespace when newpid, whose init runs fn, or argv (bm_bin ...) with
 * stdout and stderr to log, and exits with its code. Returns the child's pid.
 */
static pid_t harness(const char *dir, bool newpid, const char *log, char *const argv[], harness_fn fn)
{
	pid_t pid = fork(), k;
	char procs[BIG];
	int status, fd;

	assert_true(pid >= 0);
	if (pid)
		return pid;
	FMT(procs, "%s/cgroup.procs", dir);
	if (bm_write_file(AT_FDCWD, procs, "0"))
		_exit(120);
	if (newpid && unshare(CLONE_NEWPID))
		_exit(121);
	k = fork();
	if (k < 0)
		_exit(122);
	if (!k) {
		/* pid 1 of the pod's namespace: it makes the call and reaps */
		k = fork();
		if (!k) {
			fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
			dup2(fd, 1);
			dup2(fd, 2);
			if (fn) {
				status = fn();
				fflush(NULL);
				_exit(status);
			}
			execv(argv[0], argv);
			_exit(127);
		}
		if (k < 0 || waitpid(k, &status, 0) != k)
			_exit(123);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
	if (waitpid(k, &status, 0) != k)
		_exit(124);
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

/* A file's text (up to 64 KiB; "" if unreadable), in a static buffer. */
static const char *slurp(const char *path)
{
	static char buf[1 << 16];

	if (bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		buf[0] = '\0';
	return buf;
}

/* `burstmeter run --socket ... --id id --outcome out -- WORKLOAD ARGS` in dir; the harness's pid. */
static pid_t pod_run(const char *dir, bool newpid, const char *id, const char *out, const char *wl_name,
		     const char *a1, const char *a2)
{
	char path[BIG], log[BIG];
	char *argv[] = { (char *)bm_bin, "run", "-q", "--socket", ag.sock, "--id", (char *)id,
			 "--outcome", (char *)out, "--", path, (char *)a1, (char *)a2, NULL };

	if (!realpath(wl(wl_name), path))
		fail_msg("workload %s: %s", wl_name, strerror(errno));
	FMT(log, "%s/%s.log", ag.dir, id);
	return harness(dir, newpid, log, argv, NULL);
}

static int wait_code(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static json_t *read_json(const char *path)
{
	json_error_t err;
	json_t *j = json_load_file(path, 0, &err);

	if (!j)
		fail_msg("%s: %s", path, err.text);
	return j;
}

/* The agent, with the node as the kubelet's root and pod p[0] mapped to "<token>-team". */
static void agent_start_pods(const char *metrics)
{
	char map[BIG];
	FILE *f;

	FMT(map, "%s/pod-tenants", ag.dir);
	f = fopen(map, "we");
	assert_non_null(f);
	fprintf(f, "# pod uid, tenant\n%s %s-team\n", pods[0].uid, token);
	assert_int_equal(fclose(f), 0);
	agent_start_cfg(metrics, "max_running: 16\nmax_queued: 64\ntenant_max_running: 100\n"
			"admit_cpu_pressure: 100\nadmit_mem_available: 0\nkubepods_root: \"%s\"\n"
			"pod_tenants: %s\ntenants:\n  - { uid: 0, tenant: %s }\n", node_rel, map, token);
}

static int setup_p(void **state)
{
	int ret = agent_fx_setup(state, "pods", "bmit-pods");

	if (ret)
		return ret;
	FMT(node, "%s/%s-node", cg_parent, token);
	FMT(node_rel, "%s", node + strlen(v2_mount));
	if (mkdir(node, 0755)) {
		print_error("mkdir %s: %s\n", node, strerror(errno));
		agent_fx_teardown(state);
		return -1;
	}
	return 0;
}

static int teardown_p(void **state)
{
	int found = agent_fx_teardown(state);

	return remove_tree(node) || found ? -1 : 0;
}

/* The outcome of a pod's call: its tenant, its cgroup in the pod's, the pod's names. */
static void check_pod_outcome(const struct pod *p, const char *tenant, const char *id, json_t *o)
{
	char dir[BIG], want[BIG];

	pod_path(p, false, dir, sizeof(dir));
	FMT(want, "%s/burstmeter.%s@%s", dir, tenant, id);
	assert_string_equal(jstr(o, "tenant"), tenant);
	assert_string_equal(jstr(o, "cgroup"), want);
	assert_string_equal(jstr(o, "pod.uid"), p->uid);
	assert_string_equal(jstr(o, "pod.container"), p->cid);
	assert_string_equal(jstr(o, "pod.qos"), p->qos);
	assert_string_equal(jstr(o, "termination.reason"), "completed");
	integ_note("%s: tenant %s, in %s", id, tenant, want + strlen(node));
}

/*
 * Each pod's `burstmeter run` is an effect in its pod's cgroup, of its
 * pod's tenant (mapped, or pod-<uid>), its process there while it runs,
 * the pod's container in /metrics; the first pod's harness in a pid
 * namespace of its own (the pid it sends is that namespace's).
 */
static void test_pod_calls_in_their_pod(void **state)
{
	char ctr[BIG], dir[BIG], id[64], out[3][BIG], procs[BIG];
	char tenants[3][BIG], line[512], *body = NULL, buf[256];
	int ports[2], t, i;
	pid_t h[3];

	free_ports(&ports[0], &ports[1]);
	FMT(buf, "127.0.0.1:%d", ports[0]);
	for (i = 0; i < 3; i++) {
		pod_path(&pods[i], true, ctr, sizeof(ctr));
		mkdirs(ctr);
	}
	agent_start_pods(buf);
	FMT(tenants[0], "%s-team", token);
	for (i = 1; i < 3; i++)
		FMT(tenants[i], "pod-%s", pods[i].uid);
	for (i = 0; i < 3; i++) {
		pod_path(&pods[i], true, ctr, sizeof(ctr));
		FMT(id, "%s-p%d", token, i);
		FMT(out[i], "%s/%s.json", ag.dir, id);
		h[i] = pod_run(ctr, i == 0, id, out[i], "bm-sleeper", i == 0 ? "1500" : "200", NULL);
	}
	/* while the first runs: its process in the pod's effect cgroup, the pod in /metrics */
	pod_path(&pods[0], false, dir, sizeof(dir));
	FMT(procs, "%s/burstmeter.%s@%s-p0/cgroup.procs", dir, tenants[0], token);
	FMT(line, "burstmeter_pod_effects_running{tenant=\"%s\",pod_uid=\"%s\","
		 "container_id=\"%s\"} 1\n", tenants[0], pods[0].uid, pods[0].cid);
	for (t = 0; t < 1000; t += 20) {
		free(body);
		body = NULL;
		if (bm_read_file(AT_FDCWD, procs, buf, sizeof(buf)) > 0 &&
		    http_get(ports[0], "/metrics", NULL, &body, NULL, 0) == 200 && strstr(body, line))
			break;
		usleep(20000);
	}
	if (t >= 1000)
		fail_msg("no process in %s, or no '%.*s' in /metrics:\n%s", procs, (int)strlen(line) - 1,
			 line, body ? body : "(no answer)");
	integ_note("in %s: pid %.*s; /metrics: %.*s", procs + strlen(node), (int)strcspn(buf, "\n"),
		   buf, (int)strlen(line) - 1, line);
	free(body);
	for (i = 0; i < 3; i++) {
		json_t *o;

		FMT(id, "%s-p%d", token, i);
		assert_int_equal(wait_code(h[i]), 0);
		o = read_json(out[i]);
		check_pod_outcome(&pods[i], tenants[i], id, o);
		json_decref(o);
	}
	/* ended: no pod runs a call, and no cgroup is left in any pod */
	assert_int_equal(http_get(ports[0], "/metrics", NULL, &body, NULL, 0), 200);
	assert_null(strstr(body, "burstmeter_pod_effects_running{"));
	free(body);
	agent_finish();
	assert_int_equal(remove_tree(node), 0);
	assert_clean(*state);
}

/* In a pod: a launch (the node would run it outside the pod) is refused, 403 naming mode. */
static int pod_launches(void)
{
	json_t *out = NULL;
	int st = bm_client_call(ag.sock, "POST", "/v1/effects",
				json_pack("{s:s, s:[s]}", "id", "launched", "argv", "/bin/true"), &out, 10000);
	const char *msg = json_string_value(json_object_get(out, "error"));

	printf("%d %s\n", st, msg ? msg : "");
	return st == 403 && msg && strstr(msg, "mode") ? 0 : 1;
}

/*
 * Who else calls: a pod may not launch (its calls run in the pod) nor name
 * another tenant; a caller below the kubelet's root in no container we can
 * name is refused; one in a look-alike of the tree under another cgroup,
 * and one in no pod, keep their uid's identity (effects in our parent).
 */
static void test_pod_callers(void **state)
{
	char ctr[BIG], bad[BIG], fake[BIG], id[64], out[BIG];
	char log[BIG];
	json_t *o, *e = NULL;

	pod_path(&pods[1], true, ctr, sizeof(ctr));
	mkdirs(ctr);
	FMT(bad, "%s/kubepods/besteffort/podnot-a-uid/%s", node, C1);
	mkdirs(bad);
	FMT(fake, "%s/elsewhere/kubepods/besteffort/pod%s/%s", node, pods[0].uid, C1);
	mkdirs(fake);
	agent_start_pods("");

	/* a pod's launch, and a pod naming another tenant: refused, from the pod's container */
	FMT(log, "%s/launch.log", ag.dir);
	assert_int_equal(wait_code(harness(ctr, true, log, NULL, pod_launches)), 0);
	integ_note("a pod's launch: %.*s", (int)strcspn(slurp(log), "\n"), slurp(log));
	{
		char *argv[] = { (char *)bm_bin, "run", "-q", "--socket", ag.sock, "--tenant",
				 "someone-else", "--", "/bin/true", NULL };

		FMT(log, "%s/other.log", ag.dir);
		assert_int_equal(wait_code(harness(ctr, false, log, argv, NULL)), 125);
		integ_note("a pod naming another tenant: exit 125, %.*s", (int)strcspn(slurp(log), "\n"),
			   slurp(log));
		assert_non_null(strstr(slurp(log), "tenant"));
	}
	/* a caller below the root in no container we can name: refused, whatever its uid */
	FMT(id, "%s-bad", token);
	FMT(out, "%s/%s.json", ag.dir, id);
	assert_int_equal(wait_code(pod_run(bad, false, id, out, "bm-sleeper", "10", NULL)), 125);
	FMT(log, "%s/%s.log", ag.dir, id);
	integ_note("in no container: %.*s", (int)strcspn(slurp(log), "\n"), slurp(log));
	assert_non_null(strstr(slurp(log), "no pod container"));

	/* a look-alike tree: the uid's identity (root's tenant here), in our parent, no pod */
	FMT(id, "%s-fake", token);
	FMT(out, "%s/%s.json", ag.dir, id);
	assert_int_equal(wait_code(pod_run(fake, false, id, out, "bm-sleeper", "10", NULL)), 0);
	o = read_json(out);
	assert_string_equal(jstr(o, "tenant"), token);
	assert_null(json_object_get(o, "pod"));
	FMT(fake, "%s/burstmeter.%s@%s", cg_parent, token, id);
	assert_string_equal(jstr(o, "cgroup"), fake);
	json_decref(o);

	/* in no pod (the test itself): launches as before, no pod */
	assert_int_equal(call("POST", "/v1/effects", launch_req("nopod", "bm-sleeper", "10", NULL), &e), 201);
	json_decref(e);
	o = wait_final("nopod", 10000);
	assert_string_equal(jstr(o, "state"), "succeeded");
	assert_null(json_object_get(json_object_get(o, "outcome"), "pod"));
	json_decref(o);
	agent_finish();
	assert_int_equal(remove_tree(node), 0);
	assert_clean(*state);
}

/*
 * The pod's memory.max bounds its calls: a call with no ceiling of its own
 * touching twice the pod's limit is killed by the kernel's OOM killer in the
 * pod (memory.events of the pod counts it). Only where v2 hands memory down
 * (the 6.1 VM); on a hybrid host the pod's limit would live in v1, where no
 * pod identity is read: there the call runs in its pod, unbounded.
 */
static void test_pod_memory_bounds_its_calls(void **state)
{
	char ctr[BIG], dir[BIG], id[64], out[BIG], ev[BIG];
	bool bounded = v2_memory();
	const char *oom;
	json_t *o;
	int code;

	pod_path(&pods[1], true, ctr, sizeof(ctr));
	pod_path(&pods[1], false, dir, sizeof(dir));
	mkdirs(ctr);
	if (bounded) {
		char max[BIG];

		delegate_memory(ctr);
		FMT(max, "%s/memory.max", dir);
		assert_int_equal(bm_write_file(AT_FDCWD, max, "64M"), 0);
		FMT(max, "%s/memory.swap.max", dir);
		(void)bm_write_file(AT_FDCWD, max, "0");
	} else {
		integ_note("no v2 memory controller for the pods here (hybrid): the 6.1 VM checks the bound");
	}
	agent_start_pods("");
	FMT(id, "%s-mem", token);
	FMT(out, "%s/%s.json", ag.dir, id);
	code = wait_code(pod_run(ctr, true, id, out, "bm-memtouch", "128", "200"));
	o = read_json(out);
	integ_note("128 MiB in a pod of %s: exit %d, %s, peak %.1f MiB", bounded ? "64 MiB" : "no limit",
		   code, jstr(o, "termination.reason"), jnum(o, "peak.memory_bytes") / MIB);
	assert_string_equal(jstr(o, "pod.uid"), pods[1].uid);
	if (bounded) {
		assert_int_equal(code, 128 + SIGKILL);
		/*
		 * the resident set, bounded by the pod's 64 MiB: give or take pages it
		 * maps but another cgroup was charged for (its binary, libc, shared
		 * memory touched first elsewhere: 1.1 MiB of shmem on 6.1)
		 */
		assert_true(jnum(o, "peak.memory_bytes") <= 66 * MIB);
		FMT(ev, "%s/memory.events", dir);
		oom = strstr(slurp(ev), "oom_kill ");
		assert_non_null(oom);
		assert_true(atoi(oom + 9) >= 1);
		integ_note("the pod's memory.events: oom_kill %d", atoi(oom + 9));
	} else {
		assert_int_equal(code, 0);
		assert_true(jnum(o, "peak.memory_bytes") >= 128 * MIB);
	}
	json_decref(o);
	agent_finish();
	assert_int_equal(remove_tree(node), 0);
	assert_clean(*state);
}

/*
 * The agent killed (SIGKILL) while a pod's call runs, and down until after
 * it ended: the next one adopts it in its pod, takes its exit status from
 * the call's `burstmeter run`, and its outcome still names the pod; a cgroup of an ended
 * call left in a pod (what a kill between the store and the rmdir leaves)
 * is swept at start, or the kubelet could not remove the pod's.
 */
static void test_pod_calls_adopted_and_swept(void **state)
{
	char ctr[BIG], dir[BIG], id[64], out[BIG], stale[BIG];
	char tenant[BIG], log[BIG];
	json_t *o = NULL;
	int status, t, code;
	pid_t h;

	pod_path(&pods[2], true, ctr, sizeof(ctr));
	pod_path(&pods[2], false, dir, sizeof(dir));
	mkdirs(ctr);
	FMT(tenant, "pod-%s", pods[2].uid);
	agent_start_pods("");
	/* one call ends and is stored; its cgroup made again stands for one left behind */
	FMT(id, "%s-done", token);
	FMT(out, "%s/%s.json", ag.dir, id);
	assert_int_equal(wait_code(pod_run(ctr, false, id, out, "bm-sleeper", "10", NULL)), 0);
	FMT(stale, "%s/burstmeter.%s@%s", dir, tenant, id);
	assert_int_equal(mkdir(stale, 0755), 0);

	FMT(id, "%s-long", token);
	FMT(out, "%s/%s.json", ag.dir, id);
	h = pod_run(ctr, true, id, out, "bm-sleeper", "2500", NULL);
	for (t = 0; t < 5000; t += 20) {
		char path[128];

		FMT(path, "/v1/effects/%s?tenant=%s", id, tenant);
		json_decref(o);
		o = NULL;
		if (call("GET", path, NULL, &o) == 200 && !strcmp(jstr(o, "state"), "running"))
			break;
		usleep(20000);
	}
	assert_string_equal(jstr(o, "state"), "running");
	json_decref(o);
	status = agent_stop(SIGKILL);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* down past the command's end: its run says how it ended to the next agent */
	usleep(3000 * 1000);
	agent_start_pods("");
	assert_int_equal(access(stale, F_OK), -1);
	integ_note("swept at start: %s", stale + strlen(node));
	code = wait_code(h);
	if (code) {
		FMT(log, "%s/%s.log", ag.dir, id);
		dump_file("run", log);
		fail_msg("the pod's run exited %d", code);
	}
	o = wait_final_as(tenant, id, 10000);
	assert_string_equal(jstr(o, "state"), "succeeded");
	assert_string_equal(jstr(o, "outcome.pod.uid"), pods[2].uid);
	assert_string_equal(jstr(o, "outcome.pod.qos"), "guaranteed");
	json_decref(o);
	o = read_json(out);
	check_pod_outcome(&pods[2], tenant, id, o);
	json_decref(o);
	agent_finish();
	assert_int_equal(remove_tree(node), 0);
	assert_clean(*state);
}

/*
 * `burstmeter podtenants` writes the pod_tenants file from pod objects (as
 * `kubectl get pods -w -o json --output-watch-events` prints them): a pod
 * labelled burstmeter.io/tenant gets that tenant, one unlabelled its
 * namespace (--namespace); the command run again on a later stream rewrites
 * the file (by rename) and the agent's next call from that pod reads it.
 */
static int podtenants(const char *map, const char *events)
{
	char in[BIG];
	pid_t pid;
	FILE *f;
	int fd;

	FMT(in, "%s/pods.json", ag.dir);
	f = fopen(in, "we");
	assert_non_null(f);
	fputs(events, f);
	assert_int_equal(fclose(f), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		fd = open(in, O_RDONLY);
		dup2(fd, 0);
		execl(bm_bin, bm_bin, "podtenants", "--out", map, "--namespace", "-", (char *)NULL);
		_exit(127);
	}
	return wait_code(pid);
}

/* One watch event of pod p, in namespace ns, labelled with tenant (NULL: no label). */
static void pod_event(char *buf, size_t len, const char *type, const struct pod *p, const char *ns,
		      const char *tenant)
{
	char labels[256] = "";

	if (tenant)
		FMT(labels, "\"burstmeter.io/tenant\":\"%s\"", tenant);
	assert_true(snprintf(buf, len, "{\"type\":\"%s\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
			     "\"metadata\":{\"name\":\"run-%.8s\",\"namespace\":\"%s\",\"uid\":\"%s\","
			     "\"labels\":{%s}},\"spec\":{\"containers\":[{\"name\":\"agent\","
			     "\"image\":\"x\"}]},\"status\":{\"phase\":\"Running\",\"qosClass\":\"%s\"}}}\n",
			     type, p->uid, ns, p->uid, labels, p->qos) < (int)len);
}

static void test_pod_tenants_from_podtenants(void **state)
{
	char ctr[BIG], id[64], out[BIG], map[BIG], ev[3][1024], all[4096], lbl[BIG], nsname[BIG];
	char relabel[BIG];
	struct stat a, b;
	json_t *o;
	int i;

	for (i = 1; i < 3; i++) {
		pod_path(&pods[i], true, ctr, sizeof(ctr));
		mkdirs(ctr);
	}
	FMT(lbl, "%s-lbl", token);
	FMT(nsname, "%s-ns", token);
	FMT(relabel, "%s-relabel", token);
	FMT(map, "%s/pod_tenants", ag.dir);
	/* pods[1] labelled, pods[2] only a namespace; a third pod came and went */
	pod_event(ev[0], sizeof(ev[0]), "ADDED", &pods[1], "agents", lbl);
	pod_event(ev[1], sizeof(ev[1]), "ADDED", &pods[2], nsname, NULL);
	pod_event(ev[2], sizeof(ev[2]), "DELETED", &pods[0], "agents", lbl);
	FMT(all, "%s%s%s", ev[0], ev[1], ev[2]);
	assert_int_equal(podtenants(map, all), 0);
	integ_note("podtenants wrote: %s", slurp(map));
	assert_int_equal(stat(map, &a), 0);
	agent_start_cfg("", "max_running: 16\nmax_queued: 64\ntenant_max_running: 100\n"
			"admit_cpu_pressure: 100\nadmit_mem_available: 0\nkubepods_root: \"%s\"\n"
			"pod_tenants: %s\ntenants:\n  - { uid: 0, tenant: %s }\n", node_rel, map, token);
	for (i = 1; i < 3; i++) {
		pod_path(&pods[i], true, ctr, sizeof(ctr));
		FMT(id, "%s-t%d", token, i);
		FMT(out, "%s/%s.json", ag.dir, id);
		assert_int_equal(wait_code(pod_run(ctr, i == 1, id, out, "bm-sleeper", "10", NULL)), 0);
		o = read_json(out);
		check_pod_outcome(&pods[i], i == 1 ? lbl : nsname, id, o);
		json_decref(o);
	}
	/* the pod labelled later: the command, on the next stream, rewrites the file */
	pod_event(ev[0], sizeof(ev[0]), "MODIFIED", &pods[2], nsname, relabel);
	assert_int_equal(podtenants(map, ev[0]), 0);
	assert_int_equal(stat(map, &b), 0);
	assert_int_not_equal(a.st_ino, b.st_ino);	/* replaced, not written in place */
	pod_path(&pods[2], true, ctr, sizeof(ctr));
	FMT(id, "%s-t3", token);
	FMT(out, "%s/%s.json", ag.dir, id);
	assert_int_equal(wait_code(pod_run(ctr, false, id, out, "bm-sleeper", "10", NULL)), 0);
	o = read_json(out);
	check_pod_outcome(&pods[2], relabel, id, o);
	json_decref(o);
	unlink(map);
	agent_finish();
	assert_int_equal(remove_tree(node), 0);
	assert_clean(*state);
}

/*
 * The harness as a pod's is: not root (uid and gid 65532, no groups, as
 * podspec's runAsUser), in a cgroup namespace of its own (its /proc/self/cgroup
 * and its cgroupfs say "/"), a mount namespace of its own with that view of
 * cgroup2 and its pid namespace's /proc, the socket found by
 * $BURSTMETER_SOCKET (socket_mode 0666). `burstmeter run` then takes the
 * path every real pod takes (the command started by the caller, moved by
 * the agent), and the call is the same effect: in the pod's cgroup, of the
 * pod's tenant, the pod named in the outcome.
 */
static char unpriv_argv[6][BIG];

static int harness_unprivileged(void)
{
	char *argv[] = { (char *)bm_bin, "run", "-q", "--id", unpriv_argv[0], "--outcome",
			 unpriv_argv[1], "--", unpriv_argv[2], unpriv_argv[3], NULL };
	char cg[256];

	if (unshare(CLONE_NEWNS | CLONE_NEWCGROUP) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return 110;
	/* the container's view: cgroup2 with its own cgroup as the root, its own pids */
	if (umount2(v2_mount, MNT_DETACH) || mount("cgroup2", v2_mount, "cgroup2", 0, NULL) ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return 111;
	if (bm_read_file(AT_FDCWD, "/proc/self/cgroup", cg, sizeof(cg)) < 0 || !strstr(cg, "0::/\n"))
		return 112;
	if (setgroups(0, NULL) || setresgid(BM_POD_UID, BM_POD_UID, BM_POD_UID) ||
	    setresuid(BM_POD_UID, BM_POD_UID, BM_POD_UID) || !getuid() || !geteuid())
		return 113;
	if (setenv("BURSTMETER_SOCKET", ag.sock, 1))
		return 114;
	printf("harness: uid %d gid %d, /proc/self/cgroup 0::/, BURSTMETER_SOCKET=%s\n",
	       (int)getuid(), (int)getgid(), getenv("BURSTMETER_SOCKET"));
	fflush(stdout);
	execv(argv[0], argv);
	return 127;
}

static void test_pod_harness_unprivileged(void **state)
{
	char ctr[BIG], id[64], out[BIG], log[BIG], udir[BIG], tenant[BIG], sock[BIG];
	char id0[64], out0[BIG];
	struct stat st;
	json_t *o, *ref;
	int code;

	pod_path(&pods[0], true, ctr, sizeof(ctr));
	mkdirs(ctr);
	/* socket_mode 0666: a pod's uid reaches the socket */
	FMT(sock, "socket_mode: \"0666\"\n");
	agent_start_cfg("", "max_running: 16\nmax_queued: 64\ntenant_max_running: 100\n"
			"admit_cpu_pressure: 100\nadmit_mem_available: 0\nkubepods_root: \"%s\"\n"
			"%spod_tenants: %s/pod-tenants\ntenants:\n  - { uid: 0, tenant: %s }\n", node_rel,
			sock, ag.dir, token);
	FMT(log, "%s/pod-tenants", ag.dir);
	{
		FILE *f = fopen(log, "we");

		assert_non_null(f);
		fprintf(f, "%s %s-team\n", pods[0].uid, token);
		assert_int_equal(fclose(f), 0);
	}
	assert_int_equal(stat(ag.sock, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0666);
	/* where the pod's user may write: its outcome file */
	FMT(udir, "%s/uid%d", ag.dir, BM_POD_UID);
	assert_int_equal(mkdir(udir, 0700), 0);
	assert_int_equal(chown(udir, BM_POD_UID, BM_POD_UID), 0);
	FMT(tenant, "%s-team", token);
	FMT(id, "%s-u", token);
	FMT(out, "%s/%s.json", udir, id);
	FMT(unpriv_argv[0], "%s", id);
	FMT(unpriv_argv[1], "%s", out);
	if (!realpath(wl("bm-sleeper"), unpriv_argv[2]))
		fail_msg("workload bm-sleeper: %s", strerror(errno));
	FMT(unpriv_argv[3], "200");
	/* first as the other pod tests' harness is (root, the host's namespaces): the reference */
	FMT(id0, "%s-r", token);
	FMT(out0, "%s/%s.json", ag.dir, id0);
	assert_int_equal(wait_code(pod_run(ctr, true, id0, out0, "bm-sleeper", "200", NULL)), 0);
	ref = read_json(out0);
	check_pod_outcome(&pods[0], tenant, id0, ref);
	FMT(log, "%s/%s.log", ag.dir, id);
	code = wait_code(harness(ctr, true, log, NULL, harness_unprivileged));
	if (code) {
		dump_file("harness", log);
		fail_msg("the unprivileged harness exited %d", code);
	}
	integ_note("%.*s", (int)strcspn(slurp(log), "\n"), slurp(log));
	o = read_json(out);
	check_pod_outcome(&pods[0], tenant, id, o);
	/* the same outcome and attribution as root's call: tenant, pod, its cgroup's place */
	assert_string_equal(jstr(o, "tenant"), jstr(ref, "tenant"));
	assert_string_equal(jstr(o, "pod.uid"), jstr(ref, "pod.uid"));
	assert_string_equal(jstr(o, "pod.container"), jstr(ref, "pod.container"));
	assert_string_equal(jstr(o, "pod.qos"), jstr(ref, "pod.qos"));
	assert_string_equal(jstr(o, "termination.reason"), jstr(ref, "termination.reason"));
	assert_int_equal(strrchr(jstr(o, "cgroup"), '/') - jstr(o, "cgroup"),
			 strrchr(jstr(ref, "cgroup"), '/') - jstr(ref, "cgroup"));
	assert_memory_equal(jstr(o, "cgroup"), jstr(ref, "cgroup"),
			    strrchr(jstr(ref, "cgroup"), '/') - jstr(ref, "cgroup"));
	json_decref(o);
	json_decref(ref);
	/* the agent's records: root's cgroup made first (no pid in its POST), the pod user's
	 * command started by it and named in the POST (the path a real pod takes) */
	ref = wait_final_as(tenant, id0, 10000);
	o = wait_final_as(tenant, id, 10000);
	assert_string_equal(jstr(o, "state"), "succeeded");
	assert_string_equal(jstr(o, "outcome.pod.uid"), pods[0].uid);
	integ_note("request.pid: root's call %lld, the pod user's %lld",
		   (long long)json_integer_value(jget(ref, "request.pid")),
		   (long long)json_integer_value(jget(o, "request.pid")));
	assert_true(json_integer_value(jget(o, "request.pid")) > 0);
	json_decref(o);
	json_decref(ref);
	unlink(out);
	rmdir(udir);
	agent_finish();
	assert_int_equal(remove_tree(node), 0);
	assert_clean(*state);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pod_calls_in_their_pod, setup_p, teardown_p),
		cmocka_unit_test_setup_teardown(test_pod_callers, setup_p, teardown_p),
		cmocka_unit_test_setup_teardown(test_pod_memory_bounds_its_calls, setup_p, teardown_p),
		cmocka_unit_test_setup_teardown(test_pod_calls_adopted_and_swept, setup_p, teardown_p),
		cmocka_unit_test_setup_teardown(test_pod_tenants_from_podtenants, setup_p, teardown_p),
		cmocka_unit_test_setup_teardown(test_pod_harness_unprivileged, setup_p, teardown_p),
	};
	size_t n;
	int rc = runner_init("test_pods");

	if (rc)
		return rc;
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("pods", tests, n, NULL, NULL);
}

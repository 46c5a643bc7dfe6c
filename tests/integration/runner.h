/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The harness of the tests that run the real binary: start `burstmeter
 * run` ($BM_BIN) on a workload with a private --outcome file, collect its
 * output and status with a hang timeout, read the outcome with jansson,
 * and after every test check that nothing was left behind (cgroups of
 * ours anywhere in the v2 tree, processes, files beside the outcome).
 * Included by each test_*.c that runs the binary; everything is static.
 */
#ifndef BM_RUNNER_H
#define BM_RUNNER_H

/* each test file uses its own part of the harness */
#pragma GCC diagnostic ignored "-Wunused-function"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "integ.h"
#include "base/cgroup.h"

#define MIB (1024.0 * 1024.0)
/* A run that takes longer than this is hung: it is killed and fails. */
#define RUN_TIMEOUT_MS 60000
#define MAX_ARGS 64

static const char *bm_bin;
static char v2_mount[PATH_MAX];	/* where cgroup v2 is mounted */
static char v1_mounts[BM_V1__MAX][PATH_MAX];	/* a hybrid host's v1 hierarchies ("": none) */
static char cg_parent[PATH_MAX];	/* our own v2 cgroup: burstmeter creates effects here */
/* In every cgroup name our runs make (tenant or id), so a concurrent run elsewhere is not ours. */
static char token[32];
static unsigned int run_seq;
static long ncpu;

struct buf {
	char *p;
	size_t len, cap;
};

struct res {
	int status;		/* exit code, or 128 + signal */
	double elapsed_s;	/* measured here: BPF load and teardown included */
	struct buf out, err;
	json_t *o;		/* the --outcome file, NULL if none was written */
};

struct proc {
	pid_t pid;
	int out, err;
	uint64_t t0;
};

struct fx {
	char dir[512];		/* private temporary directory */
	char outcome[600];	/* dir/outcome.json */
	char own[64];		/* a file of the test's own in dir, "" if none */
	char id[64];		/* --id of the last run */
	int ino;		/* inotify on cg_parent: cgroups created, even briefly */
	struct res r;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const char *wl(const char *name)
{
	static char bufs[4][PATH_MAX];
	static unsigned int i;

	return integ_workload(bufs[i++ % 4], PATH_MAX, name);
}

/* ------------------------------------------------------------------ running */

static void buf_read(struct buf *b, int fd, bool *eof)
{
	ssize_t n;

	for (;;) {
		if (b->cap - b->len < 4096) {
			b->cap = b->cap ? 2 * b->cap : 65536;
			b->p = realloc(b->p, b->cap);
			assert_non_null(b->p);
		}
		n = read(fd, b->p + b->len, b->cap - b->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*eof = *eof || n == 0;
			break;
		}
		b->len += (size_t)n;
	}
	b->p[b->len] = '\0';
}

static void res_free(struct res *r)
{
	free(r->out.p);
	free(r->err.p);
	json_decref(r->o);
	memset(r, 0, sizeof(*r));
}

/* Our standard options, and R_NOCMD: no "-- true" after the bad ones (missing command). */
enum { R_TENANT = 1, R_ID = 2, R_OUTCOME = 4, R_QUIET = 8, R_STD = 15, R_NOCMD = 16 };

/* argv: BM_BIN run [--tenant T] [--id ID] [--outcome F] [-q] ARGS... (NULL-terminated) */
static void build_argv(struct fx *f, int flags, va_list ap, char *argv[MAX_ARGS])
{
	int n = 0;
	char *a;

	snprintf(f->id, sizeof(f->id), "%s-%u", token, ++run_seq);
	argv[n++] = (char *)bm_bin;
	argv[n++] = "run";
	if (flags & R_TENANT) {
		argv[n++] = "--tenant";
		argv[n++] = token;
	}
	if (flags & R_ID) {
		argv[n++] = "--id";
		argv[n++] = f->id;
	}
	if (flags & R_OUTCOME) {
		argv[n++] = "--outcome";
		argv[n++] = f->outcome;
	}
	if (flags & R_QUIET)
		argv[n++] = "-q";
	while ((a = va_arg(ap, char *)) && n < MAX_ARGS - 1)
		argv[n++] = a;
	argv[n] = NULL;
}

/* Start argv[0] (a path) with argv (NULL-terminated), stdout and stderr on non-blocking pipes. */
static struct proc start_argv(char *const argv[])
{
	int o[2], e[2];
	struct proc p;

	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	assert_int_equal(pipe2(e, O_CLOEXEC), 0);
	p.t0 = now_ns();
	p.pid = fork();
	assert_true(p.pid >= 0);
	if (p.pid == 0) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		execv(argv[0], argv);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	p.out = o[0];
	p.err = e[0];
	fcntl(p.out, F_SETFL, O_NONBLOCK);
	fcntl(p.err, F_SETFL, O_NONBLOCK);
	return p;
}

static struct proc vstart_bm(struct fx *f, int flags, va_list ap)
{
	char *argv[MAX_ARGS];

	build_argv(f, flags, ap, argv);
	res_free(&f->r);
	unlink(f->outcome);	/* its presence afterwards says this run wrote it */
	return start_argv(argv);
}

static struct proc start_bm(struct fx *f, int flags, ...)
{
	struct proc p;
	va_list ap;

	va_start(ap, flags);
	p = vstart_bm(f, flags, ap);
	va_end(ap);
	return p;
}

/*
 * Collect output until burstmeter exits. Output is not read to EOF after
 * that: a process it wrongly left behind may hold the pipes forever, and
 * check_clean() is what reports it.
 */
static struct res *finish_bm(struct fx *f, struct proc *p)
{
	struct pollfd pfd[2] = { { .fd = p->out, .events = POLLIN }, { .fd = p->err, .events = POLLIN } };
	struct res *r = &f->r;
	bool eof_out = false, eof_err = false, done = false, killed = false;
	json_error_t jerr;
	int status = 0;

	while (!done) {
		poll(pfd, 2, 20);
		buf_read(&r->out, p->out, &eof_out);
		buf_read(&r->err, p->err, &eof_err);
		/* a pipe at EOF polls readable forever: stop watching it */
		pfd[0].fd = eof_out ? -1 : p->out;
		pfd[1].fd = eof_err ? -1 : p->err;
		done = waitpid(p->pid, &status, WNOHANG) == p->pid;
		if (!done && !killed && now_ns() - p->t0 > RUN_TIMEOUT_MS * 1000000ULL) {
			kill(p->pid, SIGKILL);	/* the pid we started, hung */
			killed = true;
		}
	}
	r->elapsed_s = (double)(now_ns() - p->t0) / 1e9;
	buf_read(&r->out, p->out, &eof_out);
	buf_read(&r->err, p->err, &eof_err);
	close(p->out);
	close(p->err);
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (!access(f->outcome, F_OK)) {
		r->o = json_load_file(f->outcome, JSON_REJECT_DUPLICATES, &jerr);
		if (!r->o)
			fail_msg("outcome %s is not JSON: %s (line %d)", f->outcome, jerr.text, jerr.line);
	}
	if (killed)
		fail_msg("burstmeter hung for %d ms and was killed", RUN_TIMEOUT_MS);
	return r;
}

/* Run burstmeter to its end; flags add our standard options before the NULL-terminated rest. */
static struct res *run_bm(struct fx *f, int flags, ...)
{
	struct proc p;
	va_list ap;

	va_start(ap, flags);
	p = vstart_bm(f, flags, ap);
	va_end(ap);
	return finish_bm(f, &p);
}

/* ---------------------------------------------------------------- outcome */

static json_t *jget(json_t *root, const char *path)
{
	char buf[128], *tok, *save = NULL;
	json_t *j = root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok && j; tok = strtok_r(NULL, ".", &save))
		j = json_object_get(j, tok);
	return j;
}

static double jnum(json_t *o, const char *path)
{
	json_t *j = jget(o, path);

	if (!json_is_number(j))
		fail_msg("outcome: %s is missing or not a number", path);
	return json_number_value(j);
}

static long long jint(json_t *o, const char *path)
{
	json_t *j = jget(o, path);

	if (!json_is_integer(j))
		fail_msg("outcome: %s is missing or not an integer", path);
	return json_integer_value(j);
}

static const char *jstr(json_t *o, const char *path)
{
	json_t *j = jget(o, path);

	if (!json_is_string(j))
		fail_msg("outcome: %s is missing or not a string", path);
	return json_string_value(j);
}

static long long hist_sum(json_t *o, const char *dim)
{
	char path[64];
	json_t *c, *v;
	long long sum = 0;
	size_t i;

	snprintf(path, sizeof(path), "histograms.%s.count", dim);
	c = jget(o, path);
	if (!json_is_array(c))
		fail_msg("outcome: %s is missing", path);
	json_array_foreach(c, i, v)
		sum += json_integer_value(v);
	return sum;
}

/* Non-zero windows of a dimension: every bucket but the first (which holds 0). */
static long long hist_nonzero(json_t *o, const char *dim)
{
	char path[64];

	snprintf(path, sizeof(path), "histograms.%s.count", dim);
	return hist_sum(o, dim) - json_integer_value(json_array_get(jget(o, path), 0));
}

static const char *const dims[] = { "cpu_cores", "memory_bytes", "pids", "net_tx_bytes_per_s",
				    "runq_delay_ms", "io_read_bytes_per_s", "io_write_bytes_per_s",
				    "io_ops_per_s", "dirty_bytes_per_s" };

/* What every metered outcome must hold, whatever ran. */
static void check_metered(struct fx *f, json_t *o, double window_ms)
{
	long long windows = jint(o, "totals.windows");
	char prefix[2 * PATH_MAX];
	unsigned int d;

	assert_string_equal(jstr(o, "schema"), "burstmeter.outcome/v1");
	assert_string_equal(jstr(o, "id"), f->id);
	assert_string_equal(jstr(o, "tenant"), token);
	snprintf(prefix, sizeof(prefix), "%s/burstmeter.%s@%s", cg_parent, token, f->id);
	assert_string_equal(jstr(o, "cgroup"), prefix);
	assert_between(jnum(o, "window_ms"), window_ms, window_ms);
	/* every window of the effect's life is in every histogram, once */
	for (d = 0; d < sizeof(dims) / sizeof(dims[0]); d++)
		if (hist_sum(o, dims[d]) != windows)
			fail_msg("histograms.%s counts %lld windows, totals.windows is %lld", dims[d],
				 hist_sum(o, dims[d]), windows);
	assert_int_equal(jint(o, "meter.lost_records"), 0);
	assert_int_equal(jint(o, "meter.task_storage_full"), 0);
	assert_int_equal(jint(o, "meter.mm_map_full"), 0);
}

static void check_completed(struct fx *f, struct res *r)
{
	if (r->status != 0)
		fail_msg("exit %d, stderr: %s", r->status, r->err.p ? r->err.p : "");
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "completed");
	assert_int_equal(jint(r->o, "exit.code"), 0);
	check_metered(f, r->o, 10);
}

/* ------------------------------------------------------ nothing left behind */

/* Kill what is in a cgroup of ours, wait until it is empty, remove it. */
static void remove_cgroup(const char *path)
{
	char file[PATH_MAX + 32], buf[256];
	int i, fd;
	ssize_t n;

	snprintf(file, sizeof(file), "%s/cgroup.kill", path);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "1", 1) < 0)
			print_error("cannot kill %s: %s\n", path, strerror(errno));
		close(fd);
	}
	snprintf(file, sizeof(file), "%s/cgroup.events", path);
	for (i = 0; i < 200; i++) {
		fd = open(file, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = '\0';
		if (!strstr(buf, "populated 1"))
			break;
		usleep(10000);
	}
	for (i = 0; i < 200 && rmdir(path) && errno == EBUSY; i++)
		usleep(10000);
}

/* Depth first under dir: every burstmeter.* cgroup of ours is reported and removed. */
static int sweep_cgroups(const char *dir, int depth)
{
	char sub[PATH_MAX];
	struct dirent *de;
	int found = 0;
	DIR *d;

	if (depth > 32 || !(d = opendir(dir)))
		return 0;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		found += sweep_cgroups(sub, depth + 1);
		if (!strncmp(de->d_name, "burstmeter.", 11) && strstr(de->d_name, token)) {
			print_error("left behind: cgroup %s\n", sub);
			remove_cgroup(sub);
			found++;
		}
	}
	closedir(d);
	return found;
}

/* Our children (burstmeter's orphans come to us: we are a subreaper), from /proc. */
static int kill_children(void)
{
	char path[300], buf[512], *p;
	struct dirent *de;
	int found = 0, fd, ppid;
	ssize_t n;
	DIR *d = opendir("/proc");

	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		p = strrchr(buf, ')');
		if (!p || sscanf(p, ") %*c %d", &ppid) != 1 || ppid != getpid())
			continue;
		*p = '\0';	/* "PID (comm" is all we print */
		print_error("left behind: process %s (%s)\n", de->d_name, strchr(buf, '(') + 1);
		kill(atoi(de->d_name), SIGKILL);
		found++;
	}
	if (d)
		closedir(d);
	return found;
}

/* Reap zombies handed to us; children still alive after a grace are leftovers. */
static int sweep_processes(void)
{
	uint64_t deadline = now_ns() + 1000000000ULL;
	bool killed = false;
	int found = 0;
	siginfo_t si;

	for (;;) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0)
			return found;	/* ECHILD: no child at all */
		if (si.si_pid)
			continue;
		if (now_ns() < deadline) {
			usleep(10000);
			continue;
		}
		if (killed) {
			/* stuck in the kernel: give up rather than hang the suite */
			print_error("left behind: children that SIGKILL does not end\n");
			return found + 1;
		}
		found += kill_children();
		killed = true;
		deadline = now_ns() + 2000000000ULL;
	}
}

static int sweep_files(struct fx *f, bool remove_all)
{
	char path[PATH_MAX + 256];
	struct dirent *de;
	int found = 0;
	DIR *d = opendir(f->dir);

	while (d && (de = readdir(d))) {
		bool expected = !strcmp(de->d_name, "outcome.json") || !strcmp(de->d_name, f->own);

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!expected) {
			print_error("left behind: file %s/%s\n", f->dir, de->d_name);
			found++;
		}
		snprintf(path, sizeof(path), "%s/%s", f->dir, de->d_name);
		if (!expected || remove_all)
			unlink(path);
	}
	if (d)
		closedir(d);
	return found;
}

static int check_clean(struct fx *f)
{
	int found = sweep_processes() + sweep_cgroups(v2_mount, 0), i;

	/* the v1 twins of a hybrid host too (after v2: their tasks are gone with it) */
	for (i = 0; i < BM_V1__MAX; i++)
		if (v1_mounts[i][0])
			found += sweep_cgroups(v1_mounts[i], 0);
	return found + sweep_files(f, false);
}

#define assert_clean(f) assert_int_equal(check_clean(f), 0)

/* cgroups of ours created (even if removed again) since the last call */
static int cgroups_created(struct fx *f)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ev;
	int found = 0;
	ssize_t n;
	char *p;

	while ((n = read(f->ino, buf, sizeof(buf))) > 0) {
		for (p = buf; p < buf + n; p += sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)p;
			if ((ev->mask & IN_CREATE) && ev->len && strstr(ev->name, token))
				found++;
		}
	}
	return found;
}

/* ------------------------------------------------------------ fixtures */

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	struct fx *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "%s/bm-integ.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->outcome, sizeof(f->outcome), "%s/outcome.json", f->dir);
	f->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (f->ino < 0 || inotify_add_watch(f->ino, cg_parent, IN_CREATE) < 0) {
		print_error("inotify on %s: %s\n", cg_parent, strerror(errno));
		return -1;
	}
	*state = f;
	return 0;
}

/* After a failed test: clean up whatever is left, so that the next test starts clean. */
static int teardown(void **state)
{
	struct fx *f = *state;
	int found;

	res_free(&f->r);
	found = check_clean(f);
	sweep_files(f, true);
	rmdir(f->dir);
	close(f->ino);
	free(f);
	return found ? -1 : 0;
}

/* ------------------------------------------------------ ground truth: CPU */

/*
 * A CPU peak is only as high as the scheduler lets the workload run: when
 * other work holds the CPUs for a whole window, a true 1-core spike shows
 * less. Such scheduling-dependent bounds get up to ATTEMPTS runs; the
 * exact ones (totals, counts, agreement with cpu.stat) must hold every run.
 */
#define ATTEMPTS 3

/* true to run again: v is outside [lo, hi] and attempts are left (it fails after the last). */
static bool retry_busy(int attempt, const char *what, double v, double lo, double hi)
{
	char load[64] = "?";
	FILE *fp;

	if (v >= lo && v <= hi)
		return false;
	if (attempt + 1 >= ATTEMPTS)
		fail_msg("%s = %.9g, expected within [%.9g, %.9g] (%d runs)", what, v, lo, hi, ATTEMPTS);
	fp = fopen("/proc/loadavg", "re");
	if (fp && !fgets(load, sizeof(load), fp))
		snprintf(load, sizeof(load), "?\n");
	if (fp)
		fclose(fp);
	integ_note("%s = %.6g outside [%g, %g]; is the machine busy? loadavg %.*s; running again",
		   what, v, lo, hi, (int)strcspn(load, "\n"), load);
	return true;
}

/*
 * Common start of main(): the gate (root, BTF), the binary and workloads,
 * our v2 cgroup, subreaper (so that a process burstmeter leaves running
 * becomes our child and is seen), a token in every name we create.
 * Returns 0 to go on, or main's exit status.
 */
static int runner_init(const char *prog)
{
	struct bm_cgroup_env env;
	char probe[PATH_MAX];
	int rc = integ_gate(prog);

	if (rc)
		return rc;
	bm_bin = getenv("BM_BIN") && *getenv("BM_BIN") ? getenv("BM_BIN") : "build/burstmeter";
	/* a missing binary is a broken build, never a skip */
	if (access(bm_bin, X_OK) || access(integ_workload(probe, sizeof(probe), "bm-spike"), X_OK)) {
		fprintf(stderr, "%s: %s or the workloads (%s) are missing: run make first\n", prog,
			bm_bin, probe);
		return 1;
	}
	if (bm_cgroup_env_detect("/proc/self/mountinfo", "/proc/self/cgroup", &env) ||
	    bm_cgroup_env_self_dir(&env, cg_parent, sizeof(cg_parent))) {
		fprintf(stderr, "%s: cannot find our cgroup v2 directory\n", prog);
		return 1;
	}
	snprintf(v2_mount, sizeof(v2_mount), "%s", env.v2_mount);
	memcpy(v1_mounts, env.v1_mount, sizeof(v1_mounts));
	if (prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		fprintf(stderr, "%s: PR_SET_CHILD_SUBREAPER: %s\n", prog, strerror(errno));
		return 1;
	}
	integ_favour(prog);
	snprintf(token, sizeof(token), "bmit%d", (int)getpid());
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	printf("# %s: %s, workloads %s, effects under %s, %ld CPUs\n", prog, bm_bin,
	       getenv("BM_WORKLOADS") ? getenv("BM_WORKLOADS") : "build/workloads", cg_parent, ncpu);
	return 0;
}

#endif /* BM_RUNNER_H */

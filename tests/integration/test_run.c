// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter run` end to end: the real binary ($BM_BIN, default
 * build/burstmeter) with real BPF and real cgroups, metering workloads whose
 * use is known exactly ($BM_WORKLOADS, default build/workloads). The
 * outcome is read from --outcome with jansson. Every bound below comes from
 * what the workload does, not from what earlier runs showed.
 *
 * After every test nothing may be left: no burstmeter.* cgroup of ours
 * anywhere in the v2 tree, no process (this binary is a child subreaper, so
 * whatever burstmeter leaves running becomes our child and is seen), and no
 * file beside the outcome file. What is found is removed, and the test fails.
 */
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

#define MIB (1024.0 * 1024.0)
/* A run that takes longer than this is hung: it is killed and fails. */
#define RUN_TIMEOUT_MS 60000
#define MAX_ARGS 64

static const char *bm_bin;
static char v2_mount[PATH_MAX];	/* where cgroup v2 is mounted */
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

static struct proc vstart_bm(struct fx *f, int flags, va_list ap)
{
	char *argv[MAX_ARGS];
	int o[2], e[2];
	struct proc p;

	build_argv(f, flags, ap, argv);
	res_free(&f->r);
	unlink(f->outcome);	/* its presence afterwards says this run wrote it */
	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	assert_int_equal(pipe2(e, O_CLOEXEC), 0);
	p.t0 = now_ns();
	p.pid = fork();
	assert_true(p.pid >= 0);
	if (p.pid == 0) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		execv(bm_bin, argv);
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
				    "runq_delay_ms" };

/* What every metered outcome must hold, whatever ran. */
static void check_metered(struct fx *f, json_t *o, double window_ms)
{
	long long windows = jint(o, "totals.windows");
	char prefix[2 * PATH_MAX];
	unsigned int d;

	assert_string_equal(jstr(o, "schema"), "burstmeter.outcome/v1");
	assert_string_equal(jstr(o, "id"), f->id);
	assert_string_equal(jstr(o, "tenant"), token);
	snprintf(prefix, sizeof(prefix), "%s/burstmeter.%s.%s", cg_parent, token, f->id);
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
	return sweep_processes() + sweep_cgroups(v2_mount, 0) + sweep_files(f, false);
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
 * bm-spike 40 500 4: one thread, 40 ms of CPU every 500 ms, 4 times.
 * Truth: 160 ms of CPU over ~2 s; each spike covers at least three whole
 * 10 ms windows at one core (0.9 leaves room for an interrupt), and one
 * thread can never exceed one core. The process's own start and exit add
 * a few ms (integ_startup_cpu_s() each). Both meters count the same
 * se.sum_exec_runtime as cpu.stat, so they agree within 2 ms.
 */
static void check_spike(struct fx *f, bool hash)
{
	struct res *r;
	double wall, cpu;
	long long windows;
	int attempt;

	for (attempt = 0;; attempt++) {
		if (hash)
			r = run_bm(f, R_STD, "--meter-hash", "--", wl("bm-spike"), "40", "500", "4", NULL);
		else
			r = run_bm(f, R_STD, "--", wl("bm-spike"), "40", "500", "4", NULL);
		check_completed(f, r);
		wall = jnum(r->o, "wall_seconds");
		cpu = jnum(r->o, "totals.cpu_seconds");
		windows = jint(r->o, "totals.windows");
		assert_between(wall, 1.5, 10);
		assert_true(jnum(r->o, "average.cpu_cores") < 0.3);
		assert_between(cpu, 0.16, 0.16 + 2 * integ_startup_cpu_s());
		assert_between(cpu - jnum(r->o, "meter.cgroup_cpu_seconds"), -0.002, 0.002);
		assert_int_equal(hist_sum(r->o, "cpu_cores"), windows);
		assert_between((double)windows, wall / 0.010 - 3, wall / 0.010 + 3);
		/* each spike fills at least 3 windows; the quiet between them is most of the run */
		assert_between((double)hist_nonzero(r->o, "cpu_cores"), 12, windows / 2.0);
		assert_true(jnum(r->o, "peak.cpu_cores") <= 1.001);
		assert_int_equal(jint(r->o, "peak.pids"), 1);
		assert_int_equal(jint(r->o, "totals.forks"), 0);
		assert_int_equal(jint(r->o, "totals.net_tx_bytes"), 0);
		assert_clean(f);
		if (!retry_busy(attempt, "peak.cpu_cores", jnum(r->o, "peak.cpu_cores"), 0.9, 1.001))
			break;
	}
}

static void test_run_spike(void **state)
{
	check_spike(*state, false);
}

/* The hash meter map (kernels without cgroup storage) must give the same figures. */
static void test_run_spike_meter_hash(void **state)
{
	check_spike(*state, true);
}

/*
 * bm-threads 2 200: two threads released together, 200 ms of CPU each.
 * Truth: min(2, CPUs) cores busy for ~200 ms, 3 tasks (the main thread
 * waits in join); 400 ms of CPU in all, plus start-up.
 */
static void test_run_threads(void **state)
{
	struct fx *f = *state;
	double cores = ncpu < 2 ? (double)ncpu : 2.0;
	struct res *r;
	int attempt;

	for (attempt = 0;; attempt++) {
		r = run_bm(f, R_STD, "--", wl("bm-threads"), "2", "200", NULL);
		check_completed(f, r);
		assert_true(jnum(r->o, "peak.cpu_cores") <= cores + 0.001);
		assert_between(jnum(r->o, "totals.cpu_seconds"), 0.4, 0.4 * 1.25);
		assert_between(jnum(r->o, "totals.cpu_seconds") - jnum(r->o, "meter.cgroup_cpu_seconds"),
			       -0.002, 0.002);
		assert_int_equal(jint(r->o, "peak.pids"), 3);
		assert_clean(f);
		if (!retry_busy(attempt, "peak.cpu_cores", jnum(r->o, "peak.cpu_cores"), 0.9 * cores,
				cores + 0.001))
			break;
	}
}

/*
 * bm-sleeper 300: nothing but exec, a 300 ms sleep and exit. Truth: the
 * CPU it uses is its start (exec, dynamic linking) and its exit, a few ms
 * in at most two windows each; every other window is exactly 0. (A bound on
 * peak.cpu_cores itself would have to allow the exec: at 10 ms windows a
 * 3 ms exec is 0.3 cores.) One task, no forks, no network, and on an idle
 * run queue only a wake-up's worth of waiting.
 */
static void test_run_sleeper(void **state)
{
	struct fx *f = *state;
	struct res *r;
	double cpu;
	int attempt;

	for (attempt = 0;; attempt++) {
		r = run_bm(f, R_STD, "--", wl("bm-sleeper"), "300", NULL);
		check_completed(f, r);
		cpu = jnum(r->o, "totals.cpu_seconds");
		assert_between(cpu, 0, integ_startup_cpu_s());
		assert_true(jnum(r->o, "peak.cpu_cores") * 0.010 <= cpu + 1e-9);
		assert_true(hist_nonzero(r->o, "cpu_cores") >= 1);
		assert_true(jint(r->o, "totals.windows") >= 30);
		assert_int_equal(jint(r->o, "peak.pids"), 1);
		assert_int_equal(jint(r->o, "totals.forks"), 0);
		assert_int_equal(jint(r->o, "totals.net_tx_bytes"), 0);
		assert_between(jnum(r->o, "peak.net_tx_bytes_per_s"), 0, 0);
		assert_clean(f);
		/* a start or an exit that is preempted spreads over more windows, and waits */
		/* start and exit each span at most two windows, or as many as their CPU fills */
		if (retry_busy(attempt, "windows with CPU", (double)hist_nonzero(r->o, "cpu_cores"), 1,
			       4 + 2 * floor(integ_startup_cpu_s() / 0.010) * (getenv("BM_VM") != NULL)) ||
		    retry_busy(attempt, "totals.runq_delay_seconds",
			       jnum(r->o, "totals.runq_delay_seconds"), 0, 0.005))
			continue;
		break;
	}
}

/* --window-ms 50: the windows are 50 ms, and there are wall / 50 ms of them (+0..2 edges). */
static void test_run_window_ms(void **state)
{
	struct fx *f = *state;
	struct res *r;
	double wall, n;

	r = run_bm(f, R_STD, "--window-ms", "50", "--", wl("bm-sleeper"), "300", NULL);
	assert_int_equal(r->status, 0);
	check_metered(f, r->o, 50);
	wall = jnum(r->o, "wall_seconds");
	n = (double)jint(r->o, "totals.windows");
	/* first_win = start / W and end_win = end / W: wall/W < n < wall/W + 2 */
	assert_between(n, wall / 0.050, wall / 0.050 + 2);
	assert_between(n, 6, 9);
	assert_clean(f);
}

/* ------------------------------------------------ ground truth: the others */

/*
 * bm-memtouch 300 30, five times: 300 MiB made resident and held 30 ms,
 * three windows at least. Truth: the peak is 300 MiB plus the process's
 * own few MiB, every run; 10 % above allows for that and nothing more.
 */
static void test_run_memtouch(void **state)
{
	struct fx *f = *state;
	struct res *r;
	int i;

	for (i = 0; i < 5; i++) {
		r = run_bm(f, R_STD, "--", wl("bm-memtouch"), "300", "30", NULL);
		check_completed(f, r);
		assert_between(jnum(r->o, "peak.memory_bytes") / MIB, 300, 330);
		/* it falls back before the exit: the last window holds only the process */
		assert_true(jnum(r->o, "average.memory_bytes") < 300 * MIB);
		assert_clean(f);
	}
}

/* bm-fanout 16 100: 16 children alive together for 100 ms. Truth: 17 tasks, 16 forks. */
static void test_run_fanout(void **state)
{
	struct fx *f = *state;
	struct res *r;

	r = run_bm(f, R_STD, "--", wl("bm-fanout"), "16", "100", NULL);
	check_completed(f, r);
	assert_int_equal(jint(r->o, "peak.pids"), 17);
	assert_int_equal(jint(r->o, "totals.forks"), 16);
	assert_clean(f);
}

/*
 * bm-netburst 33554432 150: exactly 32 MiB of payload through sendmsg() on
 * loopback, between two quiet 150 ms. Truth: 33554432 bytes, to the byte.
 * The burst lasts well under 60 ms while the effect lives over 300 ms, so
 * its best window carries at least 1/6 of the bytes at 5x+ the average rate.
 */
static void test_run_netburst(void **state)
{
	struct fx *f = *state;
	struct res *r;

	r = run_bm(f, R_STD, "--", wl("bm-netburst"), "33554432", "150", NULL);
	check_completed(f, r);
	assert_int_equal(jint(r->o, "totals.net_tx_bytes"), 33554432);
	assert_true(jnum(r->o, "average.net_tx_bytes_per_s") > 0);
	if (!(jnum(r->o, "peak.net_tx_bytes_per_s") >= 5 * jnum(r->o, "average.net_tx_bytes_per_s")))
		fail_msg("peak %.0f B/s is not 5x the average %.0f B/s",
			 jnum(r->o, "peak.net_tx_bytes_per_s"), jnum(r->o, "average.net_tx_bytes_per_s"));
	/* the receiver is the one fork; the sender is the only one that sends */
	assert_int_equal(jint(r->o, "totals.forks"), 1);
	assert_int_equal(jint(r->o, "peak.pids"), 2);
	assert_clean(f);
}

/* ------------------------------------------------ exit statuses and reasons */

static void test_run_exit_failed(void **state)
{
	struct fx *f = *state;
	struct res *r = run_bm(f, R_STD, "--", "false", NULL);

	assert_int_equal(r->status, 1);
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "failed");
	assert_int_equal(jint(r->o, "exit.code"), 1);
	assert_true(json_is_null(jget(r->o, "exit.signal")));
	check_metered(f, r->o, 10);
	assert_clean(f);
}

static void test_run_exit_signaled(void **state)
{
	struct fx *f = *state;
	struct res *r = run_bm(f, R_STD, "--", "sh", "-c", "kill -9 $$", NULL);

	assert_int_equal(r->status, 137);
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "signaled");
	assert_int_equal(jint(r->o, "exit.signal"), 9);
	assert_true(json_is_null(jget(r->o, "exit.code")));
	assert_clean(f);
}

/* Not found: 127, and since nothing can run, no cgroup is made at all (not even briefly). */
static void test_run_exit_not_found(void **state)
{
	struct fx *f = *state;
	struct res *r;

	cgroups_created(f);
	r = run_bm(f, R_STD, "--", "/nonexistent", NULL);
	assert_int_equal(r->status, 127);
	assert_int_equal(cgroups_created(f), 0);
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "failed");
	assert_int_equal(jint(r->o, "exit.code"), 127);
	assert_true(json_is_null(jget(r->o, "cgroup")));
	assert_false(json_is_true(jget(r->o, "retry.eligible")));
	assert_clean(f);
}

static void test_run_exit_not_executable(void **state)
{
	struct fx *f = *state;
	char path[700];
	struct res *r;
	int fd;

	snprintf(f->own, sizeof(f->own), "not-executable");
	snprintf(path, sizeof(path), "%s/%s", f->dir, f->own);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_true(write(fd, "#!/bin/sh\nexit 0\n", 17) == 17);
	close(fd);
	cgroups_created(f);
	r = run_bm(f, R_STD, "--", path, NULL);
	assert_int_equal(r->status, 126);
	assert_int_equal(cgroups_created(f), 0);
	assert_non_null(r->o);
	assert_int_equal(jint(r->o, "exit.code"), 126);
	assert_clean(f);
}

/*
 * --timeout 1 on sleep 10: SIGTERM at 1 s ends sleep at once, so the effect
 * lasts 1 s and a little; exit 124, reason deadline. The 1.5 s bound is on
 * the effect (wall_seconds); the process also loads the BPF first.
 */
static void test_run_deadline(void **state)
{
	struct fx *f = *state;
	struct res *r = run_bm(f, R_STD, "--timeout", "1", "--", "sleep", "10", NULL);

	assert_int_equal(r->status, 124);
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "deadline");
	assert_between(jnum(r->o, "wall_seconds"), 1.0, 1.5);
	assert_between(jnum(r->o, "limits.timeout_seconds"), 1.0, 1.0);
	assert_true(r->elapsed_s < 5);
	assert_false(json_is_true(jget(r->o, "retry.eligible")));
	check_metered(f, r->o, 10);
	assert_clean(f);
}

/* Wait until the effect's cgroup holds a process: signals are forwarded from then on. */
static void wait_effect_running(struct fx *f)
{
	char path[PATH_MAX + 128], buf[64];
	uint64_t deadline = now_ns() + 10000000000ULL;
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/burstmeter.%s.%s/cgroup.procs", cg_parent, token, f->id);
	while (now_ns() < deadline) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf)) : 0;
		if (fd >= 0)
			close(fd);
		if (n > 0)
			return;
		usleep(10000);
	}
	fail_msg("the effect never started in %s", path);
}

/* SIGTERM to burstmeter goes to the command: sleep dies of it, 143, reason cancelled. */
static void test_run_sigterm_cancels(void **state)
{
	struct fx *f = *state;
	struct proc p = start_bm(f, R_STD, "--", "sleep", "10", NULL);
	struct res *r;

	wait_effect_running(f);
	usleep(100000);
	assert_int_equal(kill(p.pid, SIGTERM), 0);
	r = finish_bm(f, &p);
	assert_int_equal(r->status, 143);
	assert_true(r->elapsed_s < 5);
	assert_non_null(r->o);
	assert_string_equal(jstr(r->o, "termination.reason"), "cancelled");
	assert_int_equal(jint(r->o, "exit.signal"), 15);
	assert_clean(f);
}

/*
 * The command exits 0 but leaves a process running in its cgroup (it prints
 * its pid): burstmeter must not wait for it, must kill it, must say so, and
 * must still meter the effect, whose tasks then end after the command did.
 */
static void check_leftover(struct fx *f, const char *window_ms, const char *script, int forks)
{
	struct res *r;
	long pid;

	r = run_bm(f, R_STD, "--window-ms", window_ms, "--", "sh", "-c", script, NULL);
	pid = r->out.p ? strtol(r->out.p, NULL, 10) : 0;
	assert_true(pid > 1);
	sweep_processes();	/* reap it if it came to us as a zombie */
	if (!kill((pid_t)pid, 0))
		fail_msg("the leftover (pid %ld) is still there", pid);
	assert_int_equal(r->status, 0);
	assert_true(r->elapsed_s < 5);
	assert_non_null(r->o);
	assert_between(jnum(r->o, "wall_seconds"), 0, 2);
	assert_true(jint(r->o, "meter.leftover_tasks_killed") >= 1);
	if (strcmp(jstr(r->o, "termination.reason"), "completed"))
		fail_msg("--window-ms %s: termination.reason is %s, stderr: %s", window_ms,
			 jstr(r->o, "termination.reason"), r->err.p ? r->err.p : "");
	check_metered(f, r->o, strtod(window_ms, NULL));
	assert_true(jint(r->o, "totals.windows") >= 1);
	/* sh forked each command of the script, and all were alive together */
	assert_int_equal(jint(r->o, "totals.forks"), forks);
	assert_int_equal(jint(r->o, "peak.pids"), forks + 1);
	assert_clean(f);
}

/* sleep 100 left behind: the command exits at once, and so must burstmeter. */
static void test_run_leftover_killed(void **state)
{
	check_leftover(*state, "10", "sleep 100 >/dev/null 2>&1 & echo $!; exit 0", 1);
}

/*
 * A leftover with 64 MiB resident: killing it takes its teardown (the
 * unmapping, each step an rss_stat event) past the command's exit, into
 * later windows; with 1 ms windows, always. Its meter must still be read
 * (burstmeter 864bb25 failed here: "failed to read the meter", reason
 * meter_error, for every effect whose leftovers died in a later window).
 * Two forks: the leftover and sleep.
 */
static void test_run_leftover_killed_late(void **state)
{
	char script[PATH_MAX + 128];

	snprintf(script, sizeof(script), "%s 64 100000 >/dev/null & echo $!; sleep 0.3; exit 0",
		 wl("bm-memtouch"));
	check_leftover(*state, "1", script, 2);
}

/* ------------------------------------------------------------- bad input */

struct bad {
	const char *flag;	/* what the one line on stderr must name */
	const char *args[4];	/* options before "-- true" (or instead of it) */
	int std;		/* our standard options around them, R_NOCMD */
};

static char intent_5000[5001];
static char name_65[66];

static const struct bad bad_inputs[] = {
	{ "--id", { "--id", "" }, R_TENANT | R_OUTCOME },
	{ "--id", { "--id", "../x" }, R_TENANT | R_OUTCOME },
	{ "--id", { "--id", ".a" }, R_TENANT | R_OUTCOME },
	{ "--id", { "--id", name_65 }, R_TENANT | R_OUTCOME },
	{ "--id", { "--id", "a/b" }, R_TENANT | R_OUTCOME },
	{ "--tenant", { "--tenant", "" }, R_ID | R_OUTCOME },
	{ "--tenant", { "--tenant", "../x" }, R_ID | R_OUTCOME },
	{ "--tenant", { "--tenant", ".." }, R_ID | R_OUTCOME },
	{ "--tenant", { "--tenant", "a b" }, R_ID | R_OUTCOME },
	{ "--tenant", { "--tenant", name_65 }, R_ID | R_OUTCOME },
	{ "--memory", { "--memory", "0" }, R_STD },
	{ "--memory", { "--memory", "-1" }, R_STD },
	{ "--memory", { "--memory", "1P" }, R_STD },
	{ "--memory", { "--memory", "abc" }, R_STD },
	{ "--pids", { "--pids", "0" }, R_STD },
	{ "--pids", { "--pids", "99999999" }, R_STD },
	{ "--cpu", { "--cpu", "0" }, R_STD },
	{ "--cpu", { "--cpu", "abc" }, R_STD },
	{ "--timeout", { "--timeout", "0" }, R_STD },
	{ "--timeout", { "--timeout", "99999999" }, R_STD },
	{ "--timeout", { "--timeout", "abc" }, R_STD },
	{ "--window-ms", { "--window-ms", "0" }, R_STD },
	{ "--window-ms", { "--window-ms", "2000" }, R_STD },
	{ "--window-ms", { "--window-ms", "5x" }, R_STD },
	{ "--intent", { "--intent", intent_5000 }, R_STD },
	{ "--outcome", { "--outcome", "/nonexistent/dir/o.json" }, R_TENANT | R_ID },
	{ "--bogus", { "--bogus" }, R_STD },
	{ "command", { NULL }, R_STD | R_NOCMD },
	{ "command", { "--" }, R_STD | R_NOCMD },
};

static int count_lines(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/*
 * Every bad value: exit 125 before anything exists, with exactly one line
 * on stderr that names the flag. No cgroup is created even for a moment
 * (inotify on the parent sees every mkdir), and no outcome is written.
 */
static void test_run_bad_input(void **state)
{
	struct fx *f = *state;
	unsigned int i;

	memset(intent_5000, 'i', sizeof(intent_5000) - 1);
	memset(name_65, 'n', sizeof(name_65) - 1);
	cgroups_created(f);
	for (i = 0; i < sizeof(bad_inputs) / sizeof(bad_inputs[0]); i++) {
		const struct bad *b = &bad_inputs[i];
		const char *a0 = b->args[0], *a1 = b->args[1];
		struct res *r;

		if (b->std & R_NOCMD)
			r = run_bm(f, b->std & R_STD, a0, NULL);
		else if (!a1)
			r = run_bm(f, b->std & R_STD, a0, "--", "true", NULL);
		else
			r = run_bm(f, b->std & R_STD, a0, a1, "--", "true", NULL);
		if (r->status != 125 || count_lines(r->err.p) != 1 || !strstr(r->err.p, b->flag) ||
		    r->out.len || r->o)
			fail_msg("%s '%.20s': exit %d (want 125), stdout %zu bytes, outcome %s, "
				 "stderr (want one line naming %s):\n%s",
				 a0 ? a0 : "(none)", a1 ? a1 : "", r->status, r->out.len,
				 r->o ? "written" : "none", b->flag, r->err.p ? r->err.p : "");
		if (cgroups_created(f))
			fail_msg("%s '%.20s' created a cgroup", a0 ? a0 : "(none)", a1 ? a1 : "");
		assert_clean(f);
	}
}

/* ------------------------------------------------------------ output modes */

/* --outcome -: the outcome is the one line on stdout (the command writes nothing). */
static void test_run_outcome_stdout(void **state)
{
	struct fx *f = *state;
	json_error_t jerr;
	struct res *r;
	json_t *o;

	r = run_bm(f, R_TENANT | R_ID | R_QUIET, "--outcome", "-", "--", "true", NULL);
	assert_int_equal(r->status, 0);
	assert_null(r->o);
	assert_int_equal(count_lines(r->out.p), 1);
	o = json_loads(r->out.p, JSON_REJECT_DUPLICATES, &jerr);
	if (!o)
		fail_msg("stdout is not JSON: %s\n%s", jerr.text, r->out.p);
	r->o = o;	/* freed with the result */
	assert_string_equal(jstr(o, "termination.reason"), "completed");
	check_metered(f, o, 10);
	assert_clean(f);
}

/* --json: the last line of stderr is the outcome, the same as the one in the file. */
static void test_run_json_stderr(void **state)
{
	struct fx *f = *state;
	json_error_t jerr;
	struct res *r;
	char *last;
	json_t *j;
	bool same;

	r = run_bm(f, R_TENANT | R_ID | R_OUTCOME, "--json", "--", "true", NULL);
	assert_int_equal(r->status, 0);
	assert_non_null(r->o);
	assert_true(r->err.len > 1 && r->err.p[r->err.len - 1] == '\n');
	r->err.p[r->err.len - 1] = '\0';
	last = strrchr(r->err.p, '\n');
	last = last ? last + 1 : r->err.p;
	j = json_loads(last, JSON_REJECT_DUPLICATES, &jerr);
	if (!j)
		fail_msg("the last stderr line is not JSON: %s\n%s", jerr.text, last);
	same = json_equal(j, r->o);
	json_decref(j);
	assert_true(same);
	assert_clean(f);
}

/* ------------------------------------------------------------------- main */

/* Where cgroup v2 is mounted and which cgroup of it we are in. */
static int find_cgroups(void)
{
	char line[4096], root[PATH_MAX], mnt[PATH_MAX], self[PATH_MAX] = "";
	FILE *fp = fopen("/proc/self/mountinfo", "re");
	size_t n;

	while (fp && fgets(line, sizeof(line), fp)) {
		const char *sep = strstr(line, " - ");

		if (sep && !strncmp(sep, " - cgroup2 ", 11) &&
		    sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) == 2) {
			snprintf(v2_mount, sizeof(v2_mount), "%s", mnt);
			break;
		}
	}
	if (fp)
		fclose(fp);
	fp = fopen("/proc/self/cgroup", "re");
	while (fp && fgets(line, sizeof(line), fp))
		if (!strncmp(line, "0::", 3))
			sscanf(line + 3, "%4095s", self);
	if (fp)
		fclose(fp);
	if (!v2_mount[0] || !self[0])
		return -1;
	/* our path is relative to the hierarchy; the mount may show only part of it */
	n = strcmp(root, "/") ? strlen(root) : 0;
	if (strncmp(self, root, n))
		return -1;
	snprintf(cg_parent, sizeof(cg_parent), "%s%s", v2_mount, strcmp(self + n, "/") ? self + n : "");
	return 0;
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_run_bad_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_outcome_stdout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_json_stderr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_exit_failed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_exit_signaled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_exit_not_found, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_exit_not_executable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_sigterm_cancels, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_leftover_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_leftover_killed_late, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_spike, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_spike_meter_hash, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_sleeper, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_window_ms, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_memtouch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_fanout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_netburst, setup, teardown),
	};
	char probe[PATH_MAX];
	size_t n;
	int rc = integ_gate("test_run");

	if (rc)
		return rc;
	bm_bin = getenv("BM_BIN") && *getenv("BM_BIN") ? getenv("BM_BIN") : "build/burstmeter";
	/* a missing binary is a broken build, never a skip */
	if (access(bm_bin, X_OK) || access(integ_workload(probe, sizeof(probe), "bm-spike"), X_OK)) {
		fprintf(stderr, "test_run: %s or the workloads (%s) are missing: run make first\n",
			bm_bin, probe);
		return 1;
	}
	if (find_cgroups()) {
		fprintf(stderr, "test_run: cannot find our cgroup v2 directory\n");
		return 1;
	}
	/* burstmeter's orphans come to us, so that a process it leaves behind is seen */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		fprintf(stderr, "test_run: PR_SET_CHILD_SUBREAPER: %s\n", strerror(errno));
		return 1;
	}
	integ_favour("test_run");
	snprintf(token, sizeof(token), "bmit%d", (int)getpid());
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	printf("# test_run: %s, workloads %s, effects under %s, %ld CPUs\n", bm_bin,
	       getenv("BM_WORKLOADS") ? getenv("BM_WORKLOADS") : "build/workloads", cg_parent, ncpu);
	/* cmocka_run_group_tests_name() would take the whole array: pass what the filter left */
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("run", tests, n, NULL, NULL);
}

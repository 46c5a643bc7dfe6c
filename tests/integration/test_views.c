// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter top` and `burstmeter hist` end to end: the real binary beside
 * a real effect (`burstmeter run` on bm-spike in the background), read
 * without an agent (top and hist then meter the effect themselves, from
 * when they first see it) and through an agent's pinned meter (its whole
 * life), and top's live screen driven in a private tmux server. What is
 * known of bm-spike SPIN PERIOD COUNT: one thread, so a window holds at
 * most one core, and a SPIN of 30 ms fills whole 10 ms windows at one core.
 */
#include <sys/sysmacros.h>

#include "runner.h"
#include "agent_fx.h"

/* A 30 ms spike covers two whole windows at least: one core, minus an interrupt's worth. */
#define PEAK_LO 0.85
#define PEAK_HI 1.01

static char tmux_sock[64];		/* tmux -S: a server of our own, never the user's */
static char tmux_sess[64];		/* the session's name: bmtest-<pid> */
static bool tmux_used;

/* ------------------------------------------------------------ running */

/* Start BM_BIN ARGS... (NULL-terminated) with stdout and stderr on pipes. */
static struct proc start_cmd(const char *a0, ...)
{
	char *argv[MAX_ARGS];
	va_list ap;
	int n = 0;
	char *a;

	argv[n++] = (char *)bm_bin;
	va_start(ap, a0);
	for (a = (char *)a0; a && n < MAX_ARGS - 1; a = va_arg(ap, char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	return start_argv(argv);
}

/* Collect p into r; f->r is where the background run's result goes. */
static struct res *finish_into(struct fx *f, struct proc *p, struct res *r)
{
	struct res keep = f->r;

	memset(&f->r, 0, sizeof(f->r));
	finish_bm(f, p);
	res_free(r);
	*r = f->r;
	f->r = keep;
	if (!r->out.p)
		r->out.p = strdup("");
	return r;
}

/* Wait for the background effect p to be in its cgroup; returns p. */
static struct proc wait_in_cgroup(struct fx *f, struct proc p)
{
	char path[PATH_MAX + 128], buf[64];
	uint64_t deadline = now_ns() + 10000000000ULL;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/burstmeter.%s@%s/cgroup.procs", cg_parent, token, f->id);
	while (now_ns() < deadline) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, sizeof(buf)) : 0;
		if (fd >= 0)
			close(fd);
		if (n > 0)
			return p;
		usleep(10000);
	}
	fail_msg("the effect never started in %s", path);
	return p;
}

/* The background effect: bm-spike in its cgroup, running (no outcome file: nothing to race). */
static struct proc start_spike(struct fx *f, const char *count)
{
	return wait_in_cgroup(f, start_bm(f, R_TENANT | R_ID | R_QUIET, "--", wl("bm-spike"), "30",
					  "100", count, NULL));
}

static void finish_spike(struct fx *f, struct proc *p)
{
	struct res *r;

	res_free(&f->r);
	r = finish_bm(f, p);
	if (r->status)
		fail_msg("burstmeter run exited %d: %s", r->status, r->err.p ? r->err.p : "");
}

/* ------------------------------------------------------------ reading */

/* Field k (0: the id) of the row whose first field is id, into buf (64 bytes); NULL if none. */
static const char *row_field(const char *text, const char *id, int k, char buf[64])
{
	const char *line, *nl;
	int i, n;

	for (line = text; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (sscanf(line, "%63s%n", buf, &n) != 1 || strcmp(buf, id))
			continue;
		for (i = 0, line += n; i < k; i++, line += n)
			if (sscanf(line, "%63s%n", buf, &n) != 1)
				return NULL;
		return buf;
	}
	return NULL;
}

/* The effect id in top --json output; fails if it is not there exactly once. */
static json_t *json_effect(json_t *root, const char *id)
{
	json_t *e, *found = NULL;
	size_t i;

	json_array_foreach(json_object_get(root, "effects"), i, e) {
		if (!strcmp(jstr(e, "id"), id)) {
			assert_null(found);
			found = e;
		}
	}
	if (!found)
		fail_msg("no effect %s in top --json", id);
	return found;
}

struct hists {
	int n;			/* histograms printed */
	long long windows[16];	/* windows in each */
	long long busy[16];	/* of those, in a non-zero bucket */
};

/* Parse hist's output: "<dim> per 10 ms window", a column line, "range : count |bar|" rows. */
static void parse_hists(const char *out, const char *header, struct hists *h)
{
	const char *line = out, *nl, *colon;
	long long c;

	memset(h, 0, sizeof(*h));
	h->n = -1;
	for (; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (!strncmp(line, header, strlen(header)) && h->n < 15) {
			h->n++;
			continue;
		}
		colon = strstr(line, " : ");
		if (h->n < 0 || !colon || (nl && colon > nl) || sscanf(colon + 3, "%lld", &c) != 1)
			continue;
		h->windows[h->n] += c;
		if (strstr(line, " -> ") && strstr(line, " -> ") < colon)
			h->busy[h->n] += c;
	}
	h->n++;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/* ---------------------------------------------------------------- top */

static void check_top_table(struct fx *f, struct res *r)
{
	char buf[64];

	if (r->status)
		fail_msg("top --once exited %d: %s", r->status, r->err.p ? r->err.p : "");
	assert_true(!strncmp(r->out.p, "burstmeter top ", 15));
	assert_non_null(strstr(r->out.p, "ID "));
	assert_non_null(strstr(r->out.p, "STATE"));
	if (!row_field(r->out.p, f->id, 1, buf))
		fail_msg("no row for %s in:\n%s", f->id, r->out.p);
	assert_string_equal(buf, token);
	/* ID TENANT TIME CPU peak: the fourth field after the id */
	assert_non_null(row_field(r->out.p, f->id, 4, buf));
	assert_between(atof(buf), PEAK_LO, PEAK_HI);
}

static void check_top_json(struct fx *f, struct res *r, const char *meter)
{
	json_error_t jerr;
	json_t *root, *e;

	if (r->status)
		fail_msg("top --json exited %d: %s", r->status, r->err.p ? r->err.p : "");
	assert_int_equal(count_lines(r->out.p), 1);
	root = json_loads(r->out.p, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		fail_msg("top --json is not JSON: %s\n%s", jerr.text, r->out.p);
	r->o = root;	/* freed with the result */
	e = json_effect(root, f->id);
	assert_string_equal(jstr(e, "tenant"), token);
	if (meter)
		assert_string_equal(jstr(e, "meter"), meter);
	assert_false(json_is_true(jget(e, "frozen")));
	assert_between(jnum(e, "peak.cpu_cores"), PEAK_LO, PEAK_HI);
	assert_between(jnum(e, "peak.pids"), 0, 1);
	assert_true(jnum(e, "runtime_seconds") > 0.5);
}

/*
 * top --once and --json beside bm-spike 30 100 30 (3 s). No agent: each
 * meters the effect itself for a second, so both run at once to stay
 * within its life.
 */
static void test_top_once_json(void **state)
{
	struct res once = { 0 }, js = { 0 };
	struct fx *f = *state;
	struct proc run, p1, p2;

	run = start_spike(f, "30");
	p1 = start_cmd("top", "--once", NULL);
	p2 = start_cmd("top", "--json", NULL);
	finish_into(f, &p1, &once);
	finish_into(f, &p2, &js);
	check_top_table(f, &once);
	/* an agent of the machine's own would run the effect: then it is the agent's to meter */
	check_top_json(f, &js, access("/sys/fs/bpf/burstmeter", F_OK) ? "top" : NULL);
	res_free(&once);
	res_free(&js);
	finish_spike(f, &run);
	assert_clean(f);
}

/* --------------------------------------------------------------- hist */

/*
 * hist --effect ID: with no meter pinned, the life so far is the second hist
 * meters it (about 100 windows), 30 % of them busy or more (a spike slowed
 * by other load spreads over more windows; some stay idle). With INTERVAL
 * 0.5 and COUNT 2: two histograms of the windows each half second closed
 * (about 50 each).
 */
static void test_hist_effect(void **state)
{
	const char *hdr = "cpu_cores per 10 ms window";
	struct res life = { 0 }, iv = { 0 };
	struct fx *f = *state;
	struct proc run, p;
	struct hists h;

	/* two hists each load their own meter first: seconds each under emulation */
	run = start_spike(f, getenv("BM_VM") ? "250" : "60");
	p = start_cmd("hist", "--effect", f->id, NULL);
	finish_into(f, &p, &life);
	if (life.status)
		fail_msg("hist exited %d: %s", life.status, life.err.p ? life.err.p : "");
	assert_non_null(strstr(life.out.p, "cores : windows  distribution"));
	parse_hists(life.out.p, hdr, &h);
	assert_int_equal(h.n, 1);
	assert_between((double)h.windows[0], 50, 1000);
	assert_between((double)h.busy[0], 0.15 * h.windows[0], 0.9 * h.windows[0]);

	p = start_cmd("hist", "--effect", f->id, "0.5", "2", NULL);
	finish_into(f, &p, &iv);
	if (iv.status)
		fail_msg("hist 0.5 2 exited %d: %s", iv.status, iv.err.p ? iv.err.p : "");
	parse_hists(iv.out.p, hdr, &h);
	assert_int_equal(h.n, 2);
	assert_between((double)h.windows[0], 35, 65);
	assert_between((double)h.windows[1], 40, 60);
	assert_true(h.busy[0] > 0 && h.busy[1] > 0);
	res_free(&life);
	res_free(&iv);
	finish_spike(f, &run);
	assert_clean(f);
}

/* ----------------------------------------------------------------- I/O */

#define IO_BPS (32.0 * 1024 * 1024)

/*
 * top --json and hist --dim iow beside an O_DIRECT writer (bm-io steady:
 * 96 MiB under --io-write-bps 32M, 3 s; 48 MiB under emulation) in a
 * directory on a disk ($BM_IO_DIR, /var/tmp), its working directory
 * (--cwd), so that the ceiling is for that disk. Truth: it writes at the ceiling, so
 * its best window holds at least half the ceiling's rate (a window is
 * never below the mean of a steady second) and hist shows windows of
 * writes.
 */
static void test_views_io(void **state)
{
	const char *env = getenv("BM_IO_DIR"), *hdr = "io_write_bytes_per_s per 10 ms window";
	char dir[PATH_MAX], file[PATH_MAX + 16], tr[PATH_MAX + 16], tool[PATH_MAX];
	struct res js = { 0 }, hist = { 0 };
	struct fx *f = *state;
	struct proc run, p1, p2;
	struct hists h;
	struct stat sb;
	json_t *e;

	snprintf(dir, sizeof(dir), "%s/bm-views.XXXXXX", env && *env ? env : "/var/tmp");
	assert_non_null(mkdtemp(dir));
	assert_int_equal(stat(dir, &sb), 0);
	if (!major(sb.st_dev))
		fail_msg("%s is on no block device: set BM_IO_DIR", dir);
	snprintf(file, sizeof(file), "%s/data", dir);
	snprintf(tr, sizeof(tr), "%s/truth", dir);
	/* run in dir: the workload by its absolute path */
	assert_non_null(realpath(wl("bm-io"), tool));
	run = wait_in_cgroup(f, start_bm(f, R_TENANT | R_ID | R_QUIET, "--io-write-bps", "32M", "--cwd",
					 dir, "--", tool, "steady", file,
					 getenv("BM_VM") ? "48" : "96", tr, NULL));
	p1 = start_cmd("top", "--json", NULL);
	p2 = start_cmd("hist", "--effect", f->id, "--dim", "iow", NULL);
	finish_into(f, &p1, &js);
	finish_into(f, &p2, &hist);
	finish_spike(f, &run);
	unlink(file);
	unlink(tr);
	rmdir(dir);
	if (js.status)
		fail_msg("top --json exited %d: %s", js.status, js.err.p ? js.err.p : "");
	js.o = json_loads(js.out.p, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(js.o);
	e = json_effect(js.o, f->id);
	if (hist.status)
		fail_msg("hist --dim iow exited %d: %s", hist.status, hist.err.p ? hist.err.p : "");
	parse_hists(hist.out.p, hdr, &h);
	integ_note("io: top's peak iow %.0f B/s (ceiling %.0f); hist --dim iow: %lld of %lld windows "
		   "wrote", jnum(e, "peak.io_write_bytes_per_s"), IO_BPS, h.busy[0], h.windows[0]);
	assert_true(jnum(e, "peak.io_write_bytes_per_s") >= IO_BPS / 2);
	assert_int_equal(h.n, 1);
	assert_true(h.busy[0] > 0);
	res_free(&js);
	res_free(&hist);
	assert_clean(f);
}

/* ---------------------------------------------------------------- tmux */

/* tmux -L <ours> ARGS... (NULL-terminated); returns its exit status. */
static int tmux(const char *a0, ...)
{
	char *argv[MAX_ARGS] = { "tmux", "-S", tmux_sock };
	int n = 3, status;
	va_list ap;
	pid_t pid;
	char *a;

	va_start(ap, a0);
	for (a = (char *)a0; a && n < MAX_ARGS - 1; a = va_arg(ap, char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		/* "no server running" is an answer here, not an error */
		dup2(open("/dev/null", O_WRONLY | O_CLOEXEC), 2);
		execvp("tmux", argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* What the pane shows, into buf. */
static char *capture(char *buf, size_t len)
{
	char cmd[256];
	size_t n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "tmux -S %s capture-pane -p -t %s", tmux_sock, tmux_sess);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(buf, 1, len - 1, p);
	buf[n] = '\0';
	pclose(p);
	return buf;
}

/* Wait until the pane shows what; returns the capture (fails after timeout_ms). */
static char *wait_screen(const char *what, char *buf, size_t len, int timeout_ms)
{
	int t;

	for (t = 0; t < timeout_ms; t += 50) {
		if (strstr(capture(buf, len), what))
			return buf;
		usleep(50000);
	}
	fail_msg("the screen never showed '%s':\n%s", what, buf);
	return buf;
}

static void wait_session_end(int timeout_ms)
{
	int t;

	for (t = 0; t < timeout_ms; t += 50) {
		if (tmux("has-session", "-t", tmux_sess, NULL))
			return;
		usleep(50000);
	}
	fail_msg("the tmux session did not end in %d ms", timeout_ms);
}

/*
 * Start top in the pane of a new session. The file "after" gets top's pid
 * (its shell execs it), then its exit status and the tty's modes after it.
 */
static void tmux_top(struct fx *f)
{
	char bin[PATH_MAX], cmd[4 * PATH_MAX];

	if (access("/usr/bin/tmux", X_OK))
		fail_msg("tmux is missing (apt-get install tmux)");
	assert_non_null(realpath(bm_bin, bin));
	snprintf(f->own, sizeof(f->own), "after");
	snprintf(cmd, sizeof(cmd), "sh -c 'echo $$ > %s/after; exec %s top'; echo $? >> %s/after; "
		 "stty -a >> %s/after", f->dir, bin, f->dir, f->dir);
	tmux_used = true;
	assert_int_equal(tmux("new-session", "-d", "-s", tmux_sess, "-x", "160", "-y", "40", cmd,
			      NULL), 0);
}

/* The file "after" once it holds what; returns its text. */
static char *read_after(struct fx *f, const char *what, char *buf, size_t len)
{
	char path[PATH_MAX + 16];
	ssize_t n;
	int fd, t;

	snprintf(path, sizeof(path), "%s/after", f->dir);
	for (t = 0, buf[0] = '\0'; t < 3000 && !strstr(buf, what); t += 20, usleep(20000)) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd >= 0 ? read(fd, buf, len - 1) : 0;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = '\0';
	}
	return buf;
}

/* top exited 0 and left the terminal as it found it (canonical mode, echo on). */
static void check_after(struct fx *f)
{
	char buf[4096], *st;

	read_after(f, "icanon", buf, sizeof(buf));
	st = strchr(buf, '\n');
	if (!st || strncmp(st, "\n0\n", 3) || !strstr(buf, "icanon") || strstr(buf, "-icanon") ||
	    strstr(buf, "-echo "))
		fail_msg("top's pid, status and the terminal after it:\n%s", buf);
}

/*
 * The live screen over a 6 s effect: its row and the header appear, the
 * TIME column moves between two captures (it refreshes), a sort key
 * re-sorts, q quits and gives the terminal back.
 */
static void test_top_tmux(void **state)
{
	static char a[16384], b[16384];
	char t1[64], t2[64];
	struct fx *f = *state;
	struct proc run;

	run = start_spike(f, "60");
	tmux_top(f);
	wait_screen(f->id, a, sizeof(a), 10000);
	assert_non_null(strstr(a, "burstmeter top "));
	assert_non_null(strstr(a, "sort: cpu peak"));
	assert_non_null(strstr(a, "TIME"));
	assert_non_null(row_field(a, f->id, 2, t1));
	usleep(300000);
	assert_non_null(row_field(capture(b, sizeof(b)), f->id, 2, t2));
	if (!strcmp(t1, t2))
		fail_msg("TIME of %s did not move in 300 ms (%s): no refresh", f->id, t1);
	assert_int_equal(tmux("send-keys", "-t", tmux_sess, "m", NULL), 0);
	wait_screen("sort: mem peak", a, sizeof(a), 2000);
	assert_int_equal(tmux("send-keys", "-t", tmux_sess, "q", NULL), 0);
	wait_session_end(3000);
	check_after(f);
	finish_spike(f, &run);
	assert_clean(f);
}

/* SIGTERM (a service stopping it) and Ctrl-C (SIGINT) also give the terminal back. */
static void test_top_tmux_signals(void **state)
{
	static char a[16384];
	struct fx *f = *state;
	char pid[64], path[PATH_MAX + 16];
	int i;

	for (i = 0; i < 2; i++) {
		tmux_top(f);
		wait_screen("sort: cpu peak", a, sizeof(a), 10000);
		read_after(f, "\n", pid, sizeof(pid));
		assert_true(atoi(pid) > 0);
		if (i == 0)
			assert_int_equal(kill(atoi(pid), SIGTERM), 0);
		else
			assert_int_equal(tmux("send-keys", "-t", tmux_sess, "C-c", NULL), 0);
		wait_session_end(3000);
		check_after(f);
		snprintf(path, sizeof(path), "%s/after", f->dir);
		unlink(path);
	}
	assert_clean(f);
}

/* ---------------------------------------------------------- bad input */

struct bad {
	const char *args[6];
	const char *names;	/* what the one line must name */
};

static const struct bad bad_inputs[] = {
	{ { "top", "--bogus" }, "--bogus" },
	{ { "top", "--sort", "bogus" }, "--sort" },
	{ { "top", "--interval", "0" }, "--interval" },
	{ { "top", "--sort" }, "--sort" },
	{ { "top", "extra" }, "extra" },
	{ { "hist", "--effect", "x", "--bogus" }, "--bogus" },
	{ { "hist", "--effect", "x", "--dim", "bogus" }, "--dim" },
	{ { "hist", "--effect", "x", "0" }, "INTERVAL" },
	{ { "hist", "--effect", "x", "1", "0" }, "COUNT" },
	{ { "hist", "--effect", "../x" }, "--effect" },
	{ { "hist", "--effect", "no-such-effect-here" }, "--effect" },
	{ { "hist", "--cgroup", "/nonexistent" }, "--cgroup" },
	{ { "hist" }, "--effect" },
};

/* Each: exit 125 (bad input, as for run), nothing on stdout, one line on stderr naming the flag. */
static void test_views_bad_input(void **state)
{
	struct fx *f = *state;
	unsigned int i;

	for (i = 0; i < sizeof(bad_inputs) / sizeof(bad_inputs[0]); i++) {
		const char *const *a = bad_inputs[i].args;
		struct res r = { 0 };
		struct proc p = start_cmd(a[0], a[1], a[2], a[3], a[4], a[5], NULL);

		finish_into(f, &p, &r);
		if (r.status != 125 || r.out.len || count_lines(r.err.p) != 1 ||
		    !strstr(r.err.p, bad_inputs[i].names))
			fail_msg("%s %s %s %s: exit %d (want 125), stdout %zu bytes, stderr (want "
				 "one line naming %s):\n%s", a[0], a[1] ? a[1] : "",
				 a[2] ? a[2] : "", a[3] ? a[3] : "", r.status, r.out.len,
				 bad_inputs[i].names, r.err.p ? r.err.p : "");
		res_free(&r);
	}
	assert_clean(f);
}

/* ------------------------------------------------------ the agent's meter */

/*
 * An agent of our own, admission off (a busy machine must not queue the
 * effect); root's tenant is our token.
 */
static void agent_start(void)
{
	assert_int_equal(agent_fx_init("views", "bm-views"), 0);
	agent_start_cfg("", "admit_cpu_pressure: 100\nadmit_mem_available: 0\n"
			"tenants:\n  - { uid: 0, tenant: %s }\n", token);
}

/* Stop the agent we started, if any, and remove its directory; returns what it left. */
static int agent_cleanup(void)
{
	int found;

	if (!ag.dir[0])
		return 0;
	found = agent_leftovers();
	rm_rf(ag.dir);
	memset(&ag, 0, sizeof(ag));
	return found;
}

/*
 * Through the agent's pinned meter (--pin-dir): the effect the agent runs is
 * read, not metered again: meter "agent", no '*', and hist shows its whole
 * life so far (a second and more: 100 windows and more), without "counts
 * start now".
 */
static void test_views_agent_meter(void **state)
{
	struct res once = { 0 }, js = { 0 }, life = { 0 };
	struct fx *f = *state;
	char pinned[PATH_MAX + 32];
	json_t *req, *e = NULL;
	struct proc p1, p2, p3;
	struct hists h;

	agent_start();
	snprintf(f->id, sizeof(f->id), "%s-ag", token);
	req = launch_req(f->id, "bm-spike", "30", "100", "30", NULL);
	json_object_set_new(req, "intent", json_string("views"));
	assert_int_equal(call("POST", "/v1/effects", req, &e), 201);
	json_decref(e);
	usleep(1200000);
	p1 = start_cmd("top", "--once", "--pin-dir", ag.pins, NULL);
	p2 = start_cmd("top", "--json", "--pin-dir", ag.pins, NULL);
	p3 = start_cmd("hist", "--pin-dir", ag.pins, "--effect", f->id, NULL);
	finish_into(f, &p1, &once);
	finish_into(f, &p2, &js);
	finish_into(f, &p3, &life);
	check_top_table(f, &once);
	snprintf(pinned, sizeof(pinned), "meter pinned at %s", ag.pins);
	assert_non_null(strstr(once.out.p, pinned));
	check_top_json(f, &js, "agent");
	assert_false(json_is_true(jget(json_effect(js.o, f->id), "counts_since_top")));
	if (life.status || strstr(life.err.p ? life.err.p : "", "counts start now"))
		fail_msg("hist on the agent's meter: exit %d, stderr: %s", life.status,
			 life.err.p ? life.err.p : "");
	parse_hists(life.out.p, "cpu_cores per 10 ms window", &h);
	assert_int_equal(h.n, 1);
	assert_between((double)h.windows[0], 100, 400);
	assert_between((double)h.busy[0], 0.15 * h.windows[0], 0.9 * h.windows[0]);
	res_free(&once);
	res_free(&js);
	res_free(&life);
	e = wait_final(f->id, 20000);
	assert_string_equal(jstr(e, "state"), "succeeded");
	json_decref(e);
	assert_int_equal(agent_cleanup(), 0);
	assert_clean(f);
}

/* ---------------------------------------------------------- fixtures */

static int setup_views(void **state)
{
	snprintf(tmux_sess, sizeof(tmux_sess), "bmtest-%d", (int)getpid());
	snprintf(tmux_sock, sizeof(tmux_sock), "/tmp/bm-views-tmux-%d", (int)getpid());
	tmux_used = false;
	return setup(state);
}

/* Whatever a failed test left: the tmux server, the agent; then the harness's sweep. */
static int teardown_views(void **state)
{
	int found = 0;

	if (tmux_used && !tmux("has-session", "-t", tmux_sess, NULL)) {
		print_error("left behind: tmux session %s\n", tmux_sess);
		tmux("kill-server", NULL);
		found++;
	}
	/* tmux leaves its socket behind when its last session ends; its lock when its server failed */
	if (tmux_used) {
		char lock[sizeof(tmux_sock) + 8];

		snprintf(lock, sizeof(lock), "%s.lock", tmux_sock);
		unlink(tmux_sock);
		unlink(lock);
	}
	found += agent_cleanup();
	return teardown(state) || found ? -1 : 0;
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_views_bad_input, setup_views, teardown_views),
		cmocka_unit_test_setup_teardown(test_top_once_json, setup_views, teardown_views),
		cmocka_unit_test_setup_teardown(test_hist_effect, setup_views, teardown_views),
		cmocka_unit_test_setup_teardown(test_views_io, setup_views, teardown_views),
		cmocka_unit_test_setup_teardown(test_top_tmux, setup_views, teardown_views),
		cmocka_unit_test_setup_teardown(test_top_tmux_signals, setup_views, teardown_views),
		cmocka_unit_test_setup_teardown(test_views_agent_meter, setup_views,
						teardown_views),
	};
	size_t n;
	int rc = runner_init("test_views");

	if (rc)
		return rc;
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("views", tests, n, NULL, NULL);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `burstmeter hist`: one effect's per-window histograms on the terminal, in
 * the style of runqlat: its life so far, or every INTERVAL the windows that
 * closed during it (the difference of two finalized summaries).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "agent/config.h"
#include "base/common.h"
#include "base/parse.h"
#include "meter/window.h"
#include "views/hist.h"
#include "views/histfmt.h"
#include "views/view.h"

#define DIM_ALL -1
/* Shorter than one 10 ms window shows nothing; longer than a day is a typo. */
#define INTERVAL_MIN_NS (10 * BM_NSEC_PER_MSEC)
#define INTERVAL_MAX_NS (86400 * BM_NSEC_PER_SEC)
/* How often a sampling hist reads the meter: an effect that ends keeps its last reading. */
#define SAMPLE_STEP_NS (100 * BM_NSEC_PER_MSEC)

struct hist_opts {
	const char *cgroup, *effect, *pin_dir;
	int dim;			/* enum bm_dim, or DIM_ALL */
	uint64_t interval_ns;		/* 0: the life so far, once */
	uint64_t count;			/* 0: until Ctrl-C */
};

static const char hist_usage[] =
"Usage: burstmeter hist (--cgroup PATH | --effect ID) [--dim DIM] [--pin-dir DIR]\n"
"                       [INTERVAL [COUNT]]\n"
"An effect's per-window histograms, like runqlat: with no INTERVAL, every window of its\n"
"life so far; else, every INTERVAL seconds, the windows that closed during it, COUNT times\n"
"(default: until Ctrl-C). Reads the agent's pinned meter; an effect it does not meter (or\n"
"any effect, with no agent) is metered by hist from now, and then the life so far is 1 s.\n"
"\n"
"  --cgroup PATH   a cgroup v2 directory (relative: under the v2 mount)\n"
"  --effect ID     the effect burstmeter.<tenant>.ID, found in the cgroup v2 tree\n"
"  --dim DIM       cpu, mem, pids, net, runq, ior, iow, iops, dirty or all (default cpu)\n"
"  --pin-dir DIR   the agent's pinned meter (default " BM_AGENT_PIN_DIR ")\n"
"  INTERVAL        seconds, decimals allowed (0.5) or with a unit (250ms)\n"
"\n"
"EXAMPLES\n"
"  burstmeter hist --effect tc-42\n"
"  burstmeter hist --effect tc-42 --dim all\n"
"  burstmeter hist --effect tc-42 --dim runq 1 10\n"
"  burstmeter hist --cgroup /sys/fs/cgroup/kubepods.slice 0.5\n";

/* The positional INTERVAL [COUNT]. Returns -1 to go on, else the exit status. */
static int hist_positional(int argc, char **argv, struct hist_opts *o)
{
	if (optind < argc &&
	    bm_parse_duration_ns(argv[optind], INTERVAL_MIN_NS, INTERVAL_MAX_NS, &o->interval_ns))
		return bm_view_bad_value("hist", "INTERVAL", argv[optind],
					 "seconds, 0.01 to 86400");
	if (optind + 1 < argc && bm_parse_u64(argv[optind + 1], 1, UINT32_MAX, &o->count))
		return bm_view_bad_value("hist", "COUNT", argv[optind + 1],
					 "a whole number from 1");
	if (optind + 2 < argc) {
		bm_err("unexpected argument '%s' (see 'burstmeter hist --help')", argv[optind + 2]);
		return BM_EXIT_USAGE;
	}
	if (!o->cgroup == !o->effect) {
		bm_err("expected one of --cgroup PATH or --effect ID "
		       "(see 'burstmeter hist --help')");
		return BM_EXIT_USAGE;
	}
	return -1;
}

/* Returns -1 to go on, else the exit status (0 after --help, 2 on bad usage). */
static int hist_args(int argc, char **argv, struct hist_opts *o)
{
	static const struct option opts[] = {
		{ "cgroup", required_argument, NULL, 'c' },
		{ "effect", required_argument, NULL, 'e' },
		{ "dim", required_argument, NULL, 'd' },
		{ "pin-dir", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		if (c == 'h')
			return fputs(hist_usage, stdout), 0;
		if (c == ':' || c == '?')
			return bm_view_getopt_error("hist", c, argv);
		if (c == 'e' && !bm_valid_name(optarg))
			return bm_view_bad_value("hist", "--effect", optarg,
						 "an effect id, [A-Za-z0-9._-]{1,64}");
		if (c == 'p' && optarg[0] != '/')
			return bm_view_bad_value("hist", "--pin-dir", optarg, "an absolute path");
		if (c == 'd')
			o->dim = strcmp(optarg, "all") ? bm_view_dim(optarg) : DIM_ALL;
		if (c == 'd' && o->dim < DIM_ALL)
			return bm_view_bad_value("hist", "--dim", optarg,
						 "cpu, mem, pids, net, runq, ior, iow, iops, dirty or all");
		o->cgroup = c == 'c' ? optarg : o->cgroup;
		o->effect = c == 'e' ? optarg : o->effect;
		o->pin_dir = c == 'p' ? optarg : o->pin_dir;
	}
	return hist_positional(argc, argv, o);
}

struct find {
	const char *id;
	char *path;		/* the first match, into the caller's buffer */
	size_t len;
	char names[1024];	/* every match, for the error that lists them */
	int n;
};

/*
 * burstmeter.<tenant>@<id>: the id ends the name, after its '@' (an older
 * burstmeter's "<tenant>.<id>": after a dot, with a tenant that may be empty)
 */
static int on_dir(const char *path, const char *name, void *ctx)
{
	struct find *f = ctx;
	size_t nl = strlen(name), il = strlen(f->id), used = strlen(f->names);

	if (nl <= strlen(BM_VIEW_PREFIX) + il || strcmp(name + nl - il, f->id) ||
	    (name[nl - il - 1] != '@' && name[nl - il - 1] != '.'))
		return 0;
	if (!f->n++)
		snprintf(f->path, f->len, "%s", path);
	snprintf(f->names + used, sizeof(f->names) - used, "%s%s", used ? ", " : "", path);
	return 0;
}

/* The directory --cgroup or --effect names, into path. Returns -1 to go on, else exit status. */
static int resolve(const struct hist_opts *o, const char *root, char *path, size_t len)
{
	struct find f = { .id = o->effect, .path = path, .len = len };
	struct stat st;
	bool rel;
	size_t n;
	int err;

	if (o->cgroup) {
		/* cgroup.events: a v2 cgroup (v1 directories lack it) */
		rel = o->cgroup[0] != '/';
		n = (size_t)snprintf(path, len, "%s%s%s/cgroup.events", rel ? root : "",
				     rel ? "/" : "", o->cgroup);
		if (n >= len || stat(path, &st))
			return bm_view_bad_value("hist", "--cgroup", o->cgroup,
						 "a cgroup v2 directory");
		path[n - strlen("/cgroup.events")] = '\0';
		return -1;
	}
	err = bm_view_scan(root, on_dir, &f);
	if (err) {
		bm_err("failed to read the cgroup tree at %s: %s", root, strerror(-err));
		return 1;
	}
	if (f.n != 1) {
		bm_err(f.n ? "--effect '%s' is ambiguous: %s"
			   : "--effect '%s': no effect cgroup with that id under %s",
		       o->effect, f.n ? f.names : root);
		return BM_EXIT_USAGE;
	}
	return -1;
}

/* Read and finalize the meter up to the last settled window. Returns 0 or -errno. */
static int summarize(struct bm_loader *l, const struct bm_cgroup *cg, struct bm_summary *s)
{
	struct bm_meter m;
	int err = bm_loader__read(l, cg, &m);

	return err ? err : bm_window_finalize(&m, bm_view_end_win(&m, bm_now_ns()), s);
}

/* Each histogram asked for: of s, or of the windows s closed since prev. */
static void print_hists(const struct hist_opts *o, const struct bm_summary *s,
			const struct bm_summary *prev)
{
	uint64_t h[BM_HIST_BUCKETS];
	int d, b;

	for (d = 0; d < BM_DIM__MAX; d++) {
		if (o->dim != DIM_ALL && o->dim != d)
			continue;
		/*
		 * A window still filling at the last read may have moved up a bucket
		 * since: it counts where it is now, and its old bucket does not go
		 * below zero.
		 */
		for (b = 0; b < BM_HIST_BUCKETS; b++)
			h[b] = !prev ? s->hist[d][b] : s->hist[d][b] > prev->hist[d][b] ?
			       s->hist[d][b] - prev->hist[d][b] : 0;
		if (o->dim == DIM_ALL && d)
			putchar('\n');
		bm_hist_print(stdout, d, h, s->window_ns);
	}
	fflush(stdout);
}

/* A removed cgroup keeps its fd, but its files are gone. */
static bool gone(const struct bm_cgroup *cg)
{
	char buf[256];

	return bm_read_file(cg->dirfd, "cgroup.events", buf, sizeof(buf)) < 0;
}

static int life(const struct hist_opts *o, struct bm_loader *l, const struct bm_cgroup *cg,
		bool priv)
{
	uint64_t until = bm_now_ns() + (priv ? BM_VIEW_SAMPLE_NS : 0);
	struct bm_summary s, next;
	int err;

	/*
	 * A meter registered just now has seen nothing: meter a while (Ctrl-C
	 * shows it sooner), reading as it goes, so that an effect that ends
	 * meanwhile still shows what it did.
	 */
	err = summarize(l, cg, &s);
	while (!err && !bm_view_stopped() && bm_now_ns() < until) {
		bm_view_sleep(SAMPLE_STEP_NS);
		if (gone(cg) || summarize(l, cg, &next)) {
			bm_info("%s has ended", cg->path);
			break;
		}
		s = next;
	}
	if (!err)
		print_hists(o, &s, NULL);
	return err;
}

static int intervals(const struct hist_opts *o, struct bm_loader *l, const struct bm_cgroup *cg)
{
	struct bm_summary prev, cur;
	struct timespec next;
	char clock[16];
	struct tm tm;
	time_t now;
	uint64_t i;
	int err;

	err = summarize(l, cg, &prev);
	if (err)
		return err;
	bm_info("metering %s every %.6g s... Hit Ctrl-C to end.", cg->path, o->interval_ns / 1e9);
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (i = 0; !o->count || i < o->count; i++) {
		next.tv_sec += (time_t)(o->interval_ns / BM_NSEC_PER_SEC);
		next.tv_nsec += (long)(o->interval_ns % BM_NSEC_PER_SEC);
		if (next.tv_nsec >= (long)BM_NSEC_PER_SEC) {
			next.tv_sec++;
			next.tv_nsec -= (long)BM_NSEC_PER_SEC;
		}
		/* absolute deadlines: printing makes no drift; a signal ends the wait */
		while (!bm_view_stopped() &&
		       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		if (gone(cg) || summarize(l, cg, &cur)) {
			bm_info("%s has ended", cg->path);
			return 0;
		}
		now = time(NULL);
		strftime(clock, sizeof(clock), "%H:%M:%S", localtime_r(&now, &tm));
		printf("\n%s\n", clock);
		print_hists(o, &cur, &prev);
		prev = cur;
		/* like runqlat: Ctrl-C prints the interval it cut short, then ends */
		if (bm_view_stopped())
			break;
	}
	return 0;
}

/* Meter the cgroup at path (the agent's meter, else one of ours) and print. Returns exit status. */
static int hist_run(const struct hist_opts *o, const char *path)
{
	struct bm_view_meter vm = { 0 };
	struct bm_cgroup *cg;
	struct bm_loader *l;
	int err, how;

	cg = bm_cgroup__open(path);
	if (!cg) {
		(void)bm_err_errno(-errno, "failed to open %s", path);
		return 1;
	}
	err = bm_view_meter_open(&vm, o->pin_dir);
	if (err) {
		bm_err("failed to adopt the meter pinned in %s: %s", vm.pin_dir, strerror(-err));
		goto out;
	}
	how = bm_view_meter_attach(&vm, cg, &l);
	if (how < 0) {
		err = how;
		if (vm.why[0])
			bm_err("%s", vm.why);
		else
			bm_err("failed to meter %s: %s", path, strerror(-err));
		goto out;
	}
	if (how == 1 && vm.pinned)
		bm_info("the agent's meter (%s) does not hold %s: counts start now", vm.pin_dir,
			path);
	else if (how == 1)
		bm_info("no meter pinned in %s: counts start now", vm.pin_dir);
	bm_view_catch_stop();
	err = o->interval_ns ? intervals(o, l, cg) : life(o, l, cg, how == 1);
	if (err)
		bm_err("failed to read the meter of %s: %s", path, strerror(-err));
out:
	bm_view_meter_close(&vm);
	bm_cgroup__free(cg);
	return err ? 1 : 0;
}

int bm_cmd_hist(int argc, char **argv)
{
	struct hist_opts o = { .dim = BM_DIM_CPU };
	char root[PATH_MAX], path[PATH_MAX];
	int ret;

	ret = hist_args(argc, argv, &o);
	if (ret >= 0)
		return ret;
	bm_log_libbpf();
	ret = bm_view_root(root, sizeof(root));
	if (ret) {
		bm_err("failed to find cgroup v2: %s", strerror(-ret));
		return 1;
	}
	ret = resolve(&o, root, path, sizeof(path));
	return ret >= 0 ? ret : hist_run(&o, path);
}

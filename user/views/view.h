/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the views of running effects (`burstmeter top`, `burstmeter hist`)
 * read: the effect cgroups (burstmeter.<tenant>.<id>) found in the cgroup v2
 * tree, and the meter that holds each one: the agent's pinned meter where it
 * meters the cgroup, else a private meter the view loads, on which the
 * cgroup is registered when the view first sees it (its counts start then).
 */
#ifndef BM_VIEW_H
#define BM_VIEW_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/cgroup.h"
#include "bm_abi.h"
#include "effect/name.h"
#include "meter/loader.h"

/* Effect cgroups are named BM_VIEW_PREFIX<tenant>@<id> (user/effect/name.h). */
#define BM_VIEW_PREFIX BM_EFFECT_PREFIX
/* How deep under the v2 mount effect cgroups are looked for (pods nest a few levels). */
#define BM_VIEW_DEPTH 16
/*
 * A one-shot view on a private meter has seen nothing yet: it meters for this
 * long first. Shorter than a second catches a random phase of a bursty effect.
 */
#define BM_VIEW_SAMPLE_NS 1000000000ULL

struct bm_view_meter {
	struct bm_loader *pinned;	/* the agent's meter, adopted; NULL if none is pinned */
	struct bm_loader *priv;		/* the view's own, loaded on first need */
	uint64_t priv_since_ns;		/* when it was loaded: no count of its is older */
	char pin_dir[PATH_MAX];
	char why[512];			/* why the private meter could not load, if it could not */
};

/*
 * Adopt the meter the agent pinned in pin_dir (NULL: the agent's default).
 * Nothing pinned there is not an error (vm->pinned stays NULL). Returns 0 or
 * -errno (a pinned meter of another ABI: -EPROTO).
 */
int bm_view_meter_open(struct bm_view_meter *vm, const char *pin_dir);
/*
 * The loader that meters cg, into *out: the pinned meter if it holds cg, else
 * the private one (loaded now if need be), on which cg is registered from now.
 * Returns 0 (pinned), 1 (private: counts start when registered) or -errno.
 */
int bm_view_meter_attach(struct bm_view_meter *vm, const struct bm_cgroup *cg,
			 struct bm_loader **out);
/* Close both meters; what the agent pinned stays. */
void bm_view_meter_close(struct bm_view_meter *vm);

typedef int (*bm_view_fn)(const char *path, const char *name, void *ctx);
/*
 * Call fn(path, name, ctx) for every burstmeter.<tenant>.<id> directory
 * under root, at most BM_VIEW_DEPTH levels down (effects' own children are
 * not entered). A non-zero return of fn stops the walk and is returned.
 * Returns 0, fn's value, or -errno if root cannot be read.
 */
int bm_view_scan(const char *root, bm_view_fn fn, void *ctx);
/* Find the v2 mount (e.g. /sys/fs/cgroup/unified) into buf. Returns 0 or -errno. */
int bm_view_root(char *buf, size_t len);

/*
 * The last window a scheduler tick can no longer add to at now_ns (a running
 * task's CPU is charged at the next tick, into the window it ran in).
 */
uint64_t bm_view_settled_win(uint64_t now_ns, uint64_t window_ns);
/*
 * The newest window of m that bm_window_finalize() may close now: the
 * settled one, but never before the meter's first or level window (finalize
 * refuses those).
 */
uint64_t bm_view_end_win(const struct bm_meter *m, uint64_t now_ns);
/*
 * Window x's raw value of d, as the kernel left it: a flow from its ring slot
 * (bm_window_flow: 0 if the slot holds another window); a level from lvl_max
 * in the level window, else the level now (it has held since the level
 * window; before it, it is the nearest known).
 */
double bm_view_window_value(const struct bm_meter *m, int d, uint64_t x);

/* What a view shows of one effect at one time. */
struct bm_view_sample {
	bool frozen;			/* cgroup.events says "frozen 1" */
	bool ended;			/* "populated 0": no task left, cgroup not yet removed */
	uint64_t window_ns;
	double runtime_s;		/* first window to now; once ended, to its last event */
	double cur[BM_DIM__MAX];	/* the last settled window, in display units */
	double peak[BM_DIM__MAX];	/* its largest window so far, in display units */
};

/*
 * Sample cg's meter in l at now_ns: peaks from the finalized summary, the
 * current values from the last settled window, and the cgroup's state from
 * cgroup.events (filled in even on error). Returns 0 or -errno (-ENOENT: l
 * is NULL or does not meter cg).
 */
int bm_view_sample(struct bm_loader *l, const struct bm_cgroup *cg, uint64_t now_ns,
		   struct bm_view_sample *s);
/* A dimension by its short name (cpu, mem, pids, net, runq). Returns it or -EINVAL. */
int bm_view_dim(const char *s);
/* Sleep for ns; false if a signal cut it short. */
bool bm_view_sleep(uint64_t ns);
/*
 * Catch SIGINT, SIGTERM and SIGHUP (a lost ssh session) into a flag rather
 * than dying, so that a view puts the terminal back and prints what it has;
 * blocking waits return early (no SA_RESTART). bm_view_stopped() reads it.
 */
void bm_view_catch_stop(void);
bool bm_view_stopped(void);

/*
 * The views' usage errors: one line naming the option, exit status 125.
 * getopt_error takes getopt_long's ':' or '?' (optstring starting "+:").
 */
int bm_view_getopt_error(const char *cmd, int c, char **argv);
int bm_view_bad_value(const char *cmd, const char *flag, const char *val, const char *expected);

#endif /* BM_VIEW_H */

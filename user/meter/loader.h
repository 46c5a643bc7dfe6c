/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The meter's lifecycle: probe what this kernel offers, load and attach the
 * skeleton, register effect cgroups, read their meters, drain the ring buffer.
 */
#ifndef BM_LOADER_H
#define BM_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/cgroup.h"
#include "bm_abi.h"

struct bm_loader;

typedef void (*bm_event_fn)(const struct bm_event *e, void *ctx);

struct bm_loader_opts {
	bool force_hash;	/* meters in a hash map even where cgroup storage exists */
	bm_event_fn on_event;	/* called from bm_loader__poll() for each record */
	void *ctx;
	/*
	 * Pin maps and links under this bpffs directory (the agent), so that
	 * metering goes on while no agent runs; a meter already pinned there
	 * with the same ABI is adopted instead of loading a second one.
	 */
	const char *pin_dir;
	/* With pin_dir: adopt what is pinned there or fail (-ENOENT); never load or pin (views). */
	bool adopt_only;
	/* The ring buffer's size (a power of 2, pages), 0: the object's 256 KiB. Not when adopting. */
	uint32_t ring_bytes;
	/*
	 * Without pin_dir: reuse a meter pinned in one of these directories
	 * (NULL-terminated; an agent's, then a kept one), as a guest: its
	 * programs and maps, a ring of our own for our meters' records (a slot
	 * of bm_rings), their links held open while we run. The first that
	 * holds a meter of our ABI is used; none, and we load our own.
	 */
	const char *const *reuse_dirs;
	/*
	 * Keep the meter for keep_ns after we end (run --keep-meter): a meter
	 * loaded here is pinned in keep_dir, one reused there has its
	 * lifetime extended; a reaper process unpins it once that has passed.
	 */
	uint64_t keep_ns;
	const char *keep_dir;	/* where kept meters are pinned; NULL: BM_KEEP_PIN_DIR */
};

/* Where a kept meter is pinned (run --keep-meter); the agent's is BM_AGENT_PIN_DIR. */
#define BM_KEEP_PIN_DIR "/sys/fs/bpf/burstmeter-run"

/* Where bytes sent come from: the 6.3+ tracepoint, fexit on inet_sendmsg (6.1), or nowhere. */
enum bm_net_source { BM_NET_SRC_NONE, BM_NET_SRC_TP, BM_NET_SRC_FEXIT };

/* What the probes chose, for the outcome and for tests. */
struct bm_features {
	bool cgrp_storage;	/* else: hash by cgroup id */
	bool tick;		/* CPU charged at every scheduler tick too */
	bool reclaim;		/* vmscan reclaim begin/end tracepoints */
	enum bm_net_source net;
	bool io;		/* block_bio_queue: bytes and bios per window */
	bool io_alias;		/* v1 blkio twins can be told (bm_loader__alias()) */
	bool dirty;		/* writeback_dirty_folio: page cache dirtied per window */
	bool oom;		/* mark_victim: the OOM killer's victims are named */
};

/* "sock_send_length", "fexit" or "none", as the outcome names them. */
const char *bm_net_source_name(enum bm_net_source n);

/* Route libbpf's messages through bm_log (its debug output only at BM_LOG_DEBUG). */
void bm_log_libbpf(void);

/* Probe, load and attach (or adopt the pinned meter). Returns NULL and sets errno. */
struct bm_loader *bm_loader__open(const struct bm_loader_opts *opts);
/* Close our handles; what is pinned stays attached. NULL-safe. */
void bm_loader__free(struct bm_loader *l);
/* Was the meter adopted from pins rather than loaded? */
bool bm_loader__adopted(const struct bm_loader *l);
/* The pin directory of the meter reused as a guest (reuse_dirs), or NULL if loaded here. */
const char *bm_loader__reused(const struct bm_loader *l);
/* Remove the pins (the programs detach once the last handle closes). Returns 0 or -errno. */
int bm_loader__unpin(struct bm_loader *l);
/* Program ids of the meter (for bpf_stats), up to max; returns how many. */
int bm_loader__prog_ids(const struct bm_loader *l, uint32_t *ids, int max);
const struct bm_features *bm_loader__features(const struct bm_loader *l);

/*
 * Start metering cg with windows of window_ns from now: first_win and
 * cur_win are set from start_ns, thresh[] (may be NULL) raises crossings.
 * Returns 0 or -errno (-EEXIST if it is metered already).
 */
int bm_loader__add(struct bm_loader *l, const struct bm_cgroup *cg, uint64_t window_ns,
		   uint64_t start_ns, const uint64_t thresh[BM_DIM__MAX]);
/*
 * Set cg's crossing thresholds and the levels the kernel kills at (either
 * may be NULL to leave it), under the meter's lock. Returns 0 or -errno.
 */
int bm_loader__arm(struct bm_loader *l, const struct bm_cgroup *cg,
		   const uint64_t thresh[BM_DIM__MAX], const uint64_t kill_at[BM_DIM__MAX]);
/* Copy cg's meter, taken under its lock. Returns 0 or -errno. */
int bm_loader__read(struct bm_loader *l, const struct bm_cgroup *cg, struct bm_meter *out);
/*
 * The marks, BM_MOVED_SLOTS bytes (bm_marks.moved, mapped): marks[slot] is set
 * when the meter in that slot (bm_meter.slot) moved since it was cleared.
 * Clear it before reading the meter, so that a move after the read marks
 * it again; a meter in BM_SLOT_NONE is never marked.
 */
const volatile uint8_t *bm_loader__marks(const struct bm_loader *l);
void bm_loader__unmark(struct bm_loader *l, uint32_t slot);
/*
 * The ladder of the meter in slot looks at every window up to until_win by
 * itself: the kernel reports no crossing there (bm_marks.watch). 0 stops
 * it; read the meter after a stop, as a crossing just before it was not
 * reported. A guest's, or one in BM_SLOT_NONE, does nothing.
 */
void bm_loader__watch(struct bm_loader *l, uint32_t slot, uint64_t until_win);
/* A meter adopted from pins keeps its slot: no new meter may be given it. */
void bm_loader__claim(struct bm_loader *l, uint32_t slot);
/*
 * Stop metering cg; the mms charged to it are forgotten by the next
 * bm_loader__forget_stale() (or bm_loader__free()). Returns 0 or -errno.
 */
int bm_loader__del(struct bm_loader *l, const struct bm_cgroup *cg);
/* Forget the mms of every meter deleted since the last call: one pass over bm_mm. */
void bm_loader__forget_stale(struct bm_loader *l);
/* The same, once enough meters went or the first went a second ago: call it at will. */
void bm_loader__tend_stale(struct bm_loader *l);
/*
 * Tell the meter that I/O of the v1 blkio cgroup v1_cgid (a hybrid host's
 * twin) is the effect v2_cgid's; v2_cgid 0 forgets it. Returns 0, or
 * -EOPNOTSUPP where the meter cannot resolve aliases, or -errno.
 */
int bm_loader__alias(struct bm_loader *l, uint64_t v1_cgid, uint64_t v2_cgid);
/* Sum the per-CPU drop counters. Returns 0 or -errno. */
int bm_loader__stats(struct bm_loader *l, uint64_t out[BM_STAT__MAX]);
/* fd that becomes readable when records wait; bm_loader__poll(l, 0) consumes them. */
int bm_loader__event_fd(const struct bm_loader *l);
/* Consume records (calling opts.on_event). Returns records consumed or -errno. */
int bm_loader__poll(struct bm_loader *l, int timeout_ms);
/* The same without a syscall (nothing waits): cheap enough to call between any two jobs. */
int bm_loader__consume(struct bm_loader *l);

#endif /* BM_LOADER_H */

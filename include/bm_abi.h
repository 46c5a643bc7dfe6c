/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one header shared by the BPF programs (bpf/) and userspace (user/):
 * map value layouts, ring-buffer records, enums and limits. Nothing with
 * logic, nothing that needs libc or libbpf.
 */
#ifndef BM_ABI_H
#define BM_ABI_H

#ifndef __bpf__
#include <linux/types.h>
#include <linux/bpf.h>		/* struct bpf_spin_lock */
#endif

#define BM_ABI_VERSION 5

/*
 * Flow windows (CPU, network, run-queue wait) live in a ring of BM_RING
 * slots, each tagged with its window; a slot is closed into the histogram
 * when a newer window needs it. A contribution that arrives late (a CPU
 * slice charged at the next tick) still finds its window: 16 x 10 ms covers
 * a 250 Hz tick many times over.
 */
#define BM_RING 16
/* A CPU interval is split over at most this many windows; older parts are late. */
#define BM_SPLIT 8
/* log2 buckets: [0] holds 0, [k] holds [2^(k-1), 2^k); values from 2^62 up go to [62]. */
#define BM_HIST_BUCKETS 64
/*
 * CPU windows are bucketed as cores x 2^10 (ns x 1024 / window_ns), not
 * in ns: then the bucket edges are powers of two of cores, 1/1024 to 2^52,
 * for any window length, and a window at exactly one core is not drawn
 * in the bucket up to 1.68 cores that 10 ms in ns would give.
 */
#define BM_CPU_HIST_SHIFT 10
#define BM_WINDOW_NS_DEFAULT 10000000ULL
#define BM_WINDOW_NS_MIN 1000000ULL
#define BM_WINDOW_NS_MAX 1000000000ULL

/*
 * Dimensions metered per window, and the unit each window value has. Flows
 * (amounts that add up within a window) come first, levels after them.
 */
enum bm_dim {
	BM_DIM_CPU,	/* ns on CPU within the window, all tasks of the cgroup */
	BM_DIM_NET,	/* bytes sent on inet sockets within the window */
	BM_DIM_RUNQ,	/* ns its tasks waited on a run queue, charged to the window they got the CPU */
	BM_DIM_IO_READ,	/* bytes of read bios its I/O queued to block devices (block_bio_queue) */
	BM_DIM_IO_WRITE,	/* bytes of write bios, its writeback included where it is attributed */
	BM_DIM_IO_OPS,	/* read and write bios queued (what io.max's iops counts) */
	BM_DIM_DIRTY,	/* bytes of page cache its tasks dirtied (writeback_dirty_folio) */
	BM_DIM_MEM,	/* bytes: largest resident set (sum over its mms) within the window */
	BM_DIM_PIDS,	/* tasks: largest live task count within the window */
	BM_DIM__MAX,
};
/*
 * Flows come in two rings of slots of their own: the scheduler's (CPU,
 * network, run-queue wait: BM_FLOWS) and I/O's (BM_IO_FLOWS, from
 * BM_DIM_IO_READ on), so that opening a window in one closes only its own
 * dimensions: the I/O dimensions cost the context-switch path nothing.
 */
#define BM_FLOWS 3
#define BM_IO_FLOWS 4
#define BM_ALL_FLOWS (BM_FLOWS + BM_IO_FLOWS)

/*
 * Flow slots are kept per lane (CPU number mod BM_LANES), so that CPUs
 * running tasks of the same effect add to different cache lines instead of
 * bouncing one between them; a slot's value is the sum of its lanes.
 */
#define BM_LANES 4

/*
 * Which meters moved: the meter program keeps a byte per slot (bm_moved,
 * global data the agent maps) and sets a meter's byte whenever an event
 * touches a window newer than any before, once per window of a cgroup that
 * does anything. A reader clears the byte, then reads the meter; a meter
 * whose byte stays clear has had no event since, so an idle effect costs
 * its reader nothing. Slots are handed out by the loader; BM_SLOT_NONE
 * (more meters than slots) is never marked, and its reader reads as before.
 */
#define BM_MOVED_SLOTS 16384
#define BM_SLOT_NONE 0xffffffffU

/* .data.moved, mapped read-write by the loader: per meter slot, */
struct bm_marks {
	__u8 moved[BM_MOVED_SLOTS];	/* its mark (above) */
	/*
	 * and the last window its ladder looks at by itself, from a crossing
	 * on (0: none): a crossing in a window up to it is marked in the meter
	 * but not reported, so a run of windows over wakes nobody a second
	 * time. The ladder alone writes it (bm_loader__watch()).
	 */
	__u64 watch[BM_MOVED_SLOTS];
};

struct bm_lane {
	__u64 v[BM_RING][BM_FLOWS];
};

struct bm_io_lane {
	__u64 v[BM_RING][BM_IO_FLOWS];	/* [d - BM_DIM_IO_READ] */
};

/* Per-CPU counters in bm_stats: every drop on the hot path is counted, never silent. */
enum bm_stat {
	BM_STAT_RB_DROPS,	/* ring-buffer reserve failed: a record was lost */
	BM_STAT_MM_FULL,	/* bm_mm full: an mm's resident set was not tracked */
	BM_STAT_TASK_FULL,	/* task storage could not be created: CPU not charged */
	BM_STAT_LATE,		/* a contribution older than the ring: in the totals, not in a window */
	BM_STAT_IO_UNKNOWN,	/* a bio of no metered cgroup's, queued by a kernel thread (writeback) */
	BM_STAT__MAX,
};

/*
 * How a bio's cgroup was found (bm_meter.io_via): from the blkcg the bio
 * carries (v2: the submitter's, or for writeback the cgroup that dirtied
 * the inode's pages), from a v1 blkio twin's alias (hybrid hosts), or from
 * the task that queued it (the fallback: direct I/O, reads, fsync).
 */
enum bm_io_via { BM_IO_VIA_BLKCG, BM_IO_VIA_ALIAS, BM_IO_VIA_TASK, BM_IO_VIA__MAX };

/* Bits of bm_meter.flags. */
#define BM_F_DRAINED (1U << 0)		/* every task that entered has made its last switch */
#define BM_F_KILLED_MEM (1U << 1)	/* the kernel fast path killed at the memory ceiling */
#define BM_F_KILLED_PIDS (1U << 2)	/* the kernel fast path killed at the task ceiling */

/*
 * One cgroup's meter: the value of bm_cgst (cgroup storage) or bm_cghash.
 * Flow dimensions use the slots of lane[]; their totals are the sum of their
 * windows (wsum + open slots + late). Level
 * dimensions (memory, tasks) use lvl_*: they change only at events, so every
 * window between two events held the level the first one left.
 */
struct bm_meter {
	struct bpf_spin_lock lock;
	__u32 flags;
	__u64 window_ns;		/* fixed for the cgroup's life */
	__u64 first_win;		/* window the effect started in */
	__u64 last_win;			/* newest window an event touched */
	__u64 thresh[BM_DIM__MAX];	/* per-window value that raises a crossing; 0 = none */
	__u64 kill_at[BM_DIM__MAX];	/* levels the kernel kills at (MEM, PIDS); 0 = none */
	__u64 slot_win[BM_RING];	/* window each flow slot holds; 0 = empty */
	struct bm_lane lane[BM_LANES];	/* flow slot values, per lane */
	__u64 io_slot_win[BM_RING];	/* the same for the I/O ring */
	struct bm_io_lane io_lane[BM_LANES];
	__u64 lvl_win;			/* window lvl_max belongs to */
	__u64 lvl_max[BM_DIM__MAX];	/* largest level within lvl_win */
	__u64 peak[BM_DIM__MAX];	/* largest closed-window value */
	__u64 wsum[BM_DIM__MAX];	/* sum of closed-window values */
	__u64 closed_flow;		/* flow windows closed from the ring */
	__u64 io_closed_flow;		/* the same, from the I/O ring */
	__u64 closed_lvl;		/* level windows closed */
	__u64 late[BM_DIM__MAX];	/* flow amounts that found no window: in totals only */
	__u64 stall_ns;			/* direct and memcg reclaim, in total */
	__s64 rss_bytes;		/* current level */
	__s64 tasks;			/* live tasks (forked in, not yet exited) */
	__u64 entered;			/* tasks that entered (the first one included) */
	__u64 forks;			/* of those, the ones an effect task forked */
	__u64 freed;			/* tasks that made their last switch (are gone) */
	__u64 io_via[BM_IO_VIA__MAX];	/* bios charged, by how their cgroup was found */
	__u64 cgid;			/* the cgroup's id, for its records (no pointer walk) */
	__u32 ring;			/* bm_rings slot its records go to (0: bm_events) */
	__u32 pad;
	__u32 crossed[BM_RING];		/* per flow slot: dims that reached their threshold there */
	__u32 io_crossed[BM_RING];	/* the same, per I/O slot */
	__u32 lvl_crossed;		/* level dims that reached it in lvl_win */
	__u32 slot;			/* its mark and watch in bm_marks, or BM_SLOT_NONE */
	__u32 hist[BM_DIM__MAX][BM_HIST_BUCKETS];
};

/*
 * The value of bm_meta: what a pinned meter is, so that a restarted agent
 * adopts it (same ABI) instead of loading a second one.
 */
#define BM_META_CGRP_STORAGE (1U << 0)
#define BM_META_TICK (1U << 1)
#define BM_META_RECLAIM (1U << 2)
#define BM_META_NET_TP (1U << 3)
#define BM_META_NET_FEXIT (1U << 4)
#define BM_META_IO (1U << 5)		/* block_bio_queue */
#define BM_META_DIRTY (1U << 6)		/* writeback_dirty_folio */
#define BM_META_OOM (1U << 7)		/* mark_victim */
#define BM_META_IO_ALIAS (1U << 8)	/* v1 blkio twins resolved through bm_blkalias */

struct bm_meta {
	__u32 abi;		/* BM_ABI_VERSION of the loader that pinned it */
	__u32 features;		/* BM_META_* */
	__u64 window_ns;	/* the default window of the agent that pinned it */
	__u64 keep_until_ns;	/* a kept meter (run --keep-meter) goes then (monotonic) */
	__u32 reaper_pid;	/* the process that unpins it; an older one seeing another quits */
	__u32 pad;
};

/* Ring-buffer record types. */
enum bm_ev_type {
	BM_EV_CROSS = 1,	/* a window value reached its threshold */
	BM_EV_DRAINED = 2,	/* the last task of the cgroup made its last switch */
	BM_EV_KILLED = 3,	/* the kernel sent SIGKILL at a ceiling (dim, value, thresh) */
	BM_EV_OOM = 4,		/* the OOM killer chose a task of the cgroup: a struct bm_oom_event */
};

struct bm_event {
	__u64 cgid;		/* cgroup v2 id (kernfs id) */
	__u64 time_ns;		/* bpf_ktime_get_ns() */
	__u64 win;		/* window index (time / window_ns) */
	__u64 value;		/* window value, in the dimension's unit */
	__u64 thresh;
	__u32 type;		/* enum bm_ev_type */
	__u32 dim;		/* enum bm_dim */
};

/*
 * The OOM killer marked a task of a metered cgroup as its victim
 * (oom:mark_victim, before the kill): who, and how big it was. ev.value
 * holds its resident bytes, ev.win the cgroup's newest window.
 */
#define BM_COMM_LEN 16

struct bm_oom_event {
	struct bm_event ev;
	__u64 rss_bytes;	/* anon + file + shmem of its mm, at the mark */
	__u64 anon_bytes;
	__u64 total_vm_bytes;
	__u32 pid;		/* in the initial pid namespace */
	__s32 oom_score_adj;
	char comm[BM_COMM_LEN];
};

/* A CPU's clock pair in the meter's bm_clk (bpf/meter.bpf.c switch_now()): ktime and exec_start. */
struct bm_clk {
	__u64 k, c;
	__u64 pad[6];	/* a cache line per CPU */
};

/* Per-mm state in bm_mm: the mm's last resident size, to turn absolute counters into deltas. */
struct bm_mm_state {
	__u64 cgid;		/* cgroup charged with this mm */
	__u64 bytes;
};

/* Per-task state in bm_task (task storage). */
struct bm_task_state {
	__u64 charged_ns;	/* se.sum_exec_runtime already charged */
	__u64 until_ns;		/* time up to which its CPU has been placed in windows */
	__u64 run_delay_ns;	/* sched_info.run_delay already charged */
	__u64 reclaim_ns;	/* start of the reclaim in progress, 0 if none */
};

#ifndef __bpf__
_Static_assert(sizeof(struct bm_event) == 48, "bm_event changed: bump BM_ABI_VERSION");
_Static_assert(sizeof(struct bm_mm_state) == 16, "bm_mm_state changed: bump BM_ABI_VERSION");
_Static_assert(sizeof(struct bm_meta) == 32, "bm_meta changed: bump BM_ABI_VERSION");
_Static_assert(sizeof(struct bm_task_state) == 32, "bm_task_state changed: bump BM_ABI_VERSION");
_Static_assert(sizeof(struct bm_meter) == 6864, "bm_meter changed: bump BM_ABI_VERSION");
_Static_assert(sizeof(struct bm_oom_event) == 96, "bm_oom_event changed: bump BM_ABI_VERSION");
#endif

#endif /* BM_ABI_H */

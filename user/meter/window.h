/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The userspace half of the window model (bpf/lib/window.bpf.h is the
 * kernel half): close what the kernel left open when the effect ended, and
 * turn window values into the units people read. Pure: no I/O, no clocks.
 */
#ifndef BM_WINDOW_H
#define BM_WINDOW_H

#include <stdint.h>

#include "bm_abi.h"

/* Every window of an effect's life, closed. */
struct bm_summary {
	uint64_t window_ns;
	uint64_t windows;			/* = sum of every dimension's histogram */
	uint64_t hist[BM_DIM__MAX][BM_HIST_BUCKETS];
	uint64_t peak[BM_DIM__MAX];		/* largest window value */
	uint64_t wsum[BM_DIM__MAX];		/* sum of window values */
	uint64_t total[BM_DIM__MAX];		/* flows: every ns/byte counted */
	uint64_t cpu_ns, runq_ns, net_bytes, stall_ns, late_ns;
	uint64_t forks, tasks_entered;
	uint64_t io_via[BM_IO_VIA__MAX];	/* bios charged, by how their cgroup was found */
};

/*
 * Close every window of m from first_win up to and including end_win: the
 * flow slots still open, the windows no flow event touched (at 0), the open
 * level window and the ones after it (at the level that held). Returns 0, or
 * -EINVAL if end_win precedes the meter.
 */
int bm_window_finalize(const struct bm_meter *m, uint64_t end_win, struct bm_summary *s);
/*
 * The last window of an effect that ended at end_ns: that one, or a later
 * one an event of it reached (exits and frees after the end are still its).
 */
uint64_t bm_window_last(const struct bm_meter *m, uint64_t end_ns);

/* Flow d's raw value in window x while it is open (the sum of its lanes); 0 if its slot moved on. */
double bm_window_flow(const struct bm_meter *m, int d, uint64_t x);

/* Bucket of a value, as the kernel computes it: 0 for 0, else its bit length. */
unsigned int bm_window_bucket(uint64_t v);
/* Exclusive upper bound of bucket k in raw units (2^k; 0 for bucket 0). */
double bm_window_bucket_upper(unsigned int k);

/* The exclusive upper edge of dimension d's bucket k, in display units. */
double bm_window_bucket_edge(enum bm_dim d, unsigned int k, uint64_t window_ns);
/* The dimensions in the order people read them (cpu, memory, tasks, net, run queue, I/O). */
extern const enum bm_dim bm_dim_order[BM_DIM__MAX];

/* A raw window value of dimension d in display units: cores, bytes, tasks, bytes/s, ms, ops/s. */
double bm_window_display(enum bm_dim d, double raw, uint64_t window_ns);
/* Name of the display unit of d: "cpu_cores", "memory_bytes", "pids", ... */
const char *bm_window_dim_name(enum bm_dim d);
/* Short name of d for the command line: "cpu", "mem", "pids", "net", "runq", "ior", ... */
const char *bm_window_dim_short(enum bm_dim d);

#endif /* BM_WINDOW_H */

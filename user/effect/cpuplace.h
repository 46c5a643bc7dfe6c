/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which CPUs an effect held to a CPU ceiling runs on. A quota is kept per
 * 100 ms period, not per instant: four threads held to one core on two CPUs
 * run on both CPUs for the first half of every period, and a neighbour
 * waking then waits behind them (docs/DESIGN.md, "CPU placement"). An
 * effect whose ceiling is c cores is confined to ceil(c) of the CPUs we
 * may use, when that is fewer than all of them: the ceil(c) that hold the
 * fewest confined effects of this process, the highest-numbered on a tie
 * (CPU 0 takes most of a node's interrupts and housekeeping).
 */
#ifndef BM_CPUPLACE_H
#define BM_CPUPLACE_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * How many CPUs a ceiling of cores needs (ceil, at least 1) out of those in
 * allowed; false when that is all of them (or cores <= 0): no confinement.
 */
bool bm_cpuplace_confines(double cores, const cpu_set_t *allowed, unsigned int *k);

/* The k CPUs of allowed that hold the fewest, into *out (k <= CPU_COUNT(allowed)). */
void bm_cpuplace_least(const cpu_set_t *allowed, unsigned int k, cpu_set_t *out);
/* The same, counted as held. */
void bm_cpuplace_pick(const cpu_set_t *allowed, unsigned int k, cpu_set_t *out);
/* Count a set as held (an adopted effect's), or give a held one back. */
void bm_cpuplace_hold(const cpu_set_t *set);
void bm_cpuplace_put(const cpu_set_t *set);
/* How many confined effects hold cpu (tests, the agent's view). */
unsigned int bm_cpuplace_load(unsigned int cpu);

/* A cpu list as the kernel writes one ("1", "0-3,6"): 0, or -ENOSPC if len is short. */
int bm_cpulist_format(const cpu_set_t *set, char *buf, size_t len);
/* Parse one ("" and "\n" are the empty set): 0, or -EINVAL naming nothing kept. */
int bm_cpulist_parse(const char *s, cpu_set_t *out);

#endif /* BM_CPUPLACE_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `burstmeter advise`: what each tool kind used, from the store's outcomes,
 * and the ceilings and requests to give it. Per tool kind: the runs, their
 * endings, p50/p95/p99/max of each dimension's peak and of the duration,
 * how often each ceiling was hit (io_ceiling and storage_ceiling too, and
 * a run held at its cpu or io.max limit); then recommendations as `run` flags, the
 * request's sandbox and the pod's resources, each with the runs behind it.
 *
 *   limit   = p99 of the runs' peaks (duration: of their wall time) x 1.25,
 *             rounded up (CPU to 0.1 core, memory to 16 MiB, tasks to 1,
 *             the timeout to 1 s, I/O read and write to 1 MiB/s, I/O ops
 *             to 1/s, ephemeral storage to 16 MiB; those last only where
 *             the runs did any I/O or had a /tmp of a size to measure)
 *   request = p95 of the runs' averages (CPU cores, resident memory),
 *             rounded up the same way, never above the limit
 *
 * A ceiling a run hit hides what it would have used: where 1% of the runs
 * or more hit one, that limit is unknown (null), and only "more than the
 * ceiling they hit" is said; fewer, and the limit stands with a note.
 * Percentiles are nearest-rank: p of n sorted values is the ceil(p n)-th.
 */
#ifndef BM_ADVISE_H
#define BM_ADVISE_H

#include <jansson.h>

#include "agent/store.h"

#define BM_ADVISE_HEADROOM 1.25
#define BM_ADVISE_CENSORED_PCT 1.0	/* this share of runs at a ceiling or more: limit unknown */

/*
 * The report of every ended effect in st with an outcome, of tenant (NULL:
 * all) and tool (NULL: all), grouped by tool kind, most runs first:
 * {"tenant", "tool" (the filters, null: all), "tools": [{"tool", "runs",
 * "reasons", "dims", "recommend"}, ...]}.
 * A new reference, or NULL with errno (the store failed, ENOMEM).
 */
json_t *bm_advise_report(struct bm_store *st, const char *tenant, const char *tool);


#endif /* BM_ADVISE_H */

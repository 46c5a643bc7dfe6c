/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An effect's "timeline": its series downsampled by max to at most 1,000
 * points a dimension. As JSON for readers of a running effect; packed for
 * the store, where most of the points of most effects are zero (docs/DESIGN.md
 * "The agent and its API").
 */
#ifndef BM_AGENT_TIMELINE_H
#define BM_AGENT_TIMELINE_H

#include <jansson.h>
#include <stddef.h>

#include "meter/series.h"

/* {"window_ms", "step_windows", "<dim>": [points]}; a non-finite point is left out. */
json_t *ag_timeline_json(const struct bm_series *s);
/*
 * The same, packed: *blob (malloc'd) and *len, both 0 for an empty series.
 * 0, or -ENOMEM.
 */
int ag_timeline_pack(const struct bm_series *s, void **blob, size_t *len);
/* What ag_timeline_json() gave of the series packed in blob; NULL if it is not one. */
json_t *ag_timeline_unpack(const void *blob, size_t len);

#endif /* BM_AGENT_TIMELINE_H */

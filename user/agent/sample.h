/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Each effect window by window, from the meter: its series, its readers' lines, the tick. */
#ifndef BM_AGENT_SAMPLE_H
#define BM_AGENT_SAMPLE_H

#include <jansson.h>

#include "agent/state.h"

/* Read e's meter: the windows closed since the last read into its series and lines. */
void ag_sample(struct bm_agent *a, struct ag_effect *e);
/* Every AG_TICK_NS: wake the effects whose meters moved, read the due ones, let idle ones sleep. */
void ag_tick(struct bm_agent *a);
/* A downsampled copy of the series for the stored outcome ("timeline"). */
json_t *ag_timeline_json(const struct bm_series *s);
/*
 * The same as JSON text, byte for byte what json_dumps(JSON_COMPACT |
 * JSON_REAL_PRECISION(9)) writes of ag_timeline_json(), without its
 * thousands of objects. NULL + errno on no memory.
 */
char *ag_timeline_text(const struct bm_series *s);

#endif /* BM_AGENT_SAMPLE_H */

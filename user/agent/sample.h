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

#endif /* BM_AGENT_SAMPLE_H */

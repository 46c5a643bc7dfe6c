/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What an earlier agent left: its live effects re-adopted, its leftovers swept. */
#ifndef BM_AGENT_ADOPT_H
#define BM_AGENT_ADOPT_H

#include "agent/state.h"

/* Re-adopt the effects an earlier agent left queued or running, then sweep what it left. */
void ag_adopt(struct bm_agent *a);

#endif /* BM_AGENT_ADOPT_H */

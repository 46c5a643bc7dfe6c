/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* How long ended effects are kept: rows of the store and their files, by age and by count. */
#ifndef BM_AGENT_RETAIN_H
#define BM_AGENT_RETAIN_H

#include "agent/state.h"

/*
 * Delete the ended effects older than cfg.retention_ns or beyond the
 * cfg.retention_effects newest, with their log and status files: a slice
 * at a time, so that the loop is never held long. Returns how many went.
 */
int ag_retain(struct bm_agent *a);

#endif /* BM_AGENT_RETAIN_H */

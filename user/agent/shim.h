/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* An effect's shim ended: its command's status, from the shim's file. */
#ifndef BM_AGENT_SHIM_H
#define BM_AGENT_SHIM_H

#include "agent/state.h"

/*
 * e's shim has ended (the spawner said, or its pidfd): the command's wait
 * status is in the shim's status file (lost if the shim was killed); an
 * attached effect's comes from its caller, who is given a moment to say.
 */
void ag_shim_ended(struct bm_agent *a, struct ag_effect *e);

#endif /* BM_AGENT_SHIM_H */

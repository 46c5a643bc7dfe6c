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

/*
 * The files the agent keeps of an effect, named after it: its shim's status
 * file (state_dir/run/<tenant>@<id>.status, the shim's .pid beside it) and
 * its output (state_dir/logs/<tenant>@<id>.log). Either may be NULL.
 * Returns 0 or -ENAMETOOLONG.
 */
int ag_effect_files(const struct bm_agent *a, const char *tenant, const char *id,
		    char status[PATH_MAX], char log[PATH_MAX]);
/* The same for e: e->status_path is set to its status file (owned); log may be NULL. 0 or -errno. */
int ag_effect_status(const struct bm_agent *a, struct ag_effect *e, char log[PATH_MAX]);

#endif /* BM_AGENT_SHIM_H */

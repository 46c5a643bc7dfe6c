// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "agent/index.h"
#include "agent/shim.h"
#include "agent/watch.h"
#include "base/common.h"
#include "effect/exec.h"

/* A shim ended: the command's status is in its file (or lost, if the shim was killed). */
void ag_shim_ended(struct bm_agent *a, struct ag_effect *e)
{
	siginfo_t si = { 0 };
	int status = -1;

	ag_set_shim_id(a, e, 0);
	if (e->shim.pidfd >= 0) {
		/* reaps it where it is ours (forked without a spawner) */
		waitid(P_PIDFD, (id_t)e->shim.pidfd, &si, WEXITED | WNOHANG);
		ag_unwatch(a, e->shim.pidfd);
	}
	if (e->req.mode == BM_REQ_ATTACH) {
		/* its status is the caller's, who reaps it: give the caller a moment to say */
		e->exit_wait_ns = bm_now_ns() + AG_EXIT_WAIT_NS;
		return;
	}
	if (!e->status_path ||
	    bm_effect_shim_status(e->sup.cg ? e->sup.cg->dirfd : -1, e->status_path, &status, &e->status_on_cgroup))
		status = -1;
	bm_sup__exited(&e->sup, status);
}

int ag_effect_status(const struct bm_agent *a, struct ag_effect *e, char log[PATH_MAX])
{
	char status[PATH_MAX];
	int ret = ag_effect_files(a, e->tenant, e->req.id, status, log);

	if (ret)
		return ret;
	free(e->status_path);
	e->status_path = strdup(status);
	return e->status_path ? 0 : -ENOMEM;
}

int ag_effect_files(const struct bm_agent *a, const char *tenant, const char *id,
		    char status[PATH_MAX], char log[PATH_MAX])
{
	const char *dir = a->cfg.state_dir;

	if ((status && snprintf(status, PATH_MAX, "%s/run/%s@%s.status", dir, tenant, id) >= PATH_MAX) ||
	    (log && snprintf(log, PATH_MAX, "%s/logs/%s@%s.log", dir, tenant, id) >= PATH_MAX))
		return -ENAMETOOLONG;
	return 0;
}

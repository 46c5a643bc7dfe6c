/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* An effect from its submission to its start, its cancellation, and an attached one's exit. */
#ifndef BM_AGENT_ADMIT_H
#define BM_AGENT_ADMIT_H

#include "agent/spawner.h"
#include "agent/state.h"

/*
 * Take a validated request for tenant from its caller (uid, gid, pid;
 * parent: the id of the caller's effect when the caller runs inside one).
 * Returns 0 with the effect in *out (e->started: it runs, or is being
 * launched; else it is queued; NULL: it could not start and has ended,
 * its outcome is stored), or -errno:
 *   -EEXIST  an effect with this id exists (*out: it, while it lives);
 *   -EBUSY   its tool keeps hitting the same wall and backs off (*retry_after_s);
 *   -EDQUOT  the tenant is over a budget (*budget names it; *retry_after_s from its bucket);
 *   -EAGAIN  the queue is full, or the tenant's share of it (*budget "queue_share")
 *            (*retry_after_s);
 *   -EPERM   attach of a process that is not the caller's descendant;
 *   -ENOSPC  no uid is left for a new tenant;
 *   -EOPNOTSUPP  a launch asked from a pod (pod: the caller's; its calls are attached);
 *   -ENOMEM, -EIO (the store failed).
 * On 0 the request is taken over (and zeroed).
 */
int ag_submit(struct bm_agent *a, struct bm_request *req, const char *tenant, uid_t uid, gid_t gid,
	      pid_t caller, const char *parent, const struct ag_pod *pod, struct ag_effect **out,
	      unsigned int *retry_after_s, const char **budget);
/* Room in a->eff for one more effect (doubled when full): 0 or -ENOMEM. */
int ag_eff_room(struct bm_agent *a);
/* A stored pod (the store's JSON) back: 0 and *out (owned), or -EINVAL. */
int ag_pod_from_json(const char *text, struct ag_pod **out);
/* An effect that never started ends: an outcome with reason (and advice), stored, freed. */
void ag_end_unstarted(struct bm_agent *a, struct ag_effect *e, enum bm_reason reason,
		      const char *advice);
/*
 * Cancel an effect (SIGTERM, then kill after the grace), the cancel stored
 * first: 0, -EALREADY (it has ended), or the store's -errno (-ENOSPC: a
 * full disk), the effect then left as it was.
 */
int ag_cancel(struct bm_agent *a, struct ag_effect *e);
/* ag_cancel() of an effect whose cancel the store holds already (adoption). */
int ag_cancel_stored(struct bm_agent *a, struct ag_effect *e);
/*
 * The process of an attach that gave no pid (its cgroup made, waiting):
 * pid as the caller numbers it, its descendant; one cloned into the
 * effect's cgroup stays where it is, another is moved; the same pid again
 * is 0. 0, -EPERM (not the caller's), -EALREADY (not waiting: launched,
 * another attached, ended), -errno.
 */
int ag_attach(struct bm_agent *a, struct ag_effect *e, pid_t caller, uid_t uid, pid_t pid);
/*
 * An attached effect's caller reports its exit (wait status) and (caller
 * not NULL) what it made of the sandbox, kept in the outcome's enforcement
 * as its word where the agent held nothing itself: 0, -EALREADY or -EINVAL
 * (not attached).
 */
int ag_exit(struct bm_agent *a, struct ag_effect *e, int wait_status,
	    const struct bm_sandbox_enf *caller);
/* Start queued effects while the node has room: fair across tenants, by priority within one. */
void ag_schedule(struct bm_agent *a);
/* The supervision options of an effect: its request's limits and the agent's policy. */
void ag_sup_opts(struct bm_agent *a, const struct ag_effect *e, struct bm_sup_opts *so);
/* The spawner's answer to e's launch: running, or failed to start (and then finished). */
void ag_launched(struct bm_agent *a, struct ag_effect *e, const struct bm_spawner_msg *m);
/* The spawner died: its shims are watched by pidfd from now on, and the agent forks its own. */
void ag_spawner_gone(struct bm_agent *a);

#endif /* BM_AGENT_ADMIT_H */

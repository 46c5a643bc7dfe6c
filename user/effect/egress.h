/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The network policies egress_restricted and egress_allow_list, held in the kernel. */
#ifndef BM_EGRESS_USER_H
#define BM_EGRESS_USER_H

#include <stdint.h>

#include "base/cidr.h"

/*
 * The egress filter (bpf/egress.bpf.c): one program and one allow-list for
 * every effect of this process, attached only to the cgroups of effects
 * whose network policy restricts egress. Not pinned: an attachment keeps
 * its program and map alive, so effects started by an earlier agent stay
 * filtered by that agent's copy until their cgroups are removed.
 */
struct bm_egress;

/* Load it (not attached anywhere): NULL and errno on failure. */
struct bm_egress *bm_egress__open(void);
/*
 * Allow cgroup cgid to reach cidrs[0..n) (its own host always), then attach
 * the filter to cgroup_fd, before anything runs in it. 0 or -errno; on
 * failure nothing is left in the allow-list.
 */
int bm_egress__apply(struct bm_egress *eg, int cgroup_fd, uint64_t cgid, const struct bm_cidr *cidrs,
		     unsigned int n);
/* Remove cgid's entries (its cgroup's removal detaches the filter). */
void bm_egress__forget(struct bm_egress *eg, uint64_t cgid, const struct bm_cidr *cidrs, unsigned int n);
/* NULL is fine. */
void bm_egress__free(struct bm_egress *eg);

#endif /* BM_EGRESS_USER_H */

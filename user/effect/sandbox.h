/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sandbox of an effect, as an execution request (or `run`'s flags)
 * declares it: ceilings and quantities, the network policy and its egress
 * CIDRs, and the hardening flags.
 */
#ifndef BM_SANDBOX_H
#define BM_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>

#include "base/cidr.h"

#define BM_REQ_MAX_CIDRS 64

enum bm_netpol {
	BM_NET_NONE,
	BM_NET_EGRESS_RESTRICTED,
	BM_NET_EGRESS_ALLOW_LIST,
	BM_NET_FULL,
};

struct bm_sandbox {
	uint64_t cpu_request_milli, cpu_limit_milli;	/* 0 = not given */
	uint64_t memory_request, memory_limit;		/* bytes */
	uint64_t pids_limit;				/* tasks (burstmeter's own, beyond the seed's) */
	uint64_t timeout_ns;
	uint64_t max_ephemeral_storage;			/* bytes */
	uint64_t io_read_bps, io_write_bps, io_iops;	/* per disk behind its paths */
	enum bm_netpol network_policy;			/* default full */
	struct bm_cidr cidrs[BM_REQ_MAX_CIDRS];
	unsigned int n_cidrs;
	bool read_only_root_fs, run_as_non_root, drop_all_capabilities;
};

/* "none", "egress_restricted", "egress_allow_list", "full"; NULL if out of range. */
const char *bm_netpol_name(enum bm_netpol p);
/* The policy named s (one of those names): 0, or -EINVAL. */
int bm_netpol_parse(const char *s, enum bm_netpol *out);
/*
 * Does c allow anything p does not (a limit lifted or raised, a looser
 * network policy or a CIDR outside p's, a hardening flag of p's off)? The
 * request field that does, or NULL if c is no looser than p.
 */
const char *bm_sandbox_looser(const struct bm_sandbox *c, const struct bm_sandbox *p);

#endif /* BM_SANDBOX_H */

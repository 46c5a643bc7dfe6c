// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>

#include "base/common.h"
#include "effect/sandbox.h"

static const char *const netpol_names[] = {
	[BM_NET_NONE] = "none",
	[BM_NET_EGRESS_RESTRICTED] = "egress_restricted",
	[BM_NET_EGRESS_ALLOW_LIST] = "egress_allow_list",
	[BM_NET_FULL] = "full",
};

const char *bm_netpol_name(enum bm_netpol p)
{
	return (unsigned int)p < BM_ARRAY_SIZE(netpol_names) ? netpol_names[p] : NULL;
}

int bm_netpol_parse(const char *s, enum bm_netpol *out)
{
	size_t i;

	for (i = 0; i < BM_ARRAY_SIZE(netpol_names); i++) {
		if (!strcmp(s, netpol_names[i])) {
			*out = (enum bm_netpol)i;
			return 0;
		}
	}
	return -EINVAL;
}

static bool cidr_within(const struct bm_cidr *c, const struct bm_cidr *in)
{
	unsigned int i, bits;

	if (c->family != in->family || c->prefix < in->prefix)
		return false;
	for (i = 0; i * 8 < in->prefix; i++) {
		bits = in->prefix - i * 8 >= 8 ? 8 : in->prefix - i * 8;
		if ((c->addr[i] ^ in->addr[i]) & (uint8_t)(0xff00 >> bits))
			return false;
	}
	return true;
}

/* A limit of the parent's that the child lifts, or raises: 0 = none. */
static bool lifts(uint64_t child, uint64_t parent)
{
	return parent && (!child || child > parent);
}

const char *bm_sandbox_looser(const struct bm_sandbox *c, const struct bm_sandbox *p)
{
	unsigned int i, j;

	if (lifts(c->cpu_limit_milli, p->cpu_limit_milli))
		return "sandbox.cpu_limit";
	if (lifts(c->memory_limit, p->memory_limit))
		return "sandbox.memory_limit";
	if (lifts(c->pids_limit, p->pids_limit))
		return "sandbox.pids_limit";
	if (lifts(c->timeout_ns, p->timeout_ns))
		return "sandbox.timeout_seconds";
	if (lifts(c->max_ephemeral_storage, p->max_ephemeral_storage))
		return "sandbox.max_ephemeral_storage";
	if (lifts(c->io_read_bps, p->io_read_bps))
		return "sandbox.io_read_bps";
	if (lifts(c->io_write_bps, p->io_write_bps))
		return "sandbox.io_write_bps";
	if (lifts(c->io_iops, p->io_iops))
		return "sandbox.io_iops";
	/* none < egress_restricted < egress_allow_list (of the parent's CIDRs) < full */
	if (c->network_policy > p->network_policy)
		return "sandbox.network_policy";
	for (i = 0; c->network_policy == BM_NET_EGRESS_ALLOW_LIST && i < c->n_cidrs; i++) {
		for (j = 0; j < p->n_cidrs && !cidr_within(&c->cidrs[i], &p->cidrs[j]); j++)
			;
		if (j == p->n_cidrs)
			return "sandbox.allowed_egress_cidrs";
	}
	if (p->read_only_root_fs && !c->read_only_root_fs)
		return "sandbox.read_only_root_fs";
	if (p->run_as_non_root && !c->run_as_non_root)
		return "sandbox.run_as_non_root";
	if (p->drop_all_capabilities && !c->drop_all_capabilities)
		return "sandbox.drop_all_capabilities";
	return NULL;
}

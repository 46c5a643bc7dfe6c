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

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/retain.h"
#include "agent/shim.h"
#include "base/common.h"

/* Rows deleted in one call: a few ms of SQLite; the rest go at the next call. */
#define RETAIN_SLICE 1000

static void drop_files(const char *tenant, const char *id, void *ctx)
{
	char status[PATH_MAX], log[PATH_MAX];

	if (ag_effect_files(ctx, tenant, id, status, log))
		return;
	(void)unlink(log);
	(void)unlink(status);
}

int ag_retain(struct bm_agent *a)
{
	int64_t now_ms = (int64_t)(bm_wall_ns() / BM_NSEC_PER_MSEC);
	int64_t before = now_ms - (int64_t)(a->cfg.retention_ns / BM_NSEC_PER_MSEC);
	int n = bm_store__expire(a->store, before, a->cfg.retention_effects, RETAIN_SLICE, drop_files,
				 a);

	if (n < 0)
		bm_warn("failed to delete ended effects past their retention: %s", strerror(-n));
	else if (n)
		bm_dbg("deleted %d ended effects past their retention", n);
	return n;
}

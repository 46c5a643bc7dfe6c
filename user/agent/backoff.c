// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/backoff.h"
#include "base/common.h"

static struct ag_backoff *find(const struct bm_agent *a, const char *tenant, const char *tool,
			       uint64_t now)
{
	unsigned int i;

	for (i = 0; i < a->n_backoffs; i++) {
		struct ag_backoff *b = &a->backoffs[i];

		if (b->until_ns > now && !strcmp(b->tenant, tenant) && !strcmp(b->tool, tool))
			return b;
	}
	return NULL;
}

uint64_t ag_backoff_until(const struct bm_agent *a, const char *tenant, const char *tool)
{
	const struct ag_backoff *b = find(a, tenant, tool, bm_now_ns());

	return b ? b->until_ns : 0;
}

int ag_backoff_set(struct bm_agent *a, const char *tenant, const char *tool, uint64_t until_ns)
{
	uint64_t now = bm_now_ns();
	struct ag_backoff *b = find(a, tenant, tool, now), *p;
	unsigned int i;

	/* an expired one is reused, so the table is as large as what backs off at once */
	for (i = 0; !b && i < a->n_backoffs; i++)
		if (a->backoffs[i].until_ns <= now)
			b = &a->backoffs[i];
	if (!b) {
		p = realloc(a->backoffs, (a->n_backoffs + 1) * sizeof(*p));
		if (!p)
			return -ENOMEM;
		a->backoffs = p;
		b = &p[a->n_backoffs++];
	}
	snprintf(b->tenant, sizeof(b->tenant), "%s", tenant);
	snprintf(b->tool, sizeof(b->tool), "%s", tool);
	b->until_ns = until_ns;
	return 0;
}

void ag_backoff_free(struct bm_agent *a)
{
	free(a->backoffs);
	a->backoffs = NULL;
	a->n_backoffs = 0;
}

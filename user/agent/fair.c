// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The fair scheduler's choice (fair.h): pure. */
#include "agent/fair.h"

double bm_fair_tag(const struct bm_fair_tenant *t)
{
	double w = t->weight > 0 ? t->weight : 1;

	return (t->usage + t->running * BM_FAIR_START_COST) / w;
}

long bm_fair_pick(const struct bm_fair_item *v, size_t n, const struct bm_fair_tenant *t)
{
	double best_tag = 0, tag;
	long best = -1;
	size_t i;

	for (i = 0; i < n; i++) {
		const struct bm_fair_item *x = &v[i];

		if (t[x->tenant].held)
			continue;
		tag = bm_fair_tag(&t[x->tenant]);
		if (best >= 0) {
			const struct bm_fair_item *b = &v[best];

			if (tag > best_tag)
				continue;
			if (tag == best_tag && (x->priority < b->priority ||
						(x->priority == b->priority && x->seq > b->seq)))
				continue;
		}
		best = (long)i;
		best_tag = tag;
	}
	return best;
}

double bm_fair_cpu_share(double cpus, double weight, bool there, double weight_there,
			 unsigned int n_there)
{
	if (n_there <= (there ? 1U : 0U))
		return 0;
	return cpus * weight / (weight_there - (there ? weight : 0) + weight);
}

bool bm_fair_over_share(double use, double share, bool was_over)
{
	return share > 0 && use > (was_over ? 1 / BM_FAIR_OVER : BM_FAIR_OVER) * share;
}

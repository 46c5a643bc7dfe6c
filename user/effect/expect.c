// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdbool.h>

#include "effect/expect.h"

static const struct {
	const char *key;
	const char *sect, *field;	/* where the outcome has it (sect NULL: at the top) */
	double unit;			/* declared units per outcome unit */
	enum bm_pdim pdim;
	bool whole;			/* written as an integer */
} dims[BM_X__MAX] = {
	[BM_X_CPU] = { "cpu_cores", "peak", "cpu_cores", 1000, BM_P_CPU, false },
	[BM_X_MEM] = { "memory_bytes", "peak", "memory_bytes", 1, BM_P_MEM, true },
	[BM_X_PIDS] = { "pids", "peak", "pids", 1, BM_P_PIDS, true },
	[BM_X_NET_RATE] = { "net_tx_bytes_per_s", "peak", "net_tx_bytes_per_s", 1, BM_P_NET, false },
	[BM_X_NET_BYTES] = { "net_tx_bytes", "totals", "net_tx_bytes", 1, BM_P__MAX, true },
	[BM_X_WALL] = { "wall_seconds", NULL, "wall_seconds", 1e9, BM_P__MAX, false },
};

const char *bm_expect_key(enum bm_xdim d)
{
	return d < BM_X__MAX ? dims[d].key : "?";
}

double bm_expect_value(const struct bm_expect *x, enum bm_xdim d)
{
	return d < BM_X__MAX ? (double)x->v[d] / dims[d].unit : 0;
}

enum bm_pdim bm_expect_pdim(enum bm_xdim d)
{
	return d < BM_X__MAX ? dims[d].pdim : BM_P__MAX;
}

void bm_expect_widen(const struct bm_expect *x, struct bm_policy *p)
{
	struct bm_dim_rule *r;
	double want;
	int d;

	if (!x || !p->expect_widens)
		return;
	for (d = 0; d < BM_X__MAX; d++) {
		if (!(x->set & BM_X_BIT(d)) || dims[d].pdim == BM_P__MAX)
			continue;
		r = &p->dim[dims[d].pdim];
		want = bm_expect_value(x, d);
		/* the declaration moves a warning level, never a wall */
		if (r->hard > 0 && want > r->hard)
			want = r->hard;
		if (r->soft > 0 && want > r->soft)
			r->soft = want;
	}
}

static json_t *number(double v, bool whole)
{
	return whole ? json_integer((json_int_t)v) : json_real(v);
}

json_t *bm_expect_json(const struct bm_expect *x, const json_t *outcome)
{
	json_t *decl = json_object(), *obs = json_object(), *over = json_array(), *sect;
	double want, got;
	int d, bad = !decl || !obs || !over;

	for (d = 0; !bad && d < BM_X__MAX; d++) {
		if (!(x->set & BM_X_BIT(d)))
			continue;
		sect = dims[d].sect ? json_object_get(outcome, dims[d].sect) : (json_t *)outcome;
		got = json_number_value(json_object_get(sect, dims[d].field));
		want = bm_expect_value(x, d);
		bad |= json_object_set_new(decl, dims[d].key, number(want, dims[d].whole));
		bad |= json_object_set_new(obs, dims[d].key, number(got, dims[d].whole));
		if (got > want)
			bad |= json_array_append_new(over, json_string(dims[d].key));
	}
	if (bad) {
		json_decref(decl);
		json_decref(obs);
		json_decref(over);
		return NULL;
	}
	return json_pack("{s:o, s:o, s:o}", "declared", decl, "observed", obs, "exceeded", over);
}

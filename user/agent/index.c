// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's effects by (tenant, id), by admission number and by shim,
 * and its running effects per tenant: what each request, each word of the
 * spawner and each start looks up. Scanning 10,000 effects with strcmp()
 * for each of them was the agent's largest cost while they piled up.
 * Open addressing with linear probing; deletion shifts back, no tombstones.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "agent/index.h"
#include "agent/tenant.h"

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* FNV-1a of "tenant/id": equal names, equal keys; a collision is told apart by the names. */
static uint64_t name_key(const char *tenant, const char *id)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *p;

	for (p = tenant; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	h = (h ^ '/') * 0x100000001b3ULL;
	for (p = id; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	return h;
}

static int ix_grow(struct ag_index *ix)
{
	size_t cap = ix->cap ? 2 * ix->cap : 64, i, j;
	uint64_t *key = calloc(cap, sizeof(*key));
	struct ag_effect **val = calloc(cap, sizeof(*val));

	if (!key || !val) {
		free(key);
		free(val);
		return -ENOMEM;
	}
	for (i = 0; i < ix->cap; i++) {
		if (!ix->val[i])
			continue;
		for (j = mix(ix->key[i]) & (cap - 1); val[j]; j = (j + 1) & (cap - 1))
			;
		key[j] = ix->key[i];
		val[j] = ix->val[i];
	}
	free(ix->key);
	free(ix->val);
	ix->key = key;
	ix->val = val;
	ix->cap = cap;
	return 0;
}

static int ix_put(struct ag_index *ix, uint64_t key, struct ag_effect *e)
{
	size_t i;

	/* at most half full; past that only if it cannot grow, and never full */
	if ((ix->n + 1) * 2 > ix->cap && ix_grow(ix) && ix->n + 1 >= ix->cap)
		return -ENOMEM;
	for (i = mix(key) & (ix->cap - 1); ix->val[i]; i = (i + 1) & (ix->cap - 1))
		;
	ix->key[i] = key;
	ix->val[i] = e;
	ix->n++;
	return 0;
}

static void ix_del(struct ag_index *ix, uint64_t key, const struct ag_effect *e)
{
	size_t m = ix->cap - 1, i, j, home;

	if (!ix->cap)
		return;
	for (i = mix(key) & m; ix->val[i] && ix->val[i] != e; i = (i + 1) & m)
		;
	if (!ix->val[i])
		return;
	/* shift back every entry after it whose home is not between the hole and itself */
	for (j = (i + 1) & m; ix->val[j]; j = (j + 1) & m) {
		home = mix(ix->key[j]) & m;
		if (((j - home) & m) >= ((j - i) & m)) {
			ix->key[i] = ix->key[j];
			ix->val[i] = ix->val[j];
			i = j;
		}
	}
	ix->val[i] = NULL;
	ix->n--;
}

/* Every entry under key, one after the other: start with *i = SIZE_MAX. */
static struct ag_effect *ix_next(const struct ag_index *ix, uint64_t key, size_t *i)
{
	size_t m = ix->cap - 1;

	if (!ix->cap)
		return NULL;
	*i = *i == SIZE_MAX ? mix(key) & m : (*i + 1) & m;
	for (; ix->val[*i]; *i = (*i + 1) & m)
		if (ix->key[*i] == key)
			return ix->val[*i];
	return NULL;
}

static void ix_free(struct ag_index *ix)
{
	free(ix->key);
	free(ix->val);
	memset(ix, 0, sizeof(*ix));
}

struct ag_effect *ag_find(struct bm_agent *a, const char *tenant, const char *id)
{
	uint64_t key = name_key(tenant, id);
	struct ag_effect *e;
	size_t i = SIZE_MAX;

	while ((e = ix_next(&a->by_name, key, &i)))
		if (!strcmp(e->req.id, id) && !strcmp(e->tenant, tenant))
			return e;
	return NULL;
}

struct ag_effect *ag_find_seq(struct bm_agent *a, uint64_t seq)
{
	size_t i = SIZE_MAX;

	return ix_next(&a->by_seq, seq, &i);
}

struct ag_effect *ag_find_shim(struct bm_agent *a, uint64_t shim_id)
{
	size_t i = SIZE_MAX;

	return shim_id ? ix_next(&a->by_shim, shim_id, &i) : NULL;
}

/* Room for one more in s. */
static int room(struct ag_set *s)
{
	unsigned int cap = s->cap ? 2 * s->cap : 64;
	struct ag_effect **v;

	if (s->n < s->cap)
		return 0;
	v = realloc(s->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->v = v;
	s->cap = cap;
	return 0;
}

/* e's place + 1 in a set, kept in the field at offset off of struct ag_effect. */
static unsigned int *place(struct ag_effect *e, size_t off)
{
	return (unsigned int *)((char *)e + off);
}

static void set_add(struct ag_set *s, size_t off, struct ag_effect *e)
{
	if (*place(e, off) || room(s))
		return;
	s->v[s->n++] = e;
	*place(e, off) = s->n;
}

/* Out of s, the last taking its place. */
static void set_del(struct ag_set *s, size_t off, struct ag_effect *e)
{
	unsigned int at = *place(e, off);
	struct ag_effect *last;

	if (!at)
		return;
	last = s->v[--s->n];
	s->v[at - 1] = last;
	*place(last, off) = at;
	*place(e, off) = 0;
}

int ag_index_reserve(struct bm_agent *a)
{
	if ((a->by_name.n + 1) * 2 > a->by_name.cap && ix_grow(&a->by_name))
		return -ENOMEM;
	if ((a->by_seq.n + 1) * 2 > a->by_seq.cap && ix_grow(&a->by_seq))
		return -ENOMEM;
	/* every effect may be queued, and due */
	return room(&a->queue) || room(&a->heap) ? -ENOMEM : 0;
}

/* Out of the queue, and out of its tenant's queued count. */
static void unqueue(struct bm_agent *a, struct ag_effect *e)
{
	struct ag_tenant_count *t;

	if (!e->queue_i)
		return;
	set_del(&a->queue, offsetof(struct ag_effect, queue_i), e);
	t = ag_tenant_of(a, e);
	if (t && t->queued)
		t->queued--;
}

void ag_started(struct bm_agent *a, struct ag_effect *e)
{
	struct ag_tenant_count *t;

	unqueue(a, e);
	if (e->started)
		return;
	e->started = true;
	t = ag_tenant_of(a, e);
	if (t)
		t->running++;
	a->running++;
}

void ag_stopped(struct bm_agent *a, struct ag_effect *e)
{
	struct ag_tenant_count *t;

	if (!e->started)
		return;
	e->started = false;
	a->running--;
	t = ag_tenant_of(a, e);
	if (t && t->running)
		t->running--;
	ag_tenant_release(a, e);
}

void ag_queue_add(struct bm_agent *a, struct ag_effect *e)
{
	struct ag_tenant_count *t;

	set_add(&a->queue, offsetof(struct ag_effect, queue_i), e);
	t = e->queue_i ? ag_tenant_of(a, e) : NULL;
	if (t)
		t->queued++;
}

static void slot_del(struct bm_agent *a, struct ag_effect *e)
{
	if (a->by_slot && e->slot < BM_MOVED_SLOTS && a->by_slot[e->slot] == e)
		a->by_slot[e->slot] = NULL;
}

void ag_wake(struct bm_agent *a, struct ag_effect *e)
{
	slot_del(a, e);
	set_add(&a->awake, offsetof(struct ag_effect, awake_i), e);
}

void ag_sleep(struct bm_agent *a, struct ag_effect *e)
{
	/* a meter without a slot is never marked: it stays awake */
	if (e->slot >= BM_MOVED_SLOTS)
		return;
	if (!a->by_slot) {
		a->by_slot = calloc(BM_MOVED_SLOTS, sizeof(*a->by_slot));
		if (!a->by_slot)
			return;
	}
	set_del(&a->awake, offsetof(struct ag_effect, awake_i), e);
	a->by_slot[e->slot] = e;
}

struct ag_effect *ag_slot_sleeper(const struct bm_agent *a, uint32_t slot)
{
	return a->by_slot && slot < BM_MOVED_SLOTS ? a->by_slot[slot] : NULL;
}

uint64_t ag_due(const struct ag_effect *e)
{
	return e->sup.timer_at < e->sup.deadline_at ? e->sup.timer_at : e->sup.deadline_at;
}

static void heap_set(struct bm_agent *a, unsigned int i, struct ag_effect *e)
{
	a->heap.v[i] = e;
	e->heap_i = i + 1;
}

static void heap_fix(struct bm_agent *a, unsigned int i)
{
	struct ag_effect **v = a->heap.v, *e = v[i];
	uint64_t due = ag_due(e);
	unsigned int c;

	for (; i && ag_due(v[(i - 1) / 2]) > due; i = (i - 1) / 2)
		heap_set(a, i, v[(i - 1) / 2]);
	for (; (c = 2 * i + 1) < a->heap.n; i = c) {
		if (c + 1 < a->heap.n && ag_due(v[c + 1]) < ag_due(v[c]))
			c++;
		if (ag_due(v[c]) >= due)
			break;
		heap_set(a, i, v[c]);
	}
	heap_set(a, i, e);
}

static void heap_del(struct bm_agent *a, struct ag_effect *e)
{
	unsigned int i = e->heap_i - 1;

	if (!e->heap_i)
		return;
	e->heap_i = 0;
	if (i == --a->heap.n)
		return;
	a->heap.v[i] = a->heap.v[a->heap.n];
	heap_fix(a, i);
}

void ag_timers_moved(void *ctx)
{
	struct ag_effect *e = ctx;
	struct bm_agent *a = e->agent;

	if (ag_due(e) == UINT64_MAX) {
		heap_del(a, e);
		return;
	}
	/* at the end, then where it belongs; no room: not due for the agent, as without timers */
	set_add(&a->heap, offsetof(struct ag_effect, heap_i), e);
	if (e->heap_i)
		heap_fix(a, e->heap_i - 1);
}

struct ag_effect *ag_heap_top(const struct bm_agent *a)
{
	return a->heap.n ? a->heap.v[0] : NULL;
}

void ag_heap_pop(struct bm_agent *a)
{
	if (a->heap.n)
		heap_del(a, a->heap.v[0]);
}

int ag_index_add(struct bm_agent *a, struct ag_effect *e)
{
	int err = ix_put(&a->by_name, name_key(e->tenant, e->req.id), e);

	if (!err && (err = ix_put(&a->by_seq, e->seq, e)))
		ix_del(&a->by_name, name_key(e->tenant, e->req.id), e);
	return err;
}

void ag_index_del(struct bm_agent *a, struct ag_effect *e)
{
	ix_del(&a->by_name, name_key(e->tenant, e->req.id), e);
	ix_del(&a->by_seq, e->seq, e);
	ag_set_shim_id(a, e, 0);
	if (e->cg_id)
		ix_del(&a->by_cg, e->cg_id, e);
	if (e->cg_scan)
		a->cg_unindexed--;
	e->cg_id = 0;
	e->cg_scan = false;
	unqueue(a, e);
	heap_del(a, e);
	set_del(&a->awake, offsetof(struct ag_effect, awake_i), e);
	slot_del(a, e);
	/* one that never ended (the agent stops): out of its tenant's count all the same */
	if (e->started) {
		struct ag_tenant_count *t = ag_tenant_of(a, e);

		if (t && t->running)
			t->running--;
		ag_tenant_release(a, e);
	}
}

struct ag_effect *ag_find_cg(struct bm_agent *a, uint64_t cg_id)
{
	struct ag_effect *e;
	size_t i = SIZE_MAX;
	unsigned int k;

	if (cg_id && (e = ix_next(&a->by_cg, cg_id, &i)))
		return e;
	/* one the index could not take: the scan every event once paid (10,000 x 10,000 at a drain) */
	for (k = 0; a->cg_unindexed && k < a->n_eff; k++)
		if (a->eff[k]->cg_scan && a->eff[k]->sup.cg && a->eff[k]->sup.cg->id == cg_id)
			return a->eff[k];
	return NULL;
}

void ag_set_cg(struct bm_agent *a, struct ag_effect *e)
{
	if (e->cg_id || e->cg_scan || !e->sup.cg)
		return;
	if (ix_put(&a->by_cg, e->sup.cg->id, e)) {
		e->cg_scan = true;
		a->cg_unindexed++;
	} else
		e->cg_id = e->sup.cg->id;
}

void ag_set_shim_id(struct bm_agent *a, struct ag_effect *e, uint64_t id)
{
	if (e->shim_id)
		ix_del(&a->by_shim, e->shim_id, e);
	e->shim_id = id;
	/* not indexed (no memory): 0, and the caller watches the shim by pidfd */
	if (id && ix_put(&a->by_shim, id, e))
		e->shim_id = 0;
}

unsigned int ag_tenant_count(struct bm_agent *a, const char *tenant, int delta)
{
	struct ag_tenant_count *t = delta > 0 ? ag_tenant(a, tenant) : ag_tenant_find(a, tenant);

	if (!t)
		return 0;
	t->running = delta < 0 && t->running < (unsigned int)-delta ? 0 : t->running + (unsigned int)delta;
	return t->running;
}

void ag_index_free(struct bm_agent *a)
{
	ix_free(&a->by_name);
	ix_free(&a->by_seq);
	ix_free(&a->by_shim);
	ix_free(&a->by_cg);
	free(a->tenants);
	free(a->queue.v);
	free(a->heap.v);
	free(a->awake.v);
	free(a->by_slot);
	a->tenants = NULL;
	a->by_slot = NULL;
	a->n_tenants = 0;
	memset(&a->queue, 0, sizeof(a->queue));
	memset(&a->heap, 0, sizeof(a->heap));
	memset(&a->awake, 0, sizeof(a->awake));
}

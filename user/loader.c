// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "common.h"
#include "loader.h"
#include "meter.skel.h"

/* Not in Debian 12's 6.1 uapi headers; the value is ABI (include/uapi/linux/bpf.h, 6.2). */
#define BM_MAP_TYPE_CGRP_STORAGE ((enum bpf_map_type)32)

struct bm_loader {
	struct bm_meter_bpf *skel;
	struct ring_buffer *rb;
	struct bm_features feat;
	bm_event_fn on_event;
	void *ctx;
};

static bool btf_has_tracepoint(const struct btf *vmlinux, const char *tp)
{
	char name[128];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
}

/* The hrtimer function of the scheduler tick: tick_nohz_handler since 6.9, tick_sched_timer before. */
static uint64_t find_tick_fn(void)
{
	char line[256], name[128];
	unsigned long long addr;
	uint64_t found = 0;
	char type;
	FILE *f;

	f = fopen("/proc/kallsyms", "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %127s", &addr, &type, name) != 3)
			continue;
		if (!strcmp(name, "tick_nohz_handler") || !strcmp(name, "tick_sched_timer"))
			found = addr;
	}
	fclose(f);
	return found;
}

static unsigned int page_shift(void)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned int shift = 0;

	while (page > 1) {
		page >>= 1;
		shift++;
	}
	return shift;
}

enum net_mode { NET_TRACEPOINT, NET_FEXIT, NET_NONE };

/* Choose programs and map types for this kernel, between open and load. */
static void configure(struct bm_meter_bpf *skel, struct bm_features *feat, enum net_mode net,
		      bool force_hash, const struct btf *vmlinux)
{
	struct bpf_program *p;
	uint64_t tick_fn = find_tick_fn();

	feat->cgrp_storage = !force_hash && libbpf_probe_bpf_map_type(BM_MAP_TYPE_CGRP_STORAGE, NULL) > 0;
	skel->rodata->cfg_cgrp_storage = feat->cgrp_storage;
	skel->rodata->cfg_page_shift = page_shift();
	skel->rodata->cfg_tick_fn = tick_fn;
	/* the unused meter map stays referenced by dead code: make it a 1-entry hash */
	if (feat->cgrp_storage) {
		bpf_map__set_max_entries(skel->maps.bm_cghash, 1);
	} else {
		bpf_map__set_type(skel->maps.bm_cgst, BPF_MAP_TYPE_HASH);
		bpf_map__set_max_entries(skel->maps.bm_cgst, 1);
	}

	/* a tracepoint this kernel lacks is left out, never guessed at */
	bpf_object__for_each_program(p, skel->obj) {
		const char *sec = bpf_program__section_name(p);

		if (!strncmp(sec, "tp_btf/", 7) && !btf_has_tracepoint(vmlinux, sec + 7))
			bpf_program__set_autoload(p, false);
	}
	feat->tick = tick_fn && bpf_program__autoload(skel->progs.bm_tick);
	bpf_program__set_autoload(skel->progs.bm_tick, feat->tick);
	feat->reclaim = bpf_program__autoload(skel->progs.bm_dreclaim_beg) &&
			bpf_program__autoload(skel->progs.bm_dreclaim_end);

	if (net == NET_TRACEPOINT && !bpf_program__autoload(skel->progs.bm_net_send))
		net = NET_FEXIT;
	bpf_program__set_autoload(skel->progs.bm_net_send, net == NET_TRACEPOINT);
	bpf_program__set_autoload(skel->progs.bm_net_inet, net == NET_FEXIT);
	bpf_program__set_autoload(skel->progs.bm_net_inet6, net == NET_FEXIT);
	feat->net = net == NET_TRACEPOINT ? "sock_send_length" : net == NET_FEXIT ? "fexit" : "none";
	bm_dbg("meters in %s; CPU charged at %s; reclaim %s; network from %s",
	       feat->cgrp_storage ? "cgroup storage" : "a hash by cgroup id",
	       feat->tick ? "switches and ticks" : "switches only", feat->reclaim ? "on" : "off", feat->net);
}

static int load(struct bm_loader *l, bool force_hash)
{
	enum net_mode net = NET_TRACEPOINT;
	struct btf *vmlinux;
	int err;

	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return -errno;
	for (;;) {
		l->skel = bm_meter_bpf__open();
		if (!l->skel) {
			err = -errno;
			break;
		}
		configure(l->skel, &l->feat, net, force_hash, vmlinux);
		err = bm_meter_bpf__load(l->skel);
		if (!err)
			err = bm_meter_bpf__attach(l->skel);
		/* fexit is refused on some kernels (EPERM, no trampolines): meter without net */
		if (!err || strcmp(l->feat.net, "fexit"))
			break;
		bm_dbg("fexit network hooks unavailable (%s), metering without network", strerror(-err));
		bm_meter_bpf__destroy(l->skel);
		l->skel = NULL;
		net = NET_NONE;
	}
	btf__free(vmlinux);
	return err;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct bm_loader *l = ctx;

	if (size >= sizeof(struct bm_event) && l->on_event)
		l->on_event(data, l->ctx);
	return 0;
}

struct bm_loader *bm_loader__open(const struct bm_loader_opts *opts)
{
	struct bm_loader *l;
	int err;

	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->on_event = opts ? opts->on_event : NULL;
	l->ctx = opts ? opts->ctx : NULL;
	err = load(l, opts && opts->force_hash);
	if (err)
		goto err_free;
	l->rb = ring_buffer__new(bpf_map__fd(l->skel->maps.bm_events), on_record, l, NULL);
	if (!l->rb) {
		err = -errno;
		goto err_free;
	}
	return l;

err_free:
	bm_loader__free(l);
	errno = -err;
	return NULL;
}

void bm_loader__free(struct bm_loader *l)
{
	if (!l)
		return;
	ring_buffer__free(l->rb);
	bm_meter_bpf__destroy(l->skel);
	free(l);
}

const struct bm_features *bm_loader__features(const struct bm_loader *l)
{
	return &l->feat;
}

/* The meter map and the key it wants: the cgroup's fd for storage, its id for the hash. */
static int meter_map(struct bm_loader *l, const struct bm_cgroup *cg, const void **key)
{
	if (l->feat.cgrp_storage) {
		*key = &cg->dirfd;
		return bpf_map__fd(l->skel->maps.bm_cgst);
	}
	*key = &cg->id;
	return bpf_map__fd(l->skel->maps.bm_cghash);
}

int bm_loader__add(struct bm_loader *l, const struct bm_cgroup *cg, uint64_t window_ns,
		   uint64_t start_ns, const uint64_t thresh[BM_DIM__MAX])
{
	struct bm_meter m = { 0 };
	const void *key;
	int fd;

	if (window_ns < BM_WINDOW_NS_MIN || window_ns > BM_WINDOW_NS_MAX)
		return -EINVAL;
	m.window_ns = window_ns;
	m.first_win = m.last_win = m.lvl_win = start_ns / window_ns;
	if (thresh)
		memcpy(m.thresh, thresh, sizeof(m.thresh));
	fd = meter_map(l, cg, &key);
	if (bpf_map_update_elem(fd, key, &m, BPF_NOEXIST))
		return -errno;
	return 0;
}

int bm_loader__arm(struct bm_loader *l, const struct bm_cgroup *cg,
		   const uint64_t thresh[BM_DIM__MAX], const uint64_t kill_at[BM_DIM__MAX])
{
	struct bm_meter m;
	const void *key;
	int fd = meter_map(l, cg, &key);

	/* read-modify-write: the meter is armed before its first task starts */
	if (bpf_map_lookup_elem_flags(fd, key, &m, BPF_F_LOCK))
		return -errno;
	if (thresh)
		memcpy(m.thresh, thresh, sizeof(m.thresh));
	if (kill_at)
		memcpy(m.kill_at, kill_at, sizeof(m.kill_at));
	if (bpf_map_update_elem(fd, key, &m, BPF_EXIST | BPF_F_LOCK))
		return -errno;
	return 0;
}

int bm_loader__read(struct bm_loader *l, const struct bm_cgroup *cg, struct bm_meter *out)
{
	const void *key;
	int fd = meter_map(l, cg, &key);

	if (bpf_map_lookup_elem_flags(fd, key, out, BPF_F_LOCK))
		return -errno;
	return 0;
}

/* Forget mms charged to cg whose teardown happened out of its sight. */
static void drop_mms(struct bm_loader *l, uint64_t cgid)
{
	int fd = bpf_map__fd(l->skel->maps.bm_mm);
	uint64_t key, next, stale[256];
	struct bm_mm_state st;
	unsigned int n = 0, i;
	void *prev = NULL;

	while (n < BM_ARRAY_SIZE(stale) && !bpf_map_get_next_key(fd, prev, &next)) {
		if (!bpf_map_lookup_elem(fd, &next, &st) && st.cgid == cgid)
			stale[n++] = next;
		key = next;
		prev = &key;
	}
	for (i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &stale[i]);
}

int bm_loader__del(struct bm_loader *l, const struct bm_cgroup *cg)
{
	const void *key;
	int fd = meter_map(l, cg, &key), err = 0;

	if (bpf_map_delete_elem(fd, key))
		err = -errno;
	drop_mms(l, cg->id);
	return err;
}

int bm_loader__stats(struct bm_loader *l, uint64_t out[BM_STAT__MAX])
{
	int ncpu = libbpf_num_possible_cpus(), fd = bpf_map__fd(l->skel->maps.bm_stats);
	uint32_t i;
	int c;

	if (ncpu < 0)
		return ncpu;
	uint64_t vals[ncpu];

	for (i = 0; i < BM_STAT__MAX; i++) {
		if (bpf_map_lookup_elem(fd, &i, vals))
			return -errno;
		out[i] = 0;
		for (c = 0; c < ncpu; c++)
			out[i] += vals[c];
	}
	return 0;
}

int bm_loader__event_fd(const struct bm_loader *l)
{
	return ring_buffer__epoll_fd(l->rb);
}

int bm_loader__poll(struct bm_loader *l, int timeout_ms)
{
	int n = ring_buffer__poll(l->rb, timeout_ms);

	return n == -EINTR ? 0 : n;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "base/common.h"
#include "bm_abi.h"
#include "meter.skel.h"
#include "meter/btfscan.h"
#include "meter/loader.h"

/* Not in Debian 12's 6.1 uapi headers; the value is ABI (include/uapi/linux/bpf.h, 6.2). */
#define BM_MAP_TYPE_CGRP_STORAGE ((enum bpf_map_type)32)

/*
 * libbpf warns about what we probe on purpose (a missing tracepoint, a map
 * type this kernel lacks); a real load failure is reported by the caller,
 * and -v shows libbpf's own account of it. A verifier log runs to many
 * kilobytes: it is printed whole, a "burstmeter: " line per line of it, so
 * that -v shows why a kernel refused a program.
 */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg = NULL, *line, *save = NULL;
	size_t i;

	if (bm_log_get_level() < BM_LOG_DEBUG || vasprintf(&msg, fmt, ap) < 0)
		return 0;
	for (i = 0; msg[i]; i++)
		if (((unsigned char)msg[i] < 0x20 && msg[i] != '\n') || msg[i] == 0x7f)
			msg[i] = '?';
	for (line = strtok_r(msg, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		fprintf(stderr, "burstmeter: %s\n", line);
	free(msg);
	return 0;
}

void bm_log_libbpf(void)
{
	libbpf_set_print(libbpf_print);
}

/* The maps userspace uses, by index: the same whether loaded or adopted from pins. */
enum { M_CGST, M_CGHASH, M_MM, M_EVENTS, M_STATS, M_MOVED, M_BLKALIAS, M_RINGS, M_META, M__MAX };
/* As pinned; bpffs takes no dots, so bm_moved is pinned under a name of its own. */
static const char *const map_names[M__MAX] = {
	"bm_cgst", "bm_cghash", "bm_mm", "bm_events", "bm_stats", "bm_moved", "bm_blkalias",
	"bm_rings", "bm_meta",
};

/* bm_rings' slots (bpf/meter.bpf.c BM_RINGS); 0 is bm_events, the owner's. */
#define RINGS 64
#define GUEST_RING_BYTES (256 * 1024)

/* The object's name of map i: global data is named after its section. */
static const char *obj_map_name(int i)
{
	return i == M_MOVED ? ".data.moved" : map_names[i];
}

#define MAX_LINKS 24

struct bm_loader {
	struct bm_meter_bpf *skel;	/* NULL when adopted */
	struct bm_meter_bpf *skel2;	/* the programs loaded beside skel's, on its maps; or NULL */
	struct bpf_link *links[MAX_LINKS];
	int n_links;
	int fd[M__MAX];			/* dup'ed or bpf_obj_get: ours to close */
	struct ring_buffer *rb;
	struct bm_features feat;
	bm_event_fn on_event;
	void *ctx;
	char pin_dir[PATH_MAX];
	uint32_t ring_bytes;		/* asked for, 0: the object's */
	bool adopted;
	volatile struct bm_marks *marks;	/* bm_marks, mapped */
	uint8_t slot_used[BM_MOVED_SLOTS / 8];
	uint32_t slot_next;		/* where the search for a free slot starts */
	uint64_t *stale;		/* cgroups whose meters went: their mms are forgotten in one pass */
	size_t n_stale, cap_stale;
	uint64_t stale_since_ns;	/* when stale[0] was added */
	/* a guest of a pinned meter (reuse_dirs): the links held, our ring and its slot */
	bool guest;
	char reused[PATH_MAX];
	int link_fd[MAX_LINKS];
	int n_link_fd;
	int ring_fd;
	uint32_t ring_slot, ring_id;
	uint64_t keep_ns;		/* keep the meter pinned so long after we end */
	bool keep;			/* it is a kept meter (ours, or one we reuse) */
	char keep_dir[PATH_MAX];	/* where kept meters are pinned */
};

/*
 * What configure() asks of the kernel's BTF: the tracepoints of the
 * programs and the kfuncs, found once per load in one pass over its raw
 * types (meter/btfscan.h), through libbpf's parse where that cannot read
 * them. A lookup by name is a linear search, and one per program cost as
 * much again as libbpf's own load.
 */
#define MAX_WANT 32

struct btf_wants {
	struct bm_btf_want w[MAX_WANT];
	char names[MAX_WANT][128];
	int n;
};

static int btf_find_all(const struct bm_meter_bpf *skel, struct btf_wants *bw)
{
	static const char *const kfuncs[] = { "bpf_cgroup_from_id", "bpf_cgroup_release",
					      "bpf_rdonly_cast" };
	const int nk = (int)(sizeof(kfuncs) / sizeof(kfuncs[0]));
	const struct btf_type *t;
	struct bpf_program *p;
	struct btf *vmlinux;
	uint32_t i, nr;
	int k, err;

	bw->n = 0;
	bpf_object__for_each_program(p, skel->obj) {
		const char *sec = bpf_program__section_name(p);

		if (strncmp(sec, "tp_btf/", 7) || bw->n >= MAX_WANT - nk)
			continue;
		snprintf(bw->names[bw->n], sizeof(bw->names[0]), "btf_trace_%s", sec + 7);
		bw->w[bw->n] = (struct bm_btf_want){ bw->names[bw->n], BTF_KIND_TYPEDEF, false };
		bw->n++;
	}
	for (k = 0; k < nk; k++)
		bw->w[bw->n++] = (struct bm_btf_want){ kfuncs[k], BTF_KIND_FUNC, false };

	err = bm_btf_scan("/sys/kernel/btf/vmlinux", bw->w, bw->n);
	if (!err)
		return 0;
	bm_dbg("kernel BTF not scanned (%s): parsed by libbpf", strerror(-err));
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		return -errno;
	nr = btf__type_cnt(vmlinux);
	for (i = 1; i < nr; i++) {
		t = btf__type_by_id(vmlinux, i);
		if (t && t->name_off)
			bm_btf_want_mark(bw->w, bw->n, btf_kind(t),
					 btf__name_by_offset(vmlinux, t->name_off));
	}
	btf__free(vmlinux);
	return 0;
}

static bool wanted(const struct btf_wants *bw, const char *name, int kind)
{
	int k;

	for (k = 0; k < bw->n; k++)
		if (bw->w[k].kind == kind && !strcmp(bw->w[k].name, name))
			return bw->w[k].found;
	return false;
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


/* Choose programs and map types for this kernel, between open and load. */
static void configure(struct bm_meter_bpf *skel, struct bm_features *feat, enum bm_net_source net,
		      bool force_hash, uint32_t ring_bytes, const struct btf_wants *bw, bool say)
{
	struct bpf_program *p;
	bool kf;

	feat->cgrp_storage = !force_hash && libbpf_probe_bpf_map_type(BM_MAP_TYPE_CGRP_STORAGE, NULL) > 0;
	skel->rodata->cfg_cgrp_storage = feat->cgrp_storage;
	/* a meter found by id where a walk would cost the verifier (bpf/meter.bpf.c bm_cur_meter()) */
	skel->rodata->cfg_cgroup_kfuncs = feat->cgrp_storage &&
					  wanted(bw, "bpf_cgroup_from_id", BTF_KIND_FUNC) &&
					  wanted(bw, "bpf_cgroup_release", BTF_KIND_FUNC);
	skel->rodata->cfg_rdonly_cast = wanted(bw, "bpf_rdonly_cast", BTF_KIND_FUNC);
	skel->rodata->cfg_page_shift = page_shift();
	/* a lane per CPU: the switch and the tick add without atomics (bpf/lib/window.bpf.h) */
	skel->rodata->cfg_plain_lanes = libbpf_num_possible_cpus() <= BM_LANES;
	if (ring_bytes)
		bpf_map__set_max_entries(skel->maps.bm_events, ring_bytes);
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
		char tp[160];

		snprintf(tp, sizeof(tp), "btf_trace_%s", sec + 7);
		if (!strncmp(sec, "tp_btf/", 7) && !wanted(bw, tp, BTF_KIND_TYPEDEF))
			bpf_program__set_autoload(p, false);
	}
	/* the tick: its hrtimer function's address is found after the load (find_tick()) */
	feat->tick = bpf_program__autoload(skel->progs.bm_tick);
	bpf_program__set_autoload(skel->progs.bm_find_tick, feat->tick);
	feat->reclaim = bpf_program__autoload(skel->progs.bm_dreclaim_beg) &&
			bpf_program__autoload(skel->progs.bm_dreclaim_end);

	/*
	 * Block I/O: one of two programs on block_bio_queue. The bio names its
	 * cgroup by pointers the verifier does not trust, so by id: with meters
	 * in the hash, the id is the key; in cgroup storage, bpf_cgroup_from_id()
	 * (6.2+, as the storage) makes it a cgroup. Without that kfunc, I/O is
	 * the submitting task's only, and v1 twins cannot be told.
	 */
	kf = skel->rodata->cfg_cgroup_kfuncs && skel->rodata->cfg_rdonly_cast &&
	     bpf_program__autoload(skel->progs.bm_bio_queue_kf);
	bpf_program__set_autoload(kf ? skel->progs.bm_bio_queue : skel->progs.bm_bio_queue_kf, false);
	feat->io = bpf_program__autoload(skel->progs.bm_bio_queue) ||
		   bpf_program__autoload(skel->progs.bm_bio_queue_kf);
	feat->io_alias = feat->io && (kf || !feat->cgrp_storage);
	feat->dirty = bpf_program__autoload(skel->progs.bm_dirty);
	feat->oom = bpf_program__autoload(skel->progs.bm_oom_victim);

	if (net == BM_NET_SRC_TP && !bpf_program__autoload(skel->progs.bm_net_send))
		net = BM_NET_SRC_FEXIT;
	bpf_program__set_autoload(skel->progs.bm_net_send, net == BM_NET_SRC_TP);
	bpf_program__set_autoload(skel->progs.bm_net_inet, net == BM_NET_SRC_FEXIT);
	bpf_program__set_autoload(skel->progs.bm_net_inet6, net == BM_NET_SRC_FEXIT);
	feat->net = net;
	if (!say)
		return;
	bm_dbg("meters in %s; CPU charged at %s; reclaim %s; network from %s; block I/O %s%s; "
	       "dirtied pages %s; OOM victims %s",
	       feat->cgrp_storage ? "cgroup storage" : "a hash by cgroup id",
	       feat->tick ? "switches and ticks" : "switches only", feat->reclaim ? "on" : "off",
	       bm_net_source_name(feat->net), feat->io ? "on" : "off",
	       feat->io_alias ? " (v1 blkio twins resolved)" : "", feat->dirty ? "on" : "off",
	       feat->oom ? "on" : "off");
}

/*
 * The scheduler tick's hrtimer function, from the kernel's symbols
 * (bm_find_tick(), a syscall program run once): where it is not found the
 * tick program stays detached and CPU is charged at switches only.
 */
static void find_tick(struct bm_loader *l)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	if (!l->feat.tick)
		return;
	if (bpf_prog_test_run_opts(bpf_program__fd(l->skel->progs.bm_find_tick), &opts) ||
	    !l->skel->bss->bm_tick_fn)
		l->feat.tick = false;
	bm_dbg("tick function %s", l->feat.tick ? "found" : "not found: CPU at switches only");
}

static int attach_obj(struct bm_loader *l, struct bpf_object *obj)
{
	struct bpf_program *p;
	struct bpf_link *link;

	bpf_object__for_each_program(p, obj) {
		const char *name = bpf_program__name(p);

		if (!bpf_program__autoload(p) || !strcmp(name, "bm_find_tick") ||
		    (!strcmp(name, "bm_tick") && !l->feat.tick))
			continue;
		link = bpf_program__attach(p);
		if (!link)
			return -errno;
		if (l->n_links >= MAX_LINKS) {
			bpf_link__destroy(link);
			return -E2BIG;
		}
		l->links[l->n_links++] = link;
	}
	return 0;
}

/* Attach every program that loaded, in both objects, keeping the links (to pin them). */
static int attach(struct bm_loader *l)
{
	int err;

	find_tick(l);
	err = attach_obj(l, l->skel->obj);
	return err || !l->skel2 ? err : attach_obj(l, l->skel2->obj);
}

static void detach(struct bm_loader *l)
{
	while (l->n_links)
		bpf_link__destroy(l->links[--l->n_links]);
}

/*
 * With -v: the verifier's own account of each program (BPF_LOG_STATS, a
 * few lines: its time, instructions processed, states), one line each, and
 * the program's verified_insns. Costs the verifier nothing measurable.
 */
#define STATS_LOG 1024

static void stats_arm(struct bm_meter_bpf *skel, char (*logs)[STATS_LOG], int max)
{
	struct bpf_program *p;
	int i = 0;

	bpf_object__for_each_program(p, skel->obj) {
		if (i >= max)
			break;
		logs[i][0] = '\0';
		if (!bpf_program__autoload(p))
			continue;
		bpf_program__set_log_level(p, 4);
		bpf_program__set_log_buf(p, logs[i++], STATS_LOG);
	}
}

static void stats_print(struct bm_meter_bpf *skel, char (*logs)[STATS_LOG], int max)
{
	struct bpf_prog_info info;
	struct bpf_program *p;
	uint32_t len;
	char *c;
	int i = 0;

	bpf_object__for_each_program(p, skel->obj) {
		if (i >= max || !bpf_program__autoload(p))
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			info.verified_insns = 0;
		for (c = logs[i]; *c; c++)
			if (*c == '\n')
				*c = ' ';
		bm_dbg("prog %s: verified_insns %u; %s", bpf_program__name(p), info.verified_insns,
		       logs[i++]);
	}
}

/*
 * A fresh load verifies its programs in two objects at once, where there
 * are two CPUs to do it: libbpf loads one object's programs one after
 * another, and the verifier is most of a standalone start (bench/ kload).
 * The second object is the same skeleton, opened again and configured
 * alike; each loads half the programs (split_programs()) on maps made
 * before either load (share_maps()), so neither waits on the other.
 * $BURSTMETER_LOAD_THREADS=1 loads in one object, as on one CPU. (Under
 * qemu's single-threaded TCG the two CPUs take turns: the VM suite's load
 * is slower split, ~1.2 s against ~0.9 s.)
 */
static bool load_split(void)
{
	const char *e = getenv("BURSTMETER_LOAD_THREADS");

	cpu_set_t cpus;

	if (e && *e)
		return strcmp(e, "1") != 0;
	/* the CPUs we may run on (a cpuset, taskset), not the machine's */
	return !sched_getaffinity(0, sizeof(cpus), &cpus) && CPU_COUNT(&cpus) > 1;
}

/*
 * Which object loads each program: the longest first, each to the object
 * with fewer instructions so far (a proxy for the verifier's time: near
 * halves here, bench/ kload). bm_find_tick stays in a, where find_tick()
 * runs it. What a does not load, b does not either: configure() chose
 * alike for both.
 */
static void split_programs(struct bm_meter_bpf *a, struct bm_meter_bpf *b)
{
	struct bpf_program *p, *list[MAX_LINKS + 8];
	size_t n = 0, i, j, wa = 0, wb = 0;

	bpf_object__for_each_program(p, a->obj)
		if (bpf_program__autoload(p) && n < sizeof(list) / sizeof(list[0]))
			list[n++] = p;
	for (i = 1; i < n; i++)
		for (j = i; j && bpf_program__insn_cnt(list[j]) > bpf_program__insn_cnt(list[j - 1]); j--) {
			p = list[j];
			list[j] = list[j - 1];
			list[j - 1] = p;
		}
	for (i = 0; i < n; i++) {
		struct bpf_program *q = bpf_object__find_program_by_name(b->obj, bpf_program__name(list[i]));
		size_t cnt = bpf_program__insn_cnt(list[i]);

		if (list[i] == a->progs.bm_find_tick || wa <= wb || !q) {
			wa += cnt;
			if (q)
				bpf_program__set_autoload(q, false);
		} else {
			wb += cnt;
			bpf_program__set_autoload(list[i], false);
		}
	}
}

/*
 * The maps of object a, made here and handed to both objects (reuse_fd):
 * what bpf_object__load() would do for them. Their types from a copy of
 * the object's BTF (the object loads its own later), the initial data of
 * .rodata and .bss, .rodata frozen (the verifier takes its values as
 * constants: the cfg_* switches prune what this kernel does not run).
 */
static int share_maps(struct bm_meter_bpf *a, struct bm_meter_bpf *b)
{
	const void *raw;
	struct btf *copy;
	struct bpf_map *m;
	uint32_t size, zero = 0;
	int err = 0, fd;

	raw = btf__raw_data(bpf_object__btf(a->obj), &size);
	copy = raw ? btf__new(raw, size) : NULL;
	if (!copy)
		return -errno;
	err = btf__load_into_kernel(copy);
	bpf_object__for_each_map(m, a->obj) {
		LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = bpf_map__map_flags(m),
			    .map_extra = bpf_map__map_extra(m), .btf_fd = btf__fd(copy),
			    .btf_key_type_id = bpf_map__btf_key_type_id(m),
			    .btf_value_type_id = bpf_map__btf_value_type_id(m));
		struct bpf_map *twin = bpf_object__find_map_by_name(b->obj, bpf_map__name(m));
		struct bpf_map *inner = bpf_map__inner_map(m);
		char name[BPF_OBJ_NAME_LEN];
		const void *init;
		size_t len;

		if (err)
			break;
		/* a map of maps (bm_rings): no BTF, an inner map to type it, as libbpf makes it */
		if (inner) {
			o.btf_fd = o.btf_key_type_id = o.btf_value_type_id = 0;
			o.inner_map_fd = bpf_map_create(bpf_map__type(inner), NULL, bpf_map__key_size(inner),
							bpf_map__value_size(inner),
							bpf_map__max_entries(inner), NULL);
			if ((int)o.inner_map_fd < 0) {
				err = -errno;
				break;
			}
		}
		snprintf(name, sizeof(name), "%s", bpf_map__name(m));
		fd = bpf_map_create(bpf_map__type(m), name, bpf_map__key_size(m),
				    bpf_map__value_size(m), bpf_map__max_entries(m), &o);
		if (inner)
			close((int)o.inner_map_fd);
		if (fd < 0) {
			err = -errno;
			bm_dbg("map %s: %s", bpf_map__name(m), strerror(errno));
			break;
		}
		init = bpf_map__initial_value(m, &len);
		if (init && bpf_map_update_elem(fd, &zero, init, 0))
			err = -errno;
		else if (init && (bpf_map__map_flags(m) & BPF_F_RDONLY_PROG) && bpf_map_freeze(fd))
			err = -errno;
		/* reuse_fd dups: ours is closed either way */
		err = err ?: bpf_map__reuse_fd(m, fd);
		err = err ?: twin ? bpf_map__reuse_fd(twin, fd) : -ENOENT;
		close(fd);
	}
	btf__free(copy);
	return err;
}

struct half_load {
	struct bm_meter_bpf *skel;
	int err;
};

static void *load_half(void *arg)
{
	struct half_load *h = arg;

	h->err = bm_meter_bpf__load(h->skel);
	return NULL;
}

/* Load skel, and skel2 beside it in a thread of its own where there is one. */
static int load_objects(struct bm_loader *l)
{
	struct half_load h = { .skel = l->skel2 };
	pthread_t t;
	int err;

	if (!l->skel2)
		return bm_meter_bpf__load(l->skel);
	/* no thread to be had: one after the other, as one object would */
	if (pthread_create(&t, NULL, load_half, &h)) {
		err = bm_meter_bpf__load(l->skel);
		return err ?: bm_meter_bpf__load(l->skel2);
	}
	err = bm_meter_bpf__load(l->skel);
	pthread_join(t, NULL);
	return err ?: h.err;
}

/*
 * Each object's load has libbpf parse vmlinux BTF (5.4 MB on 6.18) into
 * fresh memory: two copies of it, and an index. Fresh memory costs a page
 * fault per 4 KiB, and on a VM with shadow paging the faults were most of
 * the parse: 42 ms of it, against 3.6 ms for memory touched before.
 * While the meter loads, big blocks come from the heap rather than from
 * mmap(), the heap grows in one step of LOAD_HEAP, and that step is in
 * huge pages (one fault per 2 MiB) where the kernel has them for
 * madvise(); both loading threads allocate from it. After the load,
 * malloc's thresholds are back to their defaults and what is free goes
 * back to the kernel: a long-running agent keeps none of it. The one arena
 * stays: glibc fixes its limit of arenas once, and an agent's few threads
 * lose nothing by sharing it.
 */
#define LOAD_HEAP (64UL << 20)
#define LOAD_MMAP_THRESHOLD (32 << 20)	/* glibc's most on 64-bit; vmlinux BTF is below it */
#define MALLOC_DEFAULT (128 << 10)	/* mallopt(3): the three thresholds' defaults */
#define HUGE_PAGE (2UL << 20)

static void heap_for_load(void)
{
	uintptr_t lo, hi;
	void *p;

	if (!mallopt(M_MMAP_THRESHOLD, LOAD_MMAP_THRESHOLD) || !mallopt(M_TOP_PAD, LOAD_HEAP))
		return;
	(void)mallopt(M_TRIM_THRESHOLD, 2 * LOAD_HEAP);
	(void)mallopt(M_ARENA_MAX, 1);
	/* a block from the heap grows it by itself and LOAD_HEAP, all untouched */
	p = malloc(LOAD_MMAP_THRESHOLD / 2);
	lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	hi = (uintptr_t)sbrk(0) & ~(HUGE_PAGE - 1);
	if (p && hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
	free(p);
}

static void heap_after_load(void)
{
	/* a fixed mmap threshold from now on: glibc's adjusts itself only until one is set */
	(void)mallopt(M_MMAP_THRESHOLD, MALLOC_DEFAULT);
	(void)mallopt(M_TOP_PAD, MALLOC_DEFAULT);
	(void)mallopt(M_TRIM_THRESHOLD, MALLOC_DEFAULT);
	(void)malloc_trim(0);
}

static void destroy_objects(struct bm_loader *l)
{
	bm_meter_bpf__destroy(l->skel2);
	bm_meter_bpf__destroy(l->skel);
	l->skel = l->skel2 = NULL;
}

static int load(struct bm_loader *l, bool force_hash)
{
	char (*logs)[STATS_LOG] = NULL;
	uint64_t t0;
	enum bm_net_source net = BM_NET_SRC_TP;
	struct btf_wants bw = { .n = -1 };
	struct bm_features twin;
	bool split = load_split();
	int err;

	heap_for_load();
	for (;;) {
		l->skel = bm_meter_bpf__open();
		if (!l->skel) {
			err = -errno;
			break;
		}
		/* once: a retry without fexit opens the same object */
		if (bw.n < 0) {
			err = btf_find_all(l->skel, &bw);
			if (err)
				break;
		}
		configure(l->skel, &l->feat, net, force_hash, l->ring_bytes, &bw, true);
		if (split) {
			l->skel2 = bm_meter_bpf__open();
			if (l->skel2) {
				configure(l->skel2, &twin, net, force_hash, l->ring_bytes, &bw, false);
				split_programs(l->skel, l->skel2);
			}
			err = l->skel2 ? share_maps(l->skel, l->skel2) : -errno;
			if (err) {
				/* one object, as on one CPU: start this one over */
				bm_dbg("loading in one object: %s", strerror(-err));
				destroy_objects(l);
				split = false;
				continue;
			}
		}
		if (bm_log_get_level() >= BM_LOG_DEBUG && !logs)
			logs = calloc(2 * MAX_LINKS, STATS_LOG);
		if (logs) {
			stats_arm(l->skel, logs, MAX_LINKS);
			if (l->skel2)
				stats_arm(l->skel2, logs + MAX_LINKS, MAX_LINKS);
		}
		t0 = bm_now_ns();
		err = load_objects(l);
		bm_dbg("meter loaded in %.1f ms%s: %s", (bm_now_ns() - t0) / 1e6,
		       l->skel2 ? " (two objects at once)" : "", err ? strerror(-err) : "ok");
		if (!err && logs) {
			stats_print(l->skel, logs, MAX_LINKS);
			if (l->skel2)
				stats_print(l->skel2, logs + MAX_LINKS, MAX_LINKS);
		}
		if (!err)
			err = attach(l);
		/* fexit is refused on some kernels (EPERM, no trampolines): meter without net */
		if (!err || l->feat.net != BM_NET_SRC_FEXIT)
			break;
		bm_dbg("fexit network hooks unavailable (%s), metering without network", strerror(-err));
		detach(l);
		destroy_objects(l);
		net = BM_NET_SRC_NONE;
	}
	free(logs);
	heap_after_load();
	return err;
}

const char *bm_net_source_name(enum bm_net_source n)
{
	return n == BM_NET_SRC_TP ? "sock_send_length" : n == BM_NET_SRC_FEXIT ? "fexit" : "none";
}

static uint32_t feature_bits(const struct bm_features *f)
{
	return (f->cgrp_storage ? BM_META_CGRP_STORAGE : 0) | (f->tick ? BM_META_TICK : 0) |
	       (f->reclaim ? BM_META_RECLAIM : 0) |
	       (f->net == BM_NET_SRC_TP ? BM_META_NET_TP : 0) |
	       (f->net == BM_NET_SRC_FEXIT ? BM_META_NET_FEXIT : 0) | (f->io ? BM_META_IO : 0) |
	       (f->dirty ? BM_META_DIRTY : 0) | (f->oom ? BM_META_OOM : 0) |
	       (f->io_alias ? BM_META_IO_ALIAS : 0);
}

static int pin_path(const struct bm_loader *l, const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", l->pin_dir, name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Pin the maps and links, and say what they are in bm_meta. */
static int pin(struct bm_loader *l)
{
	struct bm_meta meta = { .abi = BM_ABI_VERSION, .features = feature_bits(&l->feat) };
	char path[PATH_MAX], name[64];
	uint32_t zero = 0;
	int i, err;

	/* kept: its time runs from now (the reaper starts when we end) */
	if (l->keep)
		meta.keep_until_ns = bm_now_ns() + l->keep_ns;

	if (mkdir(l->pin_dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (bpf_map_update_elem(l->fd[M_META], &zero, &meta, 0))
		return -errno;
	for (i = 0; i < M__MAX; i++) {
		err = pin_path(l, map_names[i], path, sizeof(path));
		if (!err && bpf_obj_pin(l->fd[i], path))
			err = -errno;
		if (err)
			return err;
	}
	for (i = 0; i < l->n_links; i++) {
		/* bpffs refuses names with a dot (it keeps them for its own files) */
		snprintf(name, sizeof(name), "link_%d", i);
		err = pin_path(l, name, path, sizeof(path));
		if (!err)
			err = bpf_link__pin(l->links[i], path);
		if (err) {
			bm_dbg("failed to pin %s: %s", path, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* A meter pinned by an agent of the same ABI: use its maps; its programs stay attached. */
static int adopt(struct bm_loader *l)
{
	struct bm_meta meta;
	char path[PATH_MAX];
	uint32_t zero = 0;
	int i, err;

	err = pin_path(l, "bm_meta", path, sizeof(path));
	if (err)
		return err;
	l->fd[M_META] = bpf_obj_get(path);
	if (l->fd[M_META] < 0)
		return -errno;
	if (bpf_map_lookup_elem(l->fd[M_META], &zero, &meta))
		return -errno;
	if (meta.abi != BM_ABI_VERSION)
		return -EPROTO;
	for (i = 0; i < M__MAX - 1; i++) {
		err = pin_path(l, map_names[i], path, sizeof(path));
		if (err)
			return err;
		l->fd[i] = bpf_obj_get(path);
		if (l->fd[i] < 0)
			return -errno;
	}
	/* maps without the switch program's link would meter nothing: a half-made pin set */
	err = pin_path(l, "link_0", path, sizeof(path));
	if (err || access(path, F_OK) < 0)
		return err ? err : -ENOENT;
	l->feat.cgrp_storage = meta.features & BM_META_CGRP_STORAGE;
	l->feat.tick = meta.features & BM_META_TICK;
	l->feat.reclaim = meta.features & BM_META_RECLAIM;
	l->feat.io = meta.features & BM_META_IO;
	l->feat.dirty = meta.features & BM_META_DIRTY;
	l->feat.oom = meta.features & BM_META_OOM;
	l->feat.io_alias = meta.features & BM_META_IO_ALIAS;
	l->feat.net = meta.features & BM_META_NET_TP ? BM_NET_SRC_TP
		      : meta.features & BM_META_NET_FEXIT ? BM_NET_SRC_FEXIT : BM_NET_SRC_NONE;
	l->adopted = true;
	return 0;
}

int bm_loader__unpin(struct bm_loader *l)
{
	struct dirent *de;
	char path[PATH_MAX];
	DIR *d;
	int err = 0;

	if (!l->pin_dir[0])
		return 0;
	d = opendir(l->pin_dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || pin_path(l, de->d_name, path, sizeof(path)))
			continue;
		if (unlink(path) < 0 && !err)
			err = -errno;
	}
	closedir(d);
	if (rmdir(l->pin_dir) < 0 && !err && errno != ENOENT)
		err = -errno;
	return err;
}

/* Load fresh (pinning where asked), or adopt what an earlier agent pinned. */
static int load_or_adopt(struct bm_loader *l, bool force_hash, bool adopt_only)
{
	int i, err;

	if (l->pin_dir[0]) {
		err = adopt(l);
		if (!err || adopt_only)
			return err;
		/* nothing pinned, or another ABI: start over */
		bm_dbg("not adopting %s: %s", l->pin_dir, strerror(-err));
		for (i = 0; i < M__MAX; i++) {
			if (l->fd[i] >= 0)
				close(l->fd[i]);
			l->fd[i] = -1;
		}
		(void)bm_loader__unpin(l);
	}
	err = load(l, force_hash);
	if (err)
		return err;
	for (i = 0; i < M__MAX; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(l->skel->obj, obj_map_name(i));

		l->fd[i] = m ? dup(bpf_map__fd(m)) : -1;
		if (l->fd[i] < 0)
			return m ? -errno : -ENOENT;
	}
	return l->pin_dir[0] ? pin(l) : 0;
}

/* The id of the map behind fd, or 0. */
static uint32_t map_id(int fd)
{
	struct bpf_map_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/*
 * A ring of our own in a free slot of bm_rings: slots are tried from one
 * our pid picks; a slot is ours if, after we wrote it, it holds our ring
 * (two guests that race for one: the later write wins, the earlier sees
 * it and moves on).
 */
static int guest_ring(struct bm_loader *l)
{
	uint32_t k, slot, id;
	int err = -ENOSPC;

	l->ring_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "bm_guest", 0, 0, GUEST_RING_BYTES, NULL);
	if (l->ring_fd < 0)
		return -errno;
	l->ring_id = map_id(l->ring_fd);
	for (k = 0; k < RINGS - 1; k++) {
		slot = 1 + ((uint32_t)getpid() + k) % (RINGS - 1);
		if (!bpf_map_lookup_elem(l->fd[M_RINGS], &slot, &id) || errno != ENOENT)
			continue;
		if (bpf_map_update_elem(l->fd[M_RINGS], &slot, &l->ring_fd, BPF_ANY)) {
			err = -errno;
			continue;
		}
		if (!bpf_map_lookup_elem(l->fd[M_RINGS], &slot, &id) && id == l->ring_id) {
			l->ring_slot = slot;
			return 0;
		}
	}
	return err;
}

/*
 * Reuse the meter pinned in dir as a guest. Its links are held open, so
 * that its programs stay attached until we end even if the pins go (an
 * agent that stops, a kept meter's reaper).
 */
static int meta_get(const char *dir, struct bm_meta *meta, int *fdp);
static void unpin_dir(const char *dir);

static int guest_open(struct bm_loader *l, const char *dir)
{
	char path[PATH_MAX], name[32];
	struct bm_meta meta;
	int i, err, fd;

	/* a kept meter past its time whose reaper is gone: unpinned here instead */
	if (!strcmp(dir, l->keep_dir) && !meta_get(dir, &meta, &fd)) {
		close(fd);
		if (meta.abi == BM_ABI_VERSION && meta.keep_until_ns &&
		    meta.keep_until_ns <= bm_now_ns()) {
			unpin_dir(dir);
			return -ESTALE;
		}
	}
	snprintf(l->pin_dir, sizeof(l->pin_dir), "%s", dir);
	err = adopt(l);
	for (i = 0; !err && i < MAX_LINKS; i++) {
		snprintf(name, sizeof(name), "link_%d", i);
		fd = pin_path(l, name, path, sizeof(path)) ? -1 : bpf_obj_get(path);
		if (fd < 0)
			break;
		l->link_fd[l->n_link_fd++] = fd;
	}
	if (!err)
		err = guest_ring(l);
	l->pin_dir[0] = '\0';
	if (err)
		return err;
	l->guest = true;
	snprintf(l->reused, sizeof(l->reused), "%s", dir);
	l->keep = !strcmp(dir, l->keep_dir);
	return 0;
}

static void guest_close(struct bm_loader *l)
{
	uint32_t id;

	if (l->ring_slot && !bpf_map_lookup_elem(l->fd[M_RINGS], &l->ring_slot, &id) &&
	    id == l->ring_id)
		(void)bpf_map_delete_elem(l->fd[M_RINGS], &l->ring_slot);
	l->ring_slot = 0;
	if (l->ring_fd >= 0)
		close(l->ring_fd);
	l->ring_fd = -1;
	while (l->n_link_fd)
		close(l->link_fd[--l->n_link_fd]);
}

static void close_maps(struct bm_loader *l)
{
	int i;

	for (i = 0; i < M__MAX; i++) {
		if (l->fd[i] >= 0)
			close(l->fd[i]);
		l->fd[i] = -1;
	}
}

static int meta_get(const char *dir, struct bm_meta *meta, int *fdp)
{
	char path[PATH_MAX];
	uint32_t zero = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/bm_meta", dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	if (bpf_map_lookup_elem(fd, &zero, meta)) {
		close(fd);
		return -errno;
	}
	*fdp = fd;
	return 0;
}

static void unpin_dir(const char *dir)
{
	struct bm_loader l = { 0 };

	snprintf(l.pin_dir, sizeof(l.pin_dir), "%s", dir);
	(void)bm_loader__unpin(&l);
}

/*
 * The reaper of a kept meter: a process of its own (two forks, a session
 * of its own, no fds of ours), that sleeps until the meter's keep_until_ns
 * and unpins it then, unless a later run moved that on. It names itself in
 * bm_meta; a reaper that finds another named there (it looks every second)
 * leaves it the job.
 */
static void reaper(const char *dir)
{
	struct timespec ts;
	struct bm_meta meta;
	uint32_t zero = 0;
	uint64_t wake;
	int fd, i;

	for (i = 3; i < 1024; i++)
		close(i);
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	if (meta_get(dir, &meta, &fd))
		return;
	meta.reaper_pid = (uint32_t)getpid();
	(void)bpf_map_update_elem(fd, &zero, &meta, 0);
	close(fd);
	for (;;) {
		if (meta_get(dir, &meta, &fd))
			return;
		close(fd);
		if (meta.reaper_pid != (uint32_t)getpid() || !meta.keep_until_ns)
			return;
		if (bm_now_ns() >= meta.keep_until_ns) {
			unpin_dir(dir);
			return;
		}
		/* a second at most: a newer reaper or a dropped meter ends us soon after */
		wake = bm_now_ns() + BM_NSEC_PER_SEC;
		wake = wake < meta.keep_until_ns ? wake : meta.keep_until_ns;
		ts.tv_sec = (time_t)(wake / BM_NSEC_PER_SEC);
		ts.tv_nsec = (long)(wake % BM_NSEC_PER_SEC);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
}

/* Keep the meter pinned in keep_dir until keep_ns from now, and start its reaper. */
static void keep_meter(struct bm_loader *l)
{
	struct bm_meta meta;
	uint32_t zero = 0;
	pid_t pid;
	int fd;

	if (meta_get(l->keep_dir, &meta, &fd))
		return;
	meta.keep_until_ns = bm_now_ns() + l->keep_ns;
	if (bpf_map_update_elem(fd, &zero, &meta, 0))
		bm_dbg("failed to keep the meter: %s", strerror(errno));
	close(fd);
	bm_dbg("meter kept in %s for %.3f s", l->keep_dir, l->keep_ns / 1e9);
	pid = fork();
	if (pid < 0)
		return;
	if (!pid) {
		setsid();
		if (!fork())
			reaper(l->keep_dir);
		_exit(0);
	}
	(void)waitpid(pid, NULL, 0);
}

bool bm_loader__adopted(const struct bm_loader *l)
{
	return l->adopted;
}

const char *bm_loader__reused(const struct bm_loader *l)
{
	return l->guest ? l->reused : NULL;
}

int bm_loader__prog_ids(const struct bm_loader *l, uint32_t *ids, int max)
{
	struct bpf_link_info info;
	uint32_t len;
	int i, n = 0;

	for (i = 0; i < l->n_links && n < max; i++) {
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(bpf_link__fd(l->links[i]), &info, &len))
			ids[n++] = info.prog_id;
	}
	return n;
}

static int on_record(void *ctx, void *data, size_t size)
{
	struct bm_loader *l = ctx;
	const struct bm_event *e = data;

	/* a record longer than its header says so by its type; a short one is dropped */
	if (size >= sizeof(*e) && e->type == BM_EV_OOM && size < sizeof(struct bm_oom_event))
		return 0;
	if (size >= sizeof(struct bm_event) && l->on_event)
		l->on_event(data, l->ctx);
	return 0;
}

struct bm_loader *bm_loader__open(const struct bm_loader_opts *opts)
{
	struct bm_loader *l;
	uint64_t t0;
	int err = 0, i;

	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	for (i = 0; i < M__MAX; i++)
		l->fd[i] = -1;
	l->ring_fd = -1;
	l->on_event = opts ? opts->on_event : NULL;
	l->ctx = opts ? opts->ctx : NULL;
	l->ring_bytes = opts ? opts->ring_bytes : 0;
	l->keep_ns = opts ? opts->keep_ns : 0;
	snprintf(l->keep_dir, sizeof(l->keep_dir), "%s",
		 opts && opts->keep_dir ? opts->keep_dir : BM_KEEP_PIN_DIR);
	if (opts && opts->pin_dir)
		snprintf(l->pin_dir, sizeof(l->pin_dir), "%s", opts->pin_dir);
	for (i = 0; opts && !opts->pin_dir && opts->reuse_dirs && opts->reuse_dirs[i]; i++) {
		t0 = bm_now_ns();
		err = guest_open(l, opts->reuse_dirs[i]);
		if (!err) {
			bm_dbg("reusing the meter pinned in %s (ring %u), in %.2f ms", l->reused,
			       l->ring_slot, (bm_now_ns() - t0) / 1e6);
			break;
		}
		bm_dbg("not reusing %s: %s", opts->reuse_dirs[i], strerror(-err));
		guest_close(l);
		close_maps(l);
		l->adopted = false;
	}
	if (!l->guest) {
		/* nothing to reuse: ours, pinned to be kept if asked */
		if (l->keep_ns && !l->pin_dir[0]) {
			snprintf(l->pin_dir, sizeof(l->pin_dir), "%s", l->keep_dir);
			l->keep = true;
		}
		err = load_or_adopt(l, opts && opts->force_hash, opts && opts->adopt_only);
		if (err)
			goto err_free;
	}
	l->marks = mmap(NULL, sizeof(*l->marks), PROT_READ | PROT_WRITE, MAP_SHARED, l->fd[M_MOVED], 0);
	if (l->marks == MAP_FAILED) {
		l->marks = NULL;
		err = -errno;
		goto err_free;
	}
	l->rb = ring_buffer__new(l->guest ? l->ring_fd : l->fd[M_EVENTS], on_record, l, NULL);
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
	int i;

	if (!l)
		return;
	bm_loader__forget_stale(l);
	free(l->stale);
	/* a kept meter, ours or reused, lives on keep_ns from now */
	if (l->keep && l->keep_ns && (l->guest || l->skel))
		keep_meter(l);
	guest_close(l);
	ring_buffer__free(l->rb);
	if (l->marks)
		munmap((void *)l->marks, sizeof(*l->marks));
	for (i = 0; i < M__MAX; i++)
		if (l->fd[i] >= 0)
			close(l->fd[i]);
	detach(l);
	bm_meter_bpf__destroy(l->skel2);
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
		return l->fd[M_CGST];
	}
	*key = &cg->id;
	return l->fd[M_CGHASH];
}

static bool slot_used(const struct bm_loader *l, uint32_t s)
{
	return s < BM_MOVED_SLOTS && (l->slot_used[s / 8] & (1U << (s % 8)));
}

static void slot_set(struct bm_loader *l, uint32_t s, bool used)
{
	if (s >= BM_MOVED_SLOTS)
		return;
	if (used)
		l->slot_used[s / 8] |= (uint8_t)(1U << (s % 8));
	else
		l->slot_used[s / 8] &= (uint8_t)~(1U << (s % 8));
}

/* A free slot (marked used), or BM_SLOT_NONE when all are taken. */
static uint32_t slot_alloc(struct bm_loader *l)
{
	uint32_t i, s;

	for (i = 0; i < BM_MOVED_SLOTS; i++) {
		s = (l->slot_next + i) % BM_MOVED_SLOTS;
		if (!slot_used(l, s)) {
			slot_set(l, s, true);
			l->slot_next = (s + 1) % BM_MOVED_SLOTS;
			return s;
		}
	}
	return BM_SLOT_NONE;
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
	m.cgid = cg->id;
	m.first_win = m.last_win = m.lvl_win = start_ns / window_ns;
	if (thresh)
		memcpy(m.thresh, thresh, sizeof(m.thresh));
	/* a guest's meters are marked nowhere: the owner hands out the slots */
	m.slot = l->guest ? BM_SLOT_NONE : slot_alloc(l);
	m.ring = l->ring_slot;
	if (m.slot != BM_SLOT_NONE) {
		l->marks->moved[m.slot] = 0;
		l->marks->watch[m.slot] = 0;
	}
	fd = meter_map(l, cg, &key);
	if (bpf_map_update_elem(fd, key, &m, BPF_NOEXIST)) {
		slot_set(l, m.slot, false);
		return -errno;
	}
	return 0;
}

void bm_loader__claim(struct bm_loader *l, uint32_t slot)
{
	slot_set(l, slot, true);
}

const volatile uint8_t *bm_loader__marks(const struct bm_loader *l)
{
	return l->marks->moved;
}

void bm_loader__unmark(struct bm_loader *l, uint32_t slot)
{
	if (slot < BM_MOVED_SLOTS && l->marks->moved[slot])
		l->marks->moved[slot] = 0;
}

void bm_loader__watch(struct bm_loader *l, uint32_t slot, uint64_t until_win)
{
	/* a full barrier: a stop (0) is seen before the ladder's next read of the meter */
	if (slot < BM_MOVED_SLOTS && !l->guest)
		__atomic_store_n(&l->marks->watch[slot], until_win, __ATOMIC_SEQ_CST);
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

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/*
 * Forget the mms charged to cgroups whose meters went (their teardown
 * happened out of their sight). The map holds an entry per live mm of every
 * effect, so it is read in batches (a few syscalls), once for all the
 * meters gone since the last pass: a pass per ended effect made 10,000
 * ending at once read 10,000 entries each.
 */
void bm_loader__forget_stale(struct bm_loader *l)
{
	enum { BATCH = 1024 };
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	uint64_t *keys, *stale = NULL, *p, in, out;
	struct bm_mm_state *vals;
	size_t n = 0, cap = 0, i;
	bool short_of_memory = false;
	uint32_t count;
	void *from = NULL;
	int fd = l->fd[M_MM], err;

	if (!l->n_stale)
		return;
	qsort(l->stale, l->n_stale, sizeof(*l->stale), cmp_u64);
	keys = malloc(BATCH * sizeof(*keys));
	vals = malloc(BATCH * sizeof(*vals));
	err = short_of_memory = !keys || !vals;
	while (!err) {
		count = BATCH;
		err = bpf_map_lookup_batch(fd, from, &out, keys, vals, &count, &opts);
		if (err && errno != ENOENT)
			count = 0;
		for (i = 0; i < count; i++) {
			if (!bsearch(&vals[i].cgid, l->stale, l->n_stale, sizeof(*l->stale), cmp_u64))
				continue;
			/* deleted once the walk is done: deleting under it would skip entries */
			if (n == cap) {
				p = realloc(stale, (cap ? 2 * cap : 256) * sizeof(*p));
				short_of_memory |= !p;
				if (!p)
					break;
				stale = p;
				cap = cap ? 2 * cap : 256;
			}
			stale[n++] = keys[i];
		}
		in = out;
		from = &in;
	}
	free(keys);
	free(vals);
	for (i = 0; i < n; i++)
		(void)bpf_map_delete_elem(fd, &stale[i]);
	free(stale);
	/* short of memory, some were not taken: the next pass looks for them again */
	if (!short_of_memory)
		l->n_stale = 0;
}

/*
 * A pass walks every live mm of every effect: one a tick while 10,000
 * effects ended was 5 % of the agent's CPU in the drain. Their mms wait
 * instead, a second at most, or until STALE_BATCH meters have gone: a pass
 * for each batch, and the map (65,536 entries) keeps room.
 */
#define STALE_BATCH 256
#define STALE_WAIT_NS BM_NSEC_PER_SEC

void bm_loader__tend_stale(struct bm_loader *l)
{
	if (l->n_stale >= STALE_BATCH || (l->n_stale && bm_now_ns() - l->stale_since_ns >= STALE_WAIT_NS))
		bm_loader__forget_stale(l);
}

static void drop_mms(struct bm_loader *l, uint64_t cgid)
{
	uint64_t *p;

	if (l->n_stale == l->cap_stale) {
		p = realloc(l->stale, (l->cap_stale ? 2 * l->cap_stale : 64) * sizeof(*p));
		if (!p) {
			/* no room to grow: forget the waiting ones now, which makes room (none yet: lost) */
			bm_loader__forget_stale(l);
			if (!l->cap_stale)
				return;
		} else {
			l->stale = p;
			l->cap_stale = l->cap_stale ? 2 * l->cap_stale : 64;
		}
	}
	if (!l->n_stale)
		l->stale_since_ns = bm_now_ns();
	l->stale[l->n_stale++] = cgid;
}

int bm_loader__del(struct bm_loader *l, const struct bm_cgroup *cg)
{
	const void *key;
	int fd = meter_map(l, cg, &key), err = 0;
	struct bm_meter m;

	if (!bpf_map_lookup_elem(fd, key, &m))
		slot_set(l, m.slot, false);
	if (bpf_map_delete_elem(fd, key))
		err = -errno;
	drop_mms(l, cg->id);
	return err;
}

int bm_loader__stats(struct bm_loader *l, uint64_t out[BM_STAT__MAX])
{
	int ncpu = libbpf_num_possible_cpus(), fd = l->fd[M_STATS];
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

int bm_loader__consume(struct bm_loader *l)
{
	return ring_buffer__consume(l->rb);
}

int bm_loader__alias(struct bm_loader *l, uint64_t v1_cgid, uint64_t v2_cgid)
{
	if (!l->feat.io_alias)
		return -EOPNOTSUPP;
	if (!v2_cgid)
		return bpf_map_delete_elem(l->fd[M_BLKALIAS], &v1_cgid) && errno != ENOENT ? -errno : 0;
	return bpf_map_update_elem(l->fd[M_BLKALIAS], &v1_cgid, &v2_cgid, 0) ? -errno : 0;
}

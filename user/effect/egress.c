// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <linux/types.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/common.h"
#include "bm_egress.h"
#include "effect/egress.h"
#include "egress.skel.h"

struct bm_egress {
	struct bm_egress_bpf *skel;
};

struct bm_egress *bm_egress__open(void)
{
	struct bm_egress *eg = calloc(1, sizeof(*eg));
	int err;

	if (!eg)
		return NULL;
	eg->skel = bm_egress_bpf__open_and_load();
	if (!eg->skel) {
		err = errno;
		free(eg);
		errno = err;
		return NULL;
	}
	return eg;
}

static void key_of(uint64_t cgid, const struct bm_cidr *c, struct bm_egress_key *k)
{
	memset(k, 0, sizeof(*k));
	memcpy(k->data, &cgid, 8);
	if (c->family == AF_INET) {
		k->prefixlen = BM_EGRESS_V4_BITS + c->prefix;
		k->data[18] = 0xff;
		k->data[19] = 0xff;
		memcpy(k->data + 20, c->addr, 4);
	} else {
		k->prefixlen = BM_EGRESS_ID_BITS + c->prefix;
		memcpy(k->data + 8, c->addr, 16);
	}
}

void bm_egress__forget(struct bm_egress *eg, uint64_t cgid, const struct bm_cidr *cidrs, unsigned int n)
{
	struct bm_egress_key k;
	unsigned int i;

	for (i = 0; eg && i < n; i++) {
		key_of(cgid, &cidrs[i], &k);
		bpf_map_delete_elem(bpf_map__fd(eg->skel->maps.bm_egress), &k);
	}
}

int bm_egress__apply(struct bm_egress *eg, int cgroup_fd, uint64_t cgid, const struct bm_cidr *cidrs,
		     unsigned int n)
{
	struct bm_egress_key k;
	unsigned int i, h;
	__u8 one = 1;
	int err = 0;

	if (!eg)
		return -ENOENT;
	/* each program and where it goes */
	const struct {
		struct bpf_program *prog;
		enum bpf_attach_type type;
	} hooks[] = {
		{ eg->skel->progs.bm_connect4, BPF_CGROUP_INET4_CONNECT },
		{ eg->skel->progs.bm_connect6, BPF_CGROUP_INET6_CONNECT },
		{ eg->skel->progs.bm_sendmsg4, BPF_CGROUP_UDP4_SENDMSG },
		{ eg->skel->progs.bm_sendmsg6, BPF_CGROUP_UDP6_SENDMSG },
		{ eg->skel->progs.bm_egress_allow, BPF_CGROUP_INET_EGRESS },
	};

	for (i = 0; i < n && !err; i++) {
		key_of(cgid, &cidrs[i], &k);
		/* two CIDRs of a request may be the same: the second is no error */
		if (bpf_map_update_elem(bpf_map__fd(eg->skel->maps.bm_egress), &k, &one, BPF_ANY))
			err = -errno;
	}
	/* the cgroup's removal detaches them all */
	for (h = 0; h < BM_ARRAY_SIZE(hooks) && !err; h++)
		if (bpf_prog_attach(bpf_program__fd(hooks[h].prog), cgroup_fd, hooks[h].type, BPF_F_ALLOW_MULTI))
			err = -errno;
	if (err)
		bm_egress__forget(eg, cgid, cidrs, i);
	return err;
}

void bm_egress__free(struct bm_egress *eg)
{
	if (!eg)
		return;
	bm_egress_bpf__destroy(eg->skel);
	free(eg);
}

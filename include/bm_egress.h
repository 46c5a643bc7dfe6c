/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The egress allow-list's key, shared by bpf/egress.bpf.c and user/effect/egress.c.
 * An LPM trie compares data from its first bit: the socket's cgroup id (all
 * 64 bits always in the prefix), then the destination as an IPv6 address
 * (IPv4 as ::ffff:a.b.c.d), so one trie serves every effect and family.
 */
#ifndef BM_EGRESS_H
#define BM_EGRESS_H

#define BM_EGRESS_MAX 16384		/* allow-list entries, all effects together */
#define BM_EGRESS_ID_BITS 64
#define BM_EGRESS_V4_BITS (BM_EGRESS_ID_BITS + 96)	/* a v4 prefix adds to this */

struct bm_egress_key {
	__u32 prefixlen;
	__u8 data[24];		/* cgroup id (native byte order), then the address */
};

#endif /* BM_EGRESS_H */

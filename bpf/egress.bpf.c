// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Egress for effects whose request says network_policy egress_restricted
 * (their own host: 127.0.0.1 and ::1) or egress_allow_list (that, and
 * sandbox.allowed_egress_cidrs), attached (multi) to those effects' cgroups
 * only. connect() and an unconnected UDP sendto() to anywhere else fail at
 * once with EPERM (cgroup/connect4, connect6, sendmsg4, sendmsg6); every
 * other IP packet leaving a socket of the cgroup (ICMP echo sockets, raw
 * sockets) is checked once more on its way out and dropped (cgroup_skb).
 */
#include "vmlinux.h"
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "bm_egress.h"

#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define IP_DADDR 16		/* offsetof(struct iphdr, daddr) */
#define IP6_DADDR 24		/* offsetof(struct ipv6hdr, daddr) */

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, BM_EGRESS_MAX);
	__type(key, struct bm_egress_key);
	__type(value, __u8);
} bm_egress SEC(".maps");

/* Allowed: its own host, or an entry of the cgroup id for the address (IPv6 form) in k. */
static __always_inline int allowed(struct bm_egress_key *k)
{
	__u32 i, low = 0;

	for (i = 8; i < 18; i++)
		low |= k->data[i];
	/* ::1, and 127.0.0.1 as ::ffff:127.0.0.1 */
	if (!low && !k->data[18] && !k->data[19] && !k->data[20] && !k->data[21] && !k->data[22] &&
	    k->data[23] == 1)
		return 1;
	if (!low && k->data[18] == 0xff && k->data[19] == 0xff && k->data[20] == 127 && !k->data[21] &&
	    !k->data[22] && k->data[23] == 1)
		return 1;
	return bpf_map_lookup_elem(&bm_egress, k) ? 1 : 0;
}

static __always_inline void key_id(struct bm_egress_key *k, __u64 id)
{
	k->prefixlen = BM_EGRESS_ID_BITS + 128;
	__builtin_memcpy(k->data, &id, 8);
}

static __always_inline int allow4(__u64 id, __u32 daddr)
{
	struct bm_egress_key k = {};

	key_id(&k, id);
	k.data[18] = 0xff;
	k.data[19] = 0xff;
	__builtin_memcpy(k.data + 20, &daddr, 4);
	return allowed(&k);
}

static __always_inline int allow6(__u64 id, struct bpf_sock_addr *ctx)
{
	struct bm_egress_key k = {};
	__u32 w[4] = { ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3] };

	key_id(&k, id);
	__builtin_memcpy(k.data + 8, w, 16);
	return allowed(&k);
}

SEC("cgroup/connect4")
int bm_connect4(struct bpf_sock_addr *ctx)
{
	return allow4(bpf_get_current_cgroup_id(), ctx->user_ip4);
}

SEC("cgroup/sendmsg4")
int bm_sendmsg4(struct bpf_sock_addr *ctx)
{
	return allow4(bpf_get_current_cgroup_id(), ctx->user_ip4);
}

SEC("cgroup/connect6")
int bm_connect6(struct bpf_sock_addr *ctx)
{
	return allow6(bpf_get_current_cgroup_id(), ctx);
}

SEC("cgroup/sendmsg6")
int bm_sendmsg6(struct bpf_sock_addr *ctx)
{
	return allow6(bpf_get_current_cgroup_id(), ctx);
}

SEC("cgroup_skb/egress")
int bm_egress_allow(struct __sk_buff *skb)
{
	struct bm_egress_key k = {};
	__u32 v4;

	if (skb->protocol == bpf_htons(ETH_P_IP))
		return !bpf_skb_load_bytes(skb, IP_DADDR, &v4, 4) && allow4(bpf_skb_cgroup_id(skb), v4);
	if (skb->protocol != bpf_htons(ETH_P_IPV6))
		return 1;
	key_id(&k, bpf_skb_cgroup_id(skb));
	return !bpf_skb_load_bytes(skb, IP6_DADDR, k.data + 8, 16) && allowed(&k);
}

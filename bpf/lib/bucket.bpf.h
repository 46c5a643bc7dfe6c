/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The histogram bucket of a window value. Plain C with no BPF helper, so
 * the unit tests compile this very function and hold it to the userspace
 * one (user/meter/window.c) for every bit length.
 */
#ifndef BM_BUCKET_BPF_H
#define BM_BUCKET_BPF_H

/*
 * The compiler sees (C - v) >> 63 for "v > C" and turns it back into a
 * compare and branch (BPF has no conditional move): 2^7 paths per bucket
 * for the verifier, and the index is precise, so none prune. Constants
 * laundered through an empty asm are unknown to it: it cannot tell the
 * shift from a compare, and the code stays a straight line.
 */
#define BM_OPAQUE(x) asm volatile("" : "+r"(x))

/*
 * Bit length of v (0 for 0, k for [2^(k-1), 2^k)), without branches, so
 * that each call adds no paths for the verifier. Values from 2^62 up
 * saturate into the top bucket (62); below that, (x - v) >> 63 is 1 exactly
 * when v > x.
 */
static inline __attribute__((always_inline)) __u32 bm_bucket(__u64 v)
{
	__u64 r, s, nz, c62 = 62, top = (1ULL << 62) - 1, c32 = 0xFFFFFFFFULL, c16 = 0xFFFFULL,
	      c8 = 0xFFULL, c4 = 0xFULL, c2 = 0x3ULL, zero = 0;

	BM_OPAQUE(c62);
	BM_OPAQUE(top);
	BM_OPAQUE(c32);
	BM_OPAQUE(c16);
	BM_OPAQUE(c8);
	BM_OPAQUE(c4);
	BM_OPAQUE(c2);
	BM_OPAQUE(zero);
	v |= zero - ((zero - (v >> c62)) >> 63);	/* all ones from 2^62 up */
	v &= top;
	nz = (zero - v) >> 63;
	v |= 1;
	r = ((c32 - v) >> 63) << 5;
	v >>= r;
	s = ((c16 - v) >> 63) << 4;
	v >>= s;
	r |= s;
	s = ((c8 - v) >> 63) << 3;
	v >>= s;
	r |= s;
	s = ((c4 - v) >> 63) << 2;
	v >>= s;
	r |= s;
	s = ((c2 - v) >> 63) << 1;
	v >>= s;
	r |= s;
	r |= v >> 1;
	return (__u32)(r + nz) & (BM_HIST_BUCKETS - 1);
}

#endif /* BM_BUCKET_BPF_H */

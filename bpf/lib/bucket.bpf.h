/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The histogram bucket of a window value. Plain C with no BPF helper, so
 * the unit tests compile this very function and hold it to the userspace
 * one (user/meter/window.c) for every bit length.
 */
#ifndef BM_BUCKET_BPF_H
#define BM_BUCKET_BPF_H

/*
 * Bit length of v (0 for 0, k for [2^(k-1), 2^k)), without branches, so
 * that each call adds no paths for the verifier. Values from 2^62 up
 * saturate into the top bucket (62); below that, (x - v) >> 63 is 1 exactly
 * when v > x.
 */
static inline __attribute__((always_inline)) __u32 bm_bucket(__u64 v)
{
	__u64 r, s, nz;

	v |= 0 - ((0 - (v >> 62)) >> 63);	/* all ones from 2^62 up */
	v &= (1ULL << 62) - 1;
	nz = (0 - v) >> 63;
	v |= 1;
	r = ((0xFFFFFFFFULL - v) >> 63) << 5;
	v >>= r;
	s = ((0xFFFFULL - v) >> 63) << 4;
	v >>= s;
	r |= s;
	s = ((0xFFULL - v) >> 63) << 3;
	v >>= s;
	r |= s;
	s = ((0xFULL - v) >> 63) << 2;
	v >>= s;
	r |= s;
	s = ((0x3ULL - v) >> 63) << 1;
	v >>= s;
	r |= s;
	r |= v >> 1;
	return (__u32)(r + nz) & (BM_HIST_BUCKETS - 1);
}

#endif /* BM_BUCKET_BPF_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * CO-RE shims for what differs between the kernels burstmeter loads on.
 * Each shim probes the type it needs; none compares kernel versions.
 */
#ifndef BM_CORE_COMPAT_BPF_H
#define BM_CORE_COMPAT_BPF_H

/*
 * Up to 6.1 the mm's resident counters are atomics in struct mm_rss_stat;
 * f1a7941243c1 ("mm: convert mm's rss stats into percpu_counter", 6.2)
 * made them percpu_counters. Either way we read the central count, which
 * is what the rss_stat tracepoint itself reports: it trails the truth by at
 * most the per-CPU batch of each CPU the mm ran on (6.1: 64 events a thread).
 */
struct mm_rss_stat___old {
	atomic_long_t count[4];
} __attribute__((preserve_access_index));

struct mm_struct___old {
	struct mm_rss_stat___old rss_stat;
} __attribute__((preserve_access_index));

/*
 * BPF_CORE_READ(), not direct loads: with direct loads 6.1 refused bm_rss
 * (EINVAL), the newer flavour's relocation, which has no target there,
 * being the invalid instruction libbpf puts in its place, and reachable.
 * The probe reads keep each flavour inside its branch.
 */
static __always_inline __s64 bm_mm_counter(struct mm_struct *mm, int member)
{
	if (bpf_core_type_exists(struct mm_rss_stat___old)) {
		struct mm_struct___old *old = (void *)mm;

		return BPF_CORE_READ(old, rss_stat.count[member].counter);
	}
	return BPF_CORE_READ(mm, rss_stat[member].count);
}

/* Resident pages of an mm: file + anon + shmem (swap entries are not resident). */
static __always_inline __s64 bm_mm_resident_pages(struct mm_struct *mm)
{
	return bm_mm_counter(mm, MM_FILEPAGES) + bm_mm_counter(mm, MM_ANONPAGES) +
	       bm_mm_counter(mm, MM_SHMEMPAGES);
}

#endif /* BM_CORE_COMPAT_BPF_H */

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The floor of the kernel-cost bench: a tp_btf/sched_switch program that does
 * nothing. Its ns/run is what any program on this tracepoint pays before doing
 * work (the trampoline into BPF, plus bpf_stats' own clock reads).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(bench_empty, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}

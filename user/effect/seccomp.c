// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "base/common.h"
#include "effect/seccomp.h"

#ifndef CLONE_NEWUSER
#define CLONE_NEWUSER 0x10000000
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif

/* The native ABI's and the compat ABI's numbers (x32 shares x86_64's, with bit 30 set). */
#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#define COMPAT_ARCH AUDIT_ARCH_I386
#define COMPAT_UNSHARE 310
#define COMPAT_CLONE 120
#define COMPAT_SETNS 346
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#define COMPAT_ARCH AUDIT_ARCH_ARM
#define COMPAT_UNSHARE 337
#define COMPAT_CLONE 120
#define COMPAT_SETNS 375
#endif
#define COMPAT_CLONE3 435
#define X32_BIT 0x40000000u

/* Both ABIs are little-endian: the low word of the first argument (the flags of both calls). */
#define ARG0_LO offsetof(struct seccomp_data, args[0])

#define LD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))

/* One ABI's rules: 11 instructions, jumps relative within them. */
#define BLOCK(unshare_nr, clone_nr, clone3_nr, setns_nr)                                \
	LD(offsetof(struct seccomp_data, nr)),                                          \
	BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~X32_BIT),                                  \
	JEQ((clone3_nr), 7, 0),                                                         \
	JEQ((setns_nr), 5, 0),                                                          \
	JEQ((unshare_nr), 1, 0),                                                        \
	JEQ((clone_nr), 0, 2),                                                          \
	LD(ARG0_LO),                                                                    \
	BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 1, 0),                      \
	RET(SECCOMP_RET_ALLOW),                                                         \
	RET(SECCOMP_RET_ERRNO | EPERM),                                                 \
	RET(SECCOMP_RET_ERRNO | ENOSYS)

int bm_seccomp_no_userns(void)
{
#ifdef NATIVE_ARCH
	struct sock_filter f[] = {
		LD(offsetof(struct seccomp_data, arch)),
		JEQ(NATIVE_ARCH, 2, 0),
		JEQ(COMPAT_ARCH, 12, 0),
		RET(SECCOMP_RET_KILL_PROCESS),
		BLOCK(__NR_unshare, __NR_clone, __NR_clone3, __NR_setns),
		BLOCK(COMPAT_UNSHARE, COMPAT_CLONE, COMPAT_CLONE3, COMPAT_SETNS),
	};
	struct sock_fprog prog = { .len = BM_ARRAY_SIZE(f), .filter = f };

	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0 ? -errno : 0;
#else
	return -EOPNOTSUPP;
#endif
}

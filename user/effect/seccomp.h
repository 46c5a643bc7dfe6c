/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * No user namespace for a command without capabilities: in one of its own
 * a process holds every capability over that namespace's objects, so an
 * emptied set would be one unshare(CLONE_NEWUSER) from full again.
 */
#ifndef BM_SECCOMP_H
#define BM_SECCOMP_H

/*
 * Install (no_new_privs set already) a seccomp filter that refuses, for
 * this process and all it starts: unshare() and clone() with CLONE_NEWUSER
 * (EPERM); clone3() (ENOSYS: its flags are behind a pointer a filter
 * cannot read, and glibc falls back to clone() on ENOSYS, as container
 * runtimes have it); setns() (EPERM: a capability-less process joins only
 * namespaces of a user namespace its uid owns). A syscall of another ABI
 * kills the process. 0, or -errno (-EOPNOTSUPP: an architecture without a
 * table here).
 */
int bm_seccomp_no_userns(void);

#endif /* BM_SECCOMP_H */

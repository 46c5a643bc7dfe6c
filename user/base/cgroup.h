/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cgroup handling: where cgroup v2 is, which cgroup we are in, and the
 * effect cgroups we create under it. Hybrid hosts (v2 at .../unified beside
 * v1 controllers) and pure v2 hosts are both supported; paths are
 * arguments so that tests can point the readers at fixture trees.
 */
#ifndef BM_CGROUP_H
#define BM_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum bm_cg_mode { BM_CG_V2, BM_CG_HYBRID };

/* The v1 controllers a hybrid host may give us ceilings from. */
enum bm_v1 { BM_V1_MEMORY, BM_V1_PIDS, BM_V1_CPU, BM_V1_BLKIO, BM_V1_CPUSET, BM_V1__MAX };

struct bm_cgroup_env {
	enum bm_cg_mode mode;
	char v2_mount[PATH_MAX];	/* e.g. /sys/fs/cgroup or /sys/fs/cgroup/unified */
	char v2_self[PATH_MAX];		/* our cgroup, relative to v2_mount ("/" at the root) */
	char v1_mount[BM_V1__MAX][PATH_MAX];	/* "" where the controller is not on v1 */
	char v1_self[BM_V1__MAX][PATH_MAX];
};

/*
 * Fill env from a mountinfo file and a /proc/PID/cgroup file.
 * Returns 0, -ENOENT if cgroup v2 is not mounted, -EINVAL on a file we
 * cannot make sense of, or -errno from reading.
 */
int bm_cgroup_env_detect(const char *mountinfo, const char *self_cgroup, struct bm_cgroup_env *env);

/* Our own v2 cgroup directory (v2_mount + v2_self) into buf. */
int bm_cgroup_env_self_dir(const struct bm_cgroup_env *env, char *buf, size_t len);

struct bm_cgroup {
	char *path;		/* in the same allocation (bm_cgroup__create/open): sized to it */
	int dirfd;		/* O_DIRECTORY fd: CLONE_INTO_CGROUP, cgroup storage key */
	uint64_t id;		/* kernfs id, as bpf_get_current_cgroup_id() sees it */
};

/*
 * Create the child cgroup parent_dir/name (it must not exist). Returns NULL
 * and sets errno (EEXIST: an effect with that name is running).
 */
struct bm_cgroup *bm_cgroup__create(const char *parent_dir, const char *name);
/* Open an existing cgroup directory (an effect re-adopted after a restart). NULL + errno. */
struct bm_cgroup *bm_cgroup__open(const char *path);
/* Kill every task in the cgroup: cgroup.kill (5.14+), else SIGKILL through cgroup.procs. */
int bm_cgroup__kill(struct bm_cgroup *cg);
/* Send sig to every process cgroup.procs lists. Returns how many got it, or -errno. */
int bm_cgroup__signal(struct bm_cgroup *cg, int sig);
/* 1 if any task is in the cgroup, 0 if none, -errno. */
int bm_cgroup__populated(struct bm_cgroup *cg);
/* Wait until empty or timeout_ms passes. Returns 0, -ETIMEDOUT or -errno. */
int bm_cgroup__wait_empty(struct bm_cgroup *cg, int timeout_ms);
/* Freeze (true) or thaw (false) through cgroup.freeze. */
int bm_cgroup__freeze(struct bm_cgroup *cg, bool frozen);
/* Read "key value" (cpu.stat) or "some ... total=N" (pressure files, key "some"/"full"). */
int bm_cgroup__read_key(struct bm_cgroup *cg, const char *file, const char *key, uint64_t *out);
/* Remove the (empty) cgroup directory; retries (~1 s) while dying tasks still hold it. */
int bm_cgroup__remove(struct bm_cgroup *cg);
/* One rmdir, never waiting: 0 (removed, or gone), -EBUSY (still held) or -errno. */
int bm_cgroup__remove_try(struct bm_cgroup *cg);
/* Close fds and free; does not remove the directory. NULL-safe. */
void bm_cgroup__free(struct bm_cgroup *cg);

/* The cgroup v2 id of a directory (what bpf_get_current_cgroup_id() returns). */
int bm_cgroup_id(int dirfd, uint64_t *id);

/*
 * clone3(CLONE_PIDFD | flags) like fork(), the child born in the cgroup of
 * cgroup_fd (CLONE_INTO_CGROUP; -1: ours): no migration, so none of the
 * RCU grace period a write to cgroup.procs waits for (~10-15 ms). The
 * child's pidfd in *pidfd. Returns as fork() does (-1 and errno).
 */
long bm_clone_into(int cgroup_fd, uint64_t flags, int *pidfd);

/* Is pid's v2 cgroup (its "0::" line) the directory path, under v2_mount? */
bool bm_cgroup_has_pid(const char *v2_mount, const char *path, pid_t pid);

#endif /* BM_CGROUP_H */

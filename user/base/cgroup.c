// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/cgroup.h"
#include "base/common.h"
#include "base/mountinfo.h"

static const char *const v1_names[BM_V1__MAX] = { "memory", "pids", "cpu", "blkio", "cpuset" };

/* The path of dir inside a mount whose root is mroot: "/a/b" under root "/a" is "/b". */
static int strip_root(const char *mroot, const char *path, char *out, size_t len)
{
	size_t n = strlen(mroot);

	if (!strcmp(mroot, "/"))
		n = 0;
	else if (strncmp(path, mroot, n) || (path[n] != '/' && path[n] != '\0'))
		return -EINVAL;	/* our cgroup is outside what is mounted */
	snprintf(out, len, "%s", path[n] ? path + n : "/");
	return 0;
}

static int parse_mountinfo(const char *file, struct bm_cgroup_env *env, char v2_root[PATH_MAX],
			   char v1_root[BM_V1__MAX][PATH_MAX])
{
	struct bm_cg_mounts *t = malloc(sizeof(*t));
	unsigned int k;
	int i, err;

	if (!t)
		return -ENOMEM;
	err = bm_cg_mounts_read(file, t);
	for (k = 0; !err && k < t->n; k++) {
		const struct bm_cg_mount *m = &t->m[k];

		if (m->v2 && !env->v2_mount[0]) {
			snprintf(env->v2_mount, sizeof(env->v2_mount), "%s", m->mnt);
			snprintf(v2_root, PATH_MAX, "%s", m->root);
		}
		for (i = 0; !m->v2 && i < BM_V1__MAX; i++) {
			if (bm_has_word(m->opts, v1_names[i]) && !env->v1_mount[i][0]) {
				snprintf(env->v1_mount[i], PATH_MAX, "%s", m->mnt);
				snprintf(v1_root[i], PATH_MAX, "%s", m->root);
			}
		}
	}
	free(t);
	if (err)
		return err;
	return env->v2_mount[0] ? 0 : -ENOENT;
}

int bm_cgroup_env_detect(const char *mountinfo, const char *self_cgroup, struct bm_cgroup_env *env)
{
	char v2_root[PATH_MAX] = "", v1_root[BM_V1__MAX][PATH_MAX] = { "" };
	char line[4096], ctrls[512], path[PATH_MAX];
	bool have_v2 = false;
	FILE *f;
	int err, i;

	memset(env, 0, sizeof(*env));
	err = parse_mountinfo(mountinfo, env, v2_root, v1_root);
	if (err)
		return err;
	f = fopen(self_cgroup, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *c1, *c2;

		/* "ID:CONTROLLERS:PATH"; the path is the rest of the line, spaces and all */
		line[strcspn(line, "\n")] = '\0';
		c1 = strchr(line, ':');
		c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2 || c2[1] != '/' || c1 == line || strspn(line, "0123456789") != (size_t)(c1 - line))
			continue;
		snprintf(ctrls, sizeof(ctrls), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
		snprintf(path, sizeof(path), "%s", c2 + 1);
		if (!ctrls[0]) {
			err = strip_root(v2_root, path, env->v2_self, sizeof(env->v2_self));
			have_v2 = !err;
			continue;
		}
		for (i = 0; i < BM_V1__MAX; i++)
			if (env->v1_mount[i][0] && bm_has_word(ctrls, v1_names[i]) &&
			    strip_root(v1_root[i], path, env->v1_self[i], PATH_MAX))
				env->v1_mount[i][0] = '\0';
	}
	fclose(f);
	if (!have_v2)
		return -EINVAL;
	env->mode = BM_CG_V2;
	for (i = 0; i < BM_V1__MAX; i++)
		if (env->v1_mount[i][0])
			env->mode = BM_CG_HYBRID;
	return 0;
}

int bm_cgroup_env_self_dir(const struct bm_cgroup_env *env, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s%s", env->v2_mount, strcmp(env->v2_self, "/") ? env->v2_self : "");

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int bm_cgroup_id(int dirfd, uint64_t *id)
{
	struct {
		struct file_handle fh;
		uint64_t cgid;
	} h = { .fh.handle_bytes = sizeof(uint64_t) };
	int mount_id;

	if (name_to_handle_at(dirfd, "", &h.fh, &mount_id, AT_EMPTY_PATH) < 0)
		return -errno;
	*id = h.cgid;
	return 0;
}

/* Open the directory at cg->path (made or found) and learn its id. */
static int open_dir(struct bm_cgroup *cg)
{
	cg->dirfd = open(cg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->dirfd < 0)
		return -errno;
	/* a cgroup v2 directory (not its root): cgroup.events is there */
	if (faccessat(cg->dirfd, "cgroup.events", F_OK, 0) < 0)
		return -errno;
	return bm_cgroup_id(cg->dirfd, &cg->id);
}

/* A cgroup of that path, its fd not open yet; NULL + errno. */
static struct bm_cgroup *cg_alloc(const char *path)
{
	size_t len = strlen(path);
	struct bm_cgroup *cg;

	if (len >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	cg = calloc(1, sizeof(*cg) + len + 1);
	if (!cg)
		return NULL;
	cg->path = (char *)(cg + 1);
	memcpy(cg->path, path, len + 1);
	cg->dirfd = -1;
	return cg;
}

struct bm_cgroup *bm_cgroup__open(const char *path)
{
	struct bm_cgroup *cg = cg_alloc(path);
	int err;

	if (!cg)
		return NULL;
	err = open_dir(cg);
	if (err) {
		bm_cgroup__free(cg);
		errno = -err;
		return NULL;
	}
	return cg;
}

struct bm_cgroup *bm_cgroup__create(const char *parent_dir, const char *name)
{
	char path[PATH_MAX];
	struct bm_cgroup *cg;
	int n, err;

	n = snprintf(path, sizeof(path), "%s/%s", parent_dir, name);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	cg = cg_alloc(path);
	if (!cg)
		return NULL;
	if (mkdir(cg->path, 0755) < 0) {
		err = -errno;
		goto err_free;
	}
	err = open_dir(cg);
	if (err)
		goto err_rmdir;
	return cg;

err_rmdir:
	(void)rmdir(cg->path);	/* empty, just made: what failed before is the error */
err_free:
	bm_cgroup__free(cg);
	errno = -err;
	return NULL;
}

int bm_cgroup__populated(struct bm_cgroup *cg)
{
	char buf[256], *p;
	int n;

	n = bm_read_file(cg->dirfd, "cgroup.events", buf, sizeof(buf));
	if (n < 0)
		return n;
	p = strstr(buf, "populated ");
	if (!p)
		return -EINVAL;
	return p[10] == '1';
}

int bm_cgroup__signal(struct bm_cgroup *cg, int sig)
{
	char buf[65536], *p, *end;
	int n, sent = 0;

	n = bm_read_file(cg->dirfd, "cgroup.procs", buf, sizeof(buf));
	if (n < 0)
		return n;
	for (p = buf; *p; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 0 && !kill((pid_t)pid, sig))
			sent++;
	}
	return sent;
}

/* Pre-5.14 kernels have no cgroup.kill: SIGKILL what cgroup.procs lists until nothing is left. */
static int kill_by_procs(struct bm_cgroup *cg)
{
	int round, n;

	for (round = 0; round < 100; round++) {
		n = bm_cgroup__signal(cg, SIGKILL);
		if (n <= 0)
			return n;
	}
	return -EAGAIN;
}

int bm_cgroup__kill(struct bm_cgroup *cg)
{
	int err = bm_write_file(cg->dirfd, "cgroup.kill", "1");

	if (err == -ENOENT)
		return kill_by_procs(cg);
	return err;
}

int bm_cgroup__wait_empty(struct bm_cgroup *cg, int timeout_ms)
{
	uint64_t deadline = bm_now_ns() + (uint64_t)timeout_ms * BM_NSEC_PER_MSEC;
	/* opened here, not held: an effect that is not ending costs no fd for it */
	struct pollfd pfd = { .fd = openat(cg->dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC), .events = POLLPRI };
	int ret;

	for (;;) {
		ret = bm_cgroup__populated(cg);
		if (ret <= 0)
			break;
		if (bm_now_ns() >= deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		/* cgroup.events raises POLLPRI on change; cap each wait in case we missed one */
		if (poll(&pfd, 1, 50) < 0 && errno != EINTR) {
			ret = -errno;
			break;
		}
	}
	if (pfd.fd >= 0)
		close(pfd.fd);
	return ret;
}

int bm_cgroup__freeze(struct bm_cgroup *cg, bool frozen)
{
	return bm_write_file(cg->dirfd, "cgroup.freeze", frozen ? "1" : "0");
}

int bm_cgroup__read_key(struct bm_cgroup *cg, const char *file, const char *key, uint64_t *out)
{
	char buf[4096], *line, *save = NULL;
	size_t klen = strlen(key);
	int n;

	n = bm_read_file(cg->dirfd, file, buf, sizeof(buf));
	if (n < 0)
		return n;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *total;

		if (strncmp(line, key, klen) || line[klen] != ' ')
			continue;
		total = strstr(line, "total=");
		*out = strtoull(total ? total + 6 : line + klen + 1, NULL, 10);
		return 0;
	}
	return -ENOENT;
}

int bm_cgroup__remove_try(struct bm_cgroup *cg)
{
	return !rmdir(cg->path) || errno == ENOENT ? 0 : -errno;
}

int bm_cgroup__remove(struct bm_cgroup *cg)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };
	int i, err = -EBUSY;

	/* a task that exited may hold the cgroup for a moment: retry for up to ~1 s */
	for (i = 0; i < 500 && err == -EBUSY; i++) {
		err = bm_cgroup__remove_try(cg);
		if (err == -EBUSY)
			nanosleep(&ts, NULL);
	}
	return err;
}

void bm_cgroup__free(struct bm_cgroup *cg)
{
	if (!cg)
		return;
	if (cg->dirfd >= 0)
		close(cg->dirfd);
	free(cg);
}

long bm_clone_into(int cgroup_fd, uint64_t flags, int *pidfd)
{
	struct clone_args args = { 0 };

	args.flags = flags | CLONE_PIDFD | (cgroup_fd >= 0 ? CLONE_INTO_CGROUP : 0);
	args.pidfd = (uint64_t)(uintptr_t)pidfd;
	args.exit_signal = SIGCHLD;
	args.cgroup = cgroup_fd >= 0 ? (uint64_t)cgroup_fd : 0;
	return syscall(SYS_clone3, &args, sizeof(args));
}

bool bm_cgroup_has_pid(const char *v2_mount, const char *path, pid_t pid)
{
	char file[64], buf[4096], *line, *save = NULL;
	size_t m = strlen(v2_mount);

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	if (bm_read_file(AT_FDCWD, file, buf, sizeof(buf)) < 0 || strncmp(path, v2_mount, m))
		return false;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, "0::", 3))
			return !strcmp(line + 3, path + m);
	return false;
}

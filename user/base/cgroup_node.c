// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cgroup_node.h"
#include "base/common.h"
#include "base/mountinfo.h"

static const char *const v1_names[BM_V1__MAX] = { "memory", "pids", "cpu", "blkio", "cpuset" };

bool bm_cgroup_valid_parent(const char *parent)
{
	const char *p = parent, *end;
	size_t n;

	if (p[0] != '/' || !p[1] || strlen(p) >= 256)
		return false;
	while (*p == '/') {
		p++;
		end = strchrnul(p, '/');
		n = (size_t)(end - p);
		if (!n || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p = end;
	}
	return true;
}

int bm_cgroup_env_node(const char *mountinfo, const char *parent, struct bm_cgroup_env *env)
{
	struct bm_cg_mounts *t;
	bool subtree = false;
	unsigned int k;
	int i, err;

	memset(env, 0, sizeof(*env));
	if (!bm_cgroup_valid_parent(parent))
		return -EINVAL;
	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	err = bm_cg_mounts_read(mountinfo, t);
	for (k = 0; !err && k < t->n; k++) {
		const struct bm_cg_mount *m = &t->m[k];
		bool top = bm_cg_root_is_top(m->root);

		subtree |= m->v2 && !top;
		if (m->v2 && top && !env->v2_mount[0])
			snprintf(env->v2_mount, sizeof(env->v2_mount), "%s", m->mnt);
		for (i = 0; !m->v2 && top && i < BM_V1__MAX; i++)
			if (bm_has_word(m->opts, v1_names[i]) && !env->v1_mount[i][0])
				snprintf(env->v1_mount[i], PATH_MAX, "%s", m->mnt);
	}
	free(t);
	if (err)
		return err;
	if (!env->v2_mount[0])
		return subtree ? -EXDEV : -ENOENT;
	env->mode = BM_CG_V2;
	snprintf(env->v2_self, sizeof(env->v2_self), "%s", parent);
	for (i = 0; i < BM_V1__MAX; i++) {
		if (!env->v1_mount[i][0])
			continue;
		env->mode = BM_CG_HYBRID;
		snprintf(env->v1_self[i], PATH_MAX, "%s", parent);
	}
	return 0;
}

/* The mount of hierarchy h (v2, or v1 with the first word of its name) that shows its top. */
static void find_top(const struct bm_cg_mounts *t, struct bm_cg_hier *h)
{
	char word[128];
	unsigned int k;

	snprintf(word, sizeof(word), "%.*s", (int)strcspn(h->name, ","), h->name);
	for (k = 0; k < t->n && !h->mount[0]; k++)
		if (t->m[k].v2 == h->v2 && bm_cg_root_is_top(t->m[k].root) &&
		    (h->v2 || bm_has_word(t->m[k].opts, word)))
			snprintf(h->mount, sizeof(h->mount), "%s", t->m[k].mnt);
}

int bm_cgroup_hierarchies(const char *mountinfo, const char *self_cgroup, struct bm_cg_hier *h,
			  int max)
{
	struct bm_cg_mounts *t = malloc(sizeof(*t));
	char line[4096];
	FILE *f = NULL;
	int n = 0, err;

	if (!t)
		return -ENOMEM;
	err = bm_cg_mounts_read(mountinfo, t);
	if (!err && !(f = fopen(self_cgroup, "re")))
		err = -errno;
	while (!err && n < max && fgets(line, sizeof(line), f)) {
		/* "ID:CONTROLLERS:PATH" */
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

		if (!c2 || c1 == line)
			continue;
		memset(&h[n], 0, sizeof(h[n]));
		snprintf(h[n].name, sizeof(h[n].name), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
		h[n].v2 = !h[n].name[0];
		find_top(t, &h[n]);
		n++;
	}
	if (f)
		fclose(f);
	free(t);
	return err ? err : n;
}

int bm_cgroup_cpuset_init(int parent_fd, int fd)
{
	static const char *const files[] = { "cpuset.cpus", "cpuset.mems" };
	char buf[4096];
	unsigned int i;
	int n;

	/* v2 (cgroup.controllers): an empty cpuset.cpus there means the parent's */
	if (!faccessat(fd, "cgroup.controllers", F_OK, 0))
		return 0;
	for (i = 0; i < BM_ARRAY_SIZE(files); i++) {
		n = bm_read_file(fd, files[i], buf, sizeof(buf));
		if (n < 0)
			return n == -ENOENT ? 0 : n;	/* not a v1 cpuset hierarchy */
		if (buf[0] && buf[0] != '\n')
			continue;
		n = bm_read_file(parent_fd, files[i], buf, sizeof(buf));
		if (n < 0)
			return n;
		n = bm_write_file(fd, files[i], buf);
		if (n)
			return n;
	}
	return 0;
}

int bm_cgroup_mkdirs(const char *mount, const char *rel)
{
	char path[PATH_MAX], *p;
	size_t base = strlen(mount);
	int err = 0, pfd, fd;

	if (rel[0] != '/' || snprintf(path, sizeof(path), "%s%s/", mount, rel) >= (int)sizeof(path))
		return -EINVAL;
	for (p = strchr(path + base + 1, '/'); p && !err; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(path, 0755) < 0) {
			err = errno == EEXIST ? 0 : -errno;
		} else {
			char *slash = strrchr(path, '/');

			*slash = '\0';
			pfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			*slash = '/';
			fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			err = pfd < 0 || fd < 0 ? -errno : bm_cgroup_cpuset_init(pfd, fd);
			if (pfd >= 0)
				close(pfd);
			if (fd >= 0)
				close(fd);
		}
		*p = '/';
	}
	return err;
}

int bm_cgroup_enter_leaf(const char *dir, const char *leaf)
{
	char buf[4096], path[PATH_MAX], *p, *end;
	int n, fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, leaf) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* a full buffer holds another pid than ours anyway */
	n = bm_read_file(fd, "cgroup.procs", buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return n;
	for (p = buf; *p; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid != getpid())
			return 0;
	}
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = bm_write_file(fd, "cgroup.procs", "0");
	close(fd);
	return n ? n : 1;
}

int bm_cgroup_leave_leaf(const char *dir, const char *leaf)
{
	char path[PATH_MAX], ctl[512], off[640] = "", *w, *save = NULL;
	struct dirent *de;
	size_t len = 0;
	int err = 0, n;
	DIR *d = opendir(dir);

	if (!d)
		return -errno;
	/* an effect's cgroup (or anyone's) would lose its ceilings with the controllers */
	while (!err && (de = readdir(d)))
		if (de->d_type == DT_DIR && strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, leaf))
			err = -EBUSY;
	closedir(d);
	if (err)
		return err;
	if (snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	n = bm_read_file(AT_FDCWD, path, ctl, sizeof(ctl));
	if (n < 0)
		return n;
	for (w = strtok_r(ctl, " \n", &save); w && len < sizeof(off); w = strtok_r(NULL, " \n", &save))
		len += (size_t)snprintf(off + len, sizeof(off) - len, "%s-%s", len ? " " : "", w);
	if (off[0] && (err = bm_write_file(AT_FDCWD, path, off)))
		return err;
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	return bm_write_file(AT_FDCWD, path, "0");
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/identity.h"
#include "agent/index.h"
#include "base/common.h"
#include "base/parse.h"
#include "base/podcgroup.h"
#include "effect/name.h"

/* A uid no user or group of this node has (nss included), so a tenant's files are its alone. */
static bool nobodys(uid_t uid)
{
	return !getpwuid(uid) && !getgrgid((gid_t)uid);
}

static int dynamic_uid(struct bm_agent *a, const char *tenant, uid_t *uid)
{
	int64_t v, top;
	uint64_t tries;
	int err;

	err = bm_store__tenant_uid(a->store, tenant, &v);
	if (!err) {
		*uid = (uid_t)v;
		return 0;
	}
	if (err != -ENOENT)
		return err;
	err = bm_store__tenant_uid_max(a->store, a->cfg.uid_min, a->cfg.uid_max, &top);
	if (err)
		return err;
	/* the next after the highest given; once at the top, the first free one from the bottom */
	v = top < 0 ? a->cfg.uid_min : top + 1;
	for (tries = 0; tries <= (uint64_t)a->cfg.uid_max - a->cfg.uid_min; tries++, v++) {
		if (v > a->cfg.uid_max)
			v = a->cfg.uid_min;
		if (!nobodys((uid_t)v))
			continue;
		err = bm_store__tenant_uid_put(a->store, tenant, v);
		if (!err) {
			bm_info("tenant %s runs as uid %lld from now on", tenant, (long long)v);
			*uid = (uid_t)v;
			return 0;
		}
		if (err != -EEXIST)
			return err;
	}
	return -ENOSPC;
}

int ag_run_as(struct bm_agent *a, const char *tenant, uid_t caller_uid, gid_t caller_gid,
	      bool non_root, uid_t *uid, gid_t *gid)
{
	char root_tenant[BM_NAME_MAX + 1];
	struct passwd *pw;
	unsigned int i;
	int err;

	if (caller_uid) {
		*uid = caller_uid;
		*gid = caller_gid;
		return 0;
	}
	bm_agent_cfg_tenant(&a->cfg, 0, root_tenant, sizeof(root_tenant));
	if (!strcmp(tenant, root_tenant) && !non_root) {
		*uid = 0;
		*gid = 0;
		return 0;
	}
	for (i = 0; i < a->cfg.n_tenants; i++) {
		if (a->cfg.tenants[i].uid && !strcmp(a->cfg.tenants[i].tenant, tenant)) {
			*uid = a->cfg.tenants[i].uid;
			pw = getpwuid(*uid);
			*gid = pw ? pw->pw_gid : (gid_t)*uid;
			return 0;
		}
	}
	err = dynamic_uid(a, tenant, uid);
	if (!err)
		*gid = (gid_t)*uid;
	return err;
}

struct ag_effect *ag_caller_effect(struct bm_agent *a, pid_t pid)
{
	char path[64], buf[4096], tenant[BM_NAME_MAX + 1], id[BM_NAME_MAX + 1], *line, *save = NULL;
	char *seg, *p;
	struct ag_effect *e;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return NULL;
	/* the v2 line, "0::/path"; every component named like an effect is looked up */
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::", 3))
			continue;
		for (seg = line + 3; seg; seg = p) {
			p = strchr(seg, '/');
			if (p)
				*p++ = '\0';
			if (bm_effect_name_split(seg, tenant, id) < 0)
				continue;
			e = ag_find(a, tenant, id);
			if (e && e->sup.cg)
				return e;
		}
	}
	return NULL;
}

/* tenant of pod uid in cfg.pod_tenants ("<uid> <tenant>" lines; # comments), else pod-<uid>. */
static void pod_tenant(const struct bm_agent *a, const char *uid, char *tenant, size_t len)
{
	char line[256], u[BM_POD_UID_MAX + 2], t[BM_NAME_MAX + 2];
	FILE *f = a->cfg.pod_tenants[0] ? fopen(a->cfg.pod_tenants, "re") : NULL;
	bool found = false;

	/* read at each call: a controller rewrites it as pods come and go */
	while (f && !found && fgets(line, sizeof(line), f))
		found = line[0] != '#' && sscanf(line, "%37s %65s", u, t) == 2 && !strcmp(u, uid) &&
			bm_valid_name(t);
	if (f)
		fclose(f);
	snprintf(tenant, len, found ? "%s" : "pod-%s", found ? t : uid);
}

int ag_caller_pod(struct bm_agent *a, pid_t pid, struct ag_pod *pod, char *tenant, size_t len)
{
	char path[64], buf[4096], *line, *save = NULL;
	struct bm_pod_cgroup pc;
	size_t rl = strlen(a->cfg.kubepods_root);
	int err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return -ESRCH;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::", 3))
			continue;
		err = bm_pod_cgroup_parse(line + 3, &pc);
		break;
	}
	if (err == -ENOENT || (!err && (pc.root_len != rl || strncmp(line + 3, a->cfg.kubepods_root, rl))))
		return -ENOENT;	/* a look-alike of the kubelet's tree under someone's own is no pod */
	if (err)
		/* malformed below the kubelet's root: a pod we cannot name; elsewhere: no pod */
		return line && !strncmp(line + 3, a->cfg.kubepods_root, rl) &&
		       strstr(line + 3 + rl, "kubepods") ? -EBADSLT : -ENOENT;
	memset(pod, 0, sizeof(*pod));
	snprintf(pod->uid, sizeof(pod->uid), "%s", pc.pod_uid);
	snprintf(pod->container, sizeof(pod->container), "%s", pc.container_id);
	snprintf(pod->qos, sizeof(pod->qos), "%s", bm_pod_qos_name(pc.qos));
	if (snprintf(pod->dir, sizeof(pod->dir), "%s%s", a->env.v2_mount, pc.pod_dir) >=
	    (int)sizeof(pod->dir))
		return -ENAMETOOLONG;
	pod_tenant(a, pod->uid, tenant, len);
	return 0;
}

/* The pids of pid's namespaces, outermost (ours) first, in nspid[]; how many, or -errno. */
static int ns_pids(pid_t pid, pid_t *nspid, int max)
{
	char path[64], buf[2048], *p, *end;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) < 0)
		return -ESRCH;
	p = strstr(buf, "\nNSpid:");
	if (!p)
		return -ENOSYS;
	for (p += 7; n < max; n++) {
		long v = strtol(p, &end, 10);

		if (end == p || v <= 0)
			break;
		nspid[n] = (pid_t)v;
		p = end;
	}
	return n;
}

#define PID_MAX_LIMIT 4194304	/* the kernel's on 64-bit: no tree holds more processes */

/* Append pid to the walk's queue, grown as needed; -ENOMEM, or -E2BIG past PID_MAX_LIMIT. */
static int walk_push(pid_t **q, size_t *len, size_t *cap, pid_t pid)
{
	if (*len == *cap) {
		size_t n = *cap ? *cap * 2 : 256;
		pid_t *p;

		if (*cap >= PID_MAX_LIMIT)
			return -E2BIG;
		p = realloc(*q, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		*q = p;
		*cap = n;
	}
	(*q)[(*len)++] = pid;
	return 0;
}

int ag_caller_pid(pid_t caller, pid_t pid, pid_t *out)
{
	pid_t *seen = NULL, ns[32];
	size_t head = 0, tail = 0, cap = 0;
	int level, n, err;

	n = ns_pids(caller, ns, 32);
	if (n <= 0)
		return n ? n : -ESRCH;
	if (n == 1) {
		*out = pid;	/* the caller sees our pids */
		return 0;
	}
	level = n - 1;
	/* breadth first through the caller's descendants, as their children files list them */
	err = walk_push(&seen, &tail, &cap, caller);
	while (!err && head < tail) {
		char path[96];
		pid_t at = seen[head++];
		DIR *d;
		struct dirent *de;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)at);
		d = opendir(path);
		while (!err && d && (de = readdir(d))) {
			FILE *f;
			long c;

			if (de->d_name[0] == '.' ||
			    snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)at, de->d_name) >=
				    (int)sizeof(path))
				continue;
			f = fopen(path, "re");	/* a stream: a children file has no size limit */
			while (f && !err && fscanf(f, "%ld", &c) == 1 && c > 0) {
				if (ns_pids((pid_t)c, ns, 32) > level && ns[level] == pid) {
					*out = (pid_t)c;
					err = 1;
				} else {
					err = walk_push(&seen, &tail, &cap, (pid_t)c);
				}
			}
			if (f)
				fclose(f);
		}
		if (d)
			closedir(d);
	}
	free(seen);
	if (err == 1)
		return 0;
	if (err)
		bm_warn("failed to find pid %d among the descendants of %d (stopped at %zu): %s",
			(int)pid, (int)caller, tail, strerror(-err));
	return err ? err : -ESRCH;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>

#include "agent/identity.h"
#include "agent/index.h"
#include "base/common.h"
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

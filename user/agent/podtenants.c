// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Pods' tenants, from pod objects, as the pod_tenants file (podtenants.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/podtenants.h"
#include "agent/podwatch.h"
#include "base/common.h"
#include "base/parse.h"
#include "base/podcgroup.h"

struct mapping {
	char uid[BM_POD_UID_MAX + 1];
	char tenant[BM_NAME_MAX + 1];
};

struct bm_podtenants {
	struct mapping *v;
	size_t n, cap;
};

struct bm_podtenants *bm_podtenants__new(void)
{
	return calloc(1, sizeof(struct bm_podtenants));
}

void bm_podtenants__free(struct bm_podtenants *t)
{
	if (t)
		free(t->v);
	free(t);
}

size_t bm_podtenants__count(const struct bm_podtenants *t)
{
	return t->n;
}

static const char *str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* What the agent's reader takes as a uid: a UUID, or a static pod's 32 hex digits. */
static bool valid_uid(const char *uid)
{
	size_t n = uid ? strlen(uid) : 0;

	return n && n <= BM_POD_UID_MAX && strspn(uid, "0123456789abcdefABCDEF-") == n;
}

int bm_podtenant_of(json_t *pod, const struct bm_podtenants_opts *o, char *tenant, size_t len)
{
	json_t *meta = json_object_get(pod, "metadata");
	const char *v = NULL;

	if (o->label && *o->label)
		v = str(json_object_get(meta, "labels"), o->label);
	if (!bm_valid_name(v) && o->namespace_fallback)
		v = str(meta, "namespace");
	if (!bm_valid_name(v) || strlen(v) >= len)
		return -ENOENT;
	snprintf(tenant, len, "%s", v);
	return 0;
}

static struct mapping *find(struct bm_podtenants *t, const char *uid)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->v[i].uid, uid))
			return &t->v[i];
	return NULL;
}

/* uid's tenant set (tenant) or removed (NULL): 1 if the map changed, 0, -ENOMEM. */
static int set(struct bm_podtenants *t, const char *uid, const char *tenant)
{
	struct mapping *m = find(t, uid), *v;

	if (!tenant) {
		if (!m)
			return 0;
		*m = t->v[--t->n];
		return 1;
	}
	if (m) {
		if (!strcmp(m->tenant, tenant))
			return 0;
		snprintf(m->tenant, sizeof(m->tenant), "%s", tenant);
		return 1;
	}
	if (t->n == t->cap) {
		v = realloc(t->v, (t->cap ? 2 * t->cap : 16) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = t->cap ? 2 * t->cap : 16;
	}
	m = &t->v[t->n++];
	snprintf(m->uid, sizeof(m->uid), "%s", uid);
	snprintf(m->tenant, sizeof(m->tenant), "%s", tenant);
	return 1;
}

struct feed {
	struct bm_podtenants *t;
	const struct bm_podtenants_opts *o;
};

static int feed_pod(json_t *obj, bool deleted, void *ctx, char *err, size_t errlen)
{
	const char *uid = str(json_object_get(obj, "metadata"), "uid"), *kind = str(obj, "kind");
	char tenant[BM_NAME_MAX + 1];
	struct feed *f = ctx;
	bool has;
	int rc;

	if (!json_is_object(obj) || (kind && strcmp(kind, "Pod")) ||
	    !json_is_object(json_object_get(obj, "metadata"))) {
		snprintf(err, errlen, "not a Pod object (kind \"%.40s\")", kind ?: "");
		return -EINVAL;
	}
	if (!valid_uid(uid))
		return 0;	/* no uid the agent could see in a cgroup path: nothing to map */
	has = !deleted && !bm_podtenant_of(obj, f->o, tenant, sizeof(tenant));
	rc = set(f->t, uid, has ? tenant : NULL);
	if (rc < 0)
		snprintf(err, errlen, "out of memory");
	return rc;
}

int bm_podtenants__feed(struct bm_podtenants *t, json_t *doc, const struct bm_podtenants_opts *o,
			char *err, size_t errlen)
{
	struct feed f = { t, o };

	return bm_pod_objects(doc, feed_pod, &f, err, errlen);
}

static int cmp_uid(const void *a, const void *b)
{
	return strcmp(((const struct mapping *)a)->uid, ((const struct mapping *)b)->uid);
}

int bm_podtenants__write(const struct bm_podtenants *t, const char *path)
{
	char tmp[4096];
	struct mapping *s = NULL;
	FILE *f = NULL;
	int fd, err = 0;
	size_t i;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	if (t->n && !(s = malloc(t->n * sizeof(*s))))
		return -ENOMEM;
	if (t->n) {
		memcpy(s, t->v, t->n * sizeof(*s));
		qsort(s, t->n, sizeof(*s), cmp_uid);
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		free(s);
		return -errno;
	}
	/* the agent reads it as root, the pods never: readable by all is no leak of theirs */
	if (fchmod(fd, 0644) || !(f = fdopen(fd, "w"))) {
		err = -errno;
		close(fd);
		goto out;
	}
	fprintf(f, "# <pod uid> <tenant>: burstmeter podtenants, %zu pods\n", t->n);
	for (i = 0; i < t->n; i++)
		fprintf(f, "%s %s\n", s[i].uid, s[i].tenant);
	if (fflush(f) || ferror(f) || fsync(fileno(f)))
		err = -errno ?: -EIO;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
out:
	if (err)
		unlink(tmp);
	free(s);
	return err;
}

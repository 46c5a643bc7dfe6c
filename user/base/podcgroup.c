// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A cgroup path -> the pod and container it is in (podcgroup.h). The path
 * is checked whole first (a ".." or an empty component makes every later
 * reading doubtful), then read level by level from the first kubepods
 * level: each level must be exactly what the kubelet and the runtimes
 * write, or the path is refused, never guessed at.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/common.h"
#include "base/podcgroup.h"

#define DELETED " (deleted)"	/* what /proc/PID/cgroup appends for a removed cgroup */

struct comp {
	const char *s;
	size_t n;
};

/* The component after the '/' at *p; false at the end of the path. */
static bool next_comp(const char **p, struct comp *c)
{
	if (!**p)
		return false;
	c->s = *p + 1;
	c->n = strcspn(c->s, "/");
	*p = c->s + c->n;
	return true;
}

static bool comp_eq(const struct comp *c, const char *s)
{
	return c->n == strlen(s) && !memcmp(c->s, s, c->n);
}

/* c is head + <middle> + tail: the middle into *mid. */
static bool comp_split(const struct comp *c, const char *head, const char *tail, struct comp *mid)
{
	size_t h = strlen(head), t = strlen(tail);

	if (c->n < h + t || memcmp(c->s, head, h) || memcmp(c->s + c->n - t, tail, t))
		return false;
	mid->s = c->s + h;
	mid->n = c->n - h - t;
	return true;
}

static bool lower_hex(const char *s, size_t n)
{
	return strspn(s, "0123456789abcdef") >= n;
}

/*
 * A pod UID: a UUID whose dashes are written as sep (systemd's '_': '-'
 * separates its slice levels), or a static pod's 32 hex digits. Into out
 * with dashes.
 */
static bool parse_uid(const struct comp *c, char sep, char *out)
{
	size_t i;

	if (c->n == 32 && lower_hex(c->s, 32)) {
		memcpy(out, c->s, 32);
		out[32] = '\0';
		return true;
	}
	if (c->n != BM_POD_UID_MAX)
		return false;
	for (i = 0; i < BM_POD_UID_MAX; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? c->s[i] != sep : !lower_hex(c->s + i, 1))
			return false;
		out[i] = dash ? '-' : c->s[i];
	}
	out[BM_POD_UID_MAX] = '\0';
	return true;
}

static bool parse_id(const struct comp *c, char *out)
{
	if (c->n != BM_CONTAINER_ID_LEN || !lower_hex(c->s, c->n))
		return false;
	memcpy(out, c->s, c->n);
	out[c->n] = '\0';
	return true;
}

/*
 * Absolute, no component empty, ".", "..", over NAME_MAX or with a control
 * character, and not " (deleted)".
 */
static int check_path(const char *path)
{
	size_t len = strnlen(path, PATH_MAX), dl = strlen(DELETED), i;
	const char *p = path;
	struct comp c;

	if (len >= PATH_MAX)
		return -ENAMETOOLONG;
	if (path[0] != '/' || (len >= dl && !strcmp(path + len - dl, DELETED)))
		return -EINVAL;
	if (len == 1)
		return 0;	/* "/", the root: in no pod */
	while (next_comp(&p, &c)) {
		/* NAME_MAX: kernfs refuses a longer cgroup name */
		if (!c.n || c.n > NAME_MAX || comp_eq(&c, ".") || comp_eq(&c, ".."))
			return -EINVAL;
		for (i = 0; i < c.n; i++)
			if ((unsigned char)c.s[i] < 0x20 || c.s[i] == 0x7f)
				return -EINVAL;
	}
	return 0;
}

static const struct {
	const char *head;
	enum bm_runtime rt;
} scopes[] = {
	{ "cri-containerd-", BM_RT_CONTAINERD },
	{ "crio-", BM_RT_CRIO },
	{ "docker-", BM_RT_DOCKER },
};

/* The container level: systemd scopes, or cgroupfs' bare id and CRI-O's crio-<id>. */
static int parse_container(const struct comp *c, bool systemd, struct bm_pod_cgroup *out)
{
	const char *tail = systemd ? ".scope" : "";
	struct comp id;
	size_t i;

	/* conmon, CRI-O's monitor, runs beside the container, not in it */
	if (comp_split(c, "crio-conmon-", tail, &id) && parse_id(&id, out->container_id)) {
		out->container_id[0] = '\0';
		return -ENOENT;
	}
	for (i = 0; i < BM_ARRAY_SIZE(scopes); i++) {
		if (!systemd && scopes[i].rt != BM_RT_CRIO)
			continue;
		if (comp_split(c, scopes[i].head, tail, &id) && parse_id(&id, out->container_id)) {
			out->runtime = scopes[i].rt;
			return 0;
		}
	}
	if (!systemd && parse_id(c, out->container_id)) {
		out->runtime = BM_RT_UNKNOWN;
		return 0;
	}
	return -EINVAL;
}

static int parse_qos(const struct comp *c, const char *head, const char *tail,
		     enum bm_pod_qos *qos)
{
	static const char *const names[] = { "burstable", "besteffort" };
	char want[2 * NAME_MAX];
	size_t i;

	for (i = 0; i < BM_ARRAY_SIZE(names); i++) {
		snprintf(want, sizeof(want), "%s%s%s", head, names[i], tail);
		if (comp_eq(c, want)) {
			*qos = i ? BM_QOS_BESTEFFORT : BM_QOS_BURSTABLE;
			return 0;
		}
	}
	return -EINVAL;
}

/*
 * The levels after the kubepods one, with p just past it. systemd repeats
 * each parent's name in its child's: with prefix "kubelet-" the QoS slice
 * is kubelet-kubepods-burstable.slice, the pod's
 * kubelet-kubepods-burstable-pod<UID>.slice.
 */
static int parse_below(const char *path, const char *p, const struct comp *root, bool systemd,
		       struct bm_pod_cgroup *out)
{
	size_t plen = systemd ? root->n - strlen("kubepods.slice") : 0;
	char head[NAME_MAX + 16], stem[2 * NAME_MAX];
	struct comp c, uid;

	snprintf(head, sizeof(head), "%.*skubepods-", (int)plen, root->s);
	if (!next_comp(&p, &c))
		return -ENOENT;		/* the kubepods level itself */
	out->qos = BM_QOS_GUARANTEED;
	if (!parse_qos(&c, systemd ? head : "", systemd ? ".slice" : "", &out->qos) &&
	    !next_comp(&p, &c))
		return -ENOENT;		/* a QoS level */
	if (out->qos == BM_QOS_GUARANTEED)
		snprintf(stem, sizeof(stem), "%spod", systemd ? head : "");
	else if (systemd)
		snprintf(stem, sizeof(stem), "%s%s-pod", head, bm_pod_qos_name(out->qos));
	else
		snprintf(stem, sizeof(stem), "pod");
	if (!comp_split(&c, stem, systemd ? ".slice" : "", &uid) ||
	    !parse_uid(&uid, systemd ? '_' : '-', out->pod_uid))
		return -EINVAL;
	snprintf(out->pod_dir, sizeof(out->pod_dir), "%.*s", (int)(c.s + c.n - path), path);
	if (!next_comp(&p, &c))
		return -ENOENT;		/* the pod level: the kubelet's, no container's */
	return parse_container(&c, systemd, out);
}

int bm_pod_cgroup_parse(const char *path, struct bm_pod_cgroup *out)
{
	const size_t sl = strlen("kubepods.slice");
	const char *p = path;
	struct comp c;
	int err;

	memset(out, 0, sizeof(*out));
	err = check_path(path);
	if (err)
		return err;
	while (next_comp(&p, &c)) {
		bool systemd = c.n >= sl && !memcmp(c.s + c.n - sl, "kubepods.slice", sl) &&
			       (c.n == sl || c.s[c.n - sl - 1] == '-');

		if (!systemd && !comp_eq(&c, "kubepods"))
			continue;
		out->driver = systemd ? BM_CGD_SYSTEMD : BM_CGD_CGROUPFS;
		out->root_len = (size_t)(c.s - 1 - path);
		err = parse_below(path, p, &c, systemd, out);
		if (err)
			memset(out, 0, sizeof(*out));
		return err;
	}
	return -ENOENT;
}

const char *bm_cg_driver_name(enum bm_cg_driver d)
{
	return d == BM_CGD_SYSTEMD ? "systemd" : d == BM_CGD_CGROUPFS ? "cgroupfs" : NULL;
}

const char *bm_pod_qos_name(enum bm_pod_qos q)
{
	static const char *const names[] = { "guaranteed", "burstable", "besteffort" };

	return (unsigned int)q < BM_ARRAY_SIZE(names) ? names[q] : NULL;
}

const char *bm_runtime_name(enum bm_runtime r)
{
	static const char *const names[] = { "unknown", "containerd", "crio", "docker" };

	return (unsigned int)r < BM_ARRAY_SIZE(names) ? names[r] : NULL;
}

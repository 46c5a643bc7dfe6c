/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The pod_tenants file the agent reads (config.h, identity.c): "<pod uid>
 * <tenant>" lines, from a stream of pod objects (`kubectl get pod -w -o
 * json`, a Pod, a List, or watch events). A pod's tenant is its label
 * (burstmeter.io/tenant unless configured), else, when asked, its namespace;
 * a pod with neither, or with a value no tenant may be named, is left out
 * (the agent then calls it pod-<uid>). A deleted pod leaves the map.
 */
#ifndef BM_PODTENANTS_H
#define BM_PODTENANTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define BM_PODTENANTS_LABEL "burstmeter.io/tenant"

struct bm_podtenants_opts {
	const char *label;		/* the pod label that names its tenant; NULL or "": none */
	bool namespace_fallback;	/* no (valid) label: the pod's namespace */
};

struct bm_podtenants;

struct bm_podtenants *bm_podtenants__new(void);
void bm_podtenants__free(struct bm_podtenants *t);

/* The tenant of one Pod object by o into tenant: 0, or -ENOENT (none it may have). */
int bm_podtenant_of(json_t *pod, const struct bm_podtenants_opts *o, char *tenant, size_t len);

/*
 * Feed one document: a Pod, a List of Pods, or a watch event {"type",
 * "object"} (ADDED, MODIFIED, DELETED; BOOKMARK skipped). Returns how many
 * pods' mappings changed; -EINVAL when doc is none of those, -EPROTO for an
 * ERROR event, -ENOMEM: err (errlen bytes) then says why.
 */
int bm_podtenants__feed(struct bm_podtenants *t, json_t *doc, const struct bm_podtenants_opts *o,
			char *err, size_t errlen);

/* How many pods are mapped. */
size_t bm_podtenants__count(const struct bm_podtenants *t);

/*
 * The map as the file's text into path, sorted by uid, atomically: written
 * to a temporary file beside it and renamed over it, so the agent reads the
 * old file or the new one, never a part. 0, or -errno.
 */
int bm_podtenants__write(const struct bm_podtenants *t, const char *path);

#endif /* BM_PODTENANTS_H */

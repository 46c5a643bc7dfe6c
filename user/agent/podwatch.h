/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The states of the pods of a stream (`kubectl get pod -w -o json`, with
 * or without --output-watch-events, or one `kubectl get -o json`): each
 * pod's last state, and a call for each change of its state or reason.
 * Once terminal, a pod's state is final (Kubernetes never moves a pod out
 * of Succeeded or Failed): the kubelet's later updates of a deleted run
 * do not turn it into another ending.
 */
#ifndef BM_PODWATCH_H
#define BM_PODWATCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "agent/podstate.h"

struct bm_podwatch;

struct bm_podwatch *bm_podwatch__new(void);
void bm_podwatch__free(struct bm_podwatch *w);

/* pod: metadata.name; run: its burstmeter.io/run label, else the name. 0, or -errno to stop. */
typedef int (*bm_podwatch_fn)(const char *pod, const char *run, const struct bm_podstate *st,
			      void *ctx);

/*
 * Feed one document: a Pod, a List of Pods, or a watch event {"type",
 * "object"} (ADDED, MODIFIED, DELETED; BOOKMARK skipped). fn is called for
 * each change; a negative return of fn (-errno) ends the feed with it. Returns the
 * number of changes; -EINVAL when doc is none of those, -EPROTO for an
 * ERROR event, -ENOMEM: err (errlen bytes) then says why.
 */
int bm_podwatch__feed(struct bm_podwatch *w, json_t *doc, bm_podwatch_fn fn, void *ctx,
		      char *err, size_t errlen);

/* A pod object of a document, deleted or not: a count to add up, or -errno to stop. */
typedef int (*bm_pod_object_fn)(json_t *pod, bool deleted, void *ctx, char *err, size_t errlen);

/*
 * Each pod object of doc through fn: a Pod, a List's items, a watch event's
 * object (BOOKMARK skipped). The sum of fn's returns, or -EINVAL when doc is
 * none of those, -EPROTO for an ERROR event, fn's -errno: err then says why.
 * bm_podwatch__feed() and podtenants.h read their streams with it.
 */
int bm_pod_objects(json_t *doc, bm_pod_object_fn fn, void *ctx, char *err, size_t errlen);

#endif /* BM_PODWATCH_H */

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A stream of pod objects -> one call per change (podwatch.h). Pods are
 * told apart by metadata.uid (a pod deleted and made again under the same
 * name is another run), by namespace/name where an object has no uid.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/podwatch.h"
#include "base/common.h"

#define LABEL_RUN "burstmeter.io/run"

struct entry {
	char *key;
	struct bm_podstate st;
};

struct bm_podwatch {
	struct entry *v;
	size_t n, cap;
};

struct bm_podwatch *bm_podwatch__new(void)
{
	return calloc(1, sizeof(struct bm_podwatch));
}

void bm_podwatch__free(struct bm_podwatch *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->n; i++)
		free(w->v[i].key);
	free(w->v);
	free(w);
}

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The error, one line whatever the API server sent in it: control characters become spaces. */
static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (errlen)
		bm_blank_controls(err, ' ');
	return code;
}

static const char *str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* The pod's entry, made (state unknown, reason "") when new; NULL + ENOMEM. */
static struct entry *lookup(struct bm_podwatch *w, const char *key, bool *fresh)
{
	struct entry *v;
	size_t i;

	*fresh = false;
	for (i = 0; i < w->n; i++)
		if (!strcmp(w->v[i].key, key))
			return &w->v[i];
	if (w->n == w->cap) {
		v = realloc(w->v, (w->cap ? 2 * w->cap : 16) * sizeof(*v));
		if (!v)
			return NULL;
		w->v = v;
		w->cap = w->cap ? 2 * w->cap : 16;
	}
	v = &w->v[w->n];
	memset(v, 0, sizeof(*v));
	v->key = strdup(key);
	if (!v->key)
		return NULL;
	w->n++;
	*fresh = true;
	return v;
}

static void forget(struct bm_podwatch *w, struct entry *e)
{
	free(e->key);
	*e = w->v[--w->n];
}

static int pod(struct bm_podwatch *w, json_t *obj, bool deleted, bm_podwatch_fn fn, void *ctx,
	       char *err, size_t errlen)
{
	json_t *meta = json_object_get(obj, "metadata");
	const char *name = str(meta, "name") ?: "", *uid = str(meta, "uid"), *run;
	struct bm_podstate st;
	char key[512];
	struct entry *e;
	bool fresh, changed;
	int rc;

	if (bm_podstate_of(obj, deleted, &st))
		return fail(err, errlen, -EINVAL, "not a Pod object (kind \"%.40s\")",
			    str(obj, "kind") ?: "");
	if (uid)
		snprintf(key, sizeof(key), "%s", uid);
	else
		snprintf(key, sizeof(key), "%s/%s", str(meta, "namespace") ?: "", name);
	e = lookup(w, key, &fresh);
	if (!e)
		return fail(err, errlen, -ENOMEM, "out of memory");
	if (!fresh && bm_run_state_terminal(e->st.state)) {
		rc = 0;		/* final: what comes after is the kubelet tidying up */
	} else {
		changed = fresh || e->st.state != st.state || strcmp(e->st.reason, st.reason);
		e->st = st;
		run = str(json_object_get(meta, "labels"), LABEL_RUN) ?: name;
		rc = changed ? fn(name, run, &st, ctx) : 0;
		if (rc >= 0)
			rc = changed;
	}
	if (deleted)
		forget(w, e);	/* the API has let it go: so do we */
	return rc;
}

int bm_pod_objects(json_t *doc, bm_pod_object_fn fn, void *ctx, char *err, size_t errlen)
{
	const char *type = str(doc, "type"), *kind = str(doc, "kind");
	json_t *obj = json_object_get(doc, "object"), *items, *item;
	int n = 0, rc;
	size_t i;

	if (!json_is_object(doc))
		return fail(err, errlen, -EINVAL, "not a JSON object");
	if (type && json_is_object(obj)) {
		if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED"))
			return fn(obj, false, ctx, err, errlen);
		if (!strcmp(type, "DELETED"))
			return fn(obj, true, ctx, err, errlen);
		if (!strcmp(type, "BOOKMARK"))
			return 0;
		if (!strcmp(type, "ERROR"))
			return fail(err, errlen, -EPROTO, "the watch failed: %.200s",
				    str(obj, "message") ?: "(no message)");
		return fail(err, errlen, -EINVAL, "unknown watch event type \"%.40s\"", type);
	}
	if (!kind || strcmp(kind, "List"))
		return fn(doc, false, ctx, err, errlen);
	items = json_object_get(doc, "items");
	if (!json_is_array(items))
		return fail(err, errlen, -EINVAL, "a List without items");
	json_array_foreach(items, i, item) {
		rc = fn(item, false, ctx, err, errlen);
		if (rc < 0)
			return rc;
		n += rc;
	}
	return n;
}

struct feed {
	struct bm_podwatch *w;
	bm_podwatch_fn fn;
	void *ctx;
};

static int feed_pod(json_t *obj, bool deleted, void *ctx, char *err, size_t errlen)
{
	struct feed *f = ctx;

	return pod(f->w, obj, deleted, f->fn, f->ctx, err, errlen);
}

int bm_podwatch__feed(struct bm_podwatch *w, json_t *doc, bm_podwatch_fn fn, void *ctx,
		      char *err, size_t errlen)
{
	struct feed f = { w, fn, ctx };

	return bm_pod_objects(doc, feed_pod, &f, err, errlen);
}

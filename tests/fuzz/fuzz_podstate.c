// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for `burstmeter podstate`'s input: a stream of JSON
 * documents (Pods, Lists, watch events), read one after another as the
 * command reads them, each fed to bm_podwatch__feed() (and so to
 * bm_podstate_of()). Checked: a feed's count is the number of changes it
 * called back; every state has its name, a reason of [A-Za-z0-9_-], one-line
 * message, container and phase; a refusal is -EINVAL or -EPROTO with one
 * line saying why; and a Pod (or ADDED/MODIFIED event) fed twice in a row
 * is no change the second time.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/podstate.h"
#include "agent/podwatch.h"
#include "fuzz.h"

#define MAX_DOCS 64

static int count(const char *pod, const char *run, const struct bm_podstate *st, void *ctx)
{
	const char *r = st->reason;

	CHECK(pod && run, "a change without its pod or run");
	CHECK(bm_run_state_name(st->state), "state %d has no name", (int)st->state);
	CHECK(*r && strspn(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") ==
			    strlen(r),
	      "reason \"%s\"", r);
	CHECK(fuzz_one_line(st->message) && fuzz_one_line(st->container) &&
		      fuzz_one_line(st->phase),
	      "a message, container or phase that is not one line");
	(*(int *)ctx)++;
	return 0;
}

/* Fed twice in a row, a document that only updates one pod changes nothing the second time. */
static bool one_pod_update(json_t *doc)
{
	const char *type = json_string_value(json_object_get(doc, "type"));
	const char *kind = json_string_value(json_object_get(doc, "kind"));

	if (type)
		return json_is_object(json_object_get(doc, "object")) &&
		       (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED"));
	return !kind || strcmp(kind, "List");
}

static void feed(struct bm_podwatch *w, json_t *doc)
{
	char err[256] = "";
	int calls = 0, rc;

	rc = bm_podwatch__feed(w, doc, count, &calls, err, sizeof(err));
	if (rc < 0) {
		CHECK(rc == -EINVAL || rc == -EPROTO, "unexpected error %d", rc);
		CHECK(*err && fuzz_one_line(err), "refused without one line saying why: \"%s\"",
		      err);
		return;
	}
	CHECK(rc == calls, "%d changes told, %d called back", rc, calls);
	if (!one_pod_update(doc))
		return;
	calls = 0;
	rc = bm_podwatch__feed(w, doc, count, &calls, err, sizeof(err));
	CHECK(rc == 0 && calls == 0, "the same pod again: %d changes", rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bm_podwatch *w = bm_podwatch__new();
	const char *p = (const char *)data;
	size_t off = 0;
	json_error_t jerr;
	json_t *doc;
	int n;

	CHECK(w, "out of memory");
	/* as pod_cmds.c reads a file: one document after another, space between */
	for (n = 0; n < MAX_DOCS; n++) {
		while (off < size && strchr(" \t\r\n", p[off]) && p[off])
			off++;
		if (off == size)
			break;
		doc = json_loadb(p + off, size - off, JSON_DISABLE_EOF_CHECK, &jerr);
		if (!doc)
			break;
		CHECK(jerr.position > 0 && (size_t)jerr.position <= size - off,
		      "json_loadb read %d of %zu bytes", jerr.position, size - off);
		off += (size_t)jerr.position;
		feed(w, doc);
		json_decref(doc);
	}
	bm_podwatch__free(w);
	return 0;
}

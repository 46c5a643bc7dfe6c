// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/finish.h"
#include "agent/index.h"
#include "agent/timeline.h"
#include "api/api.h"
#include "base/common.h"

enum MHD_Result ag_api_reply(struct MHD_Connection *c, unsigned int status, json_t *j,
			     unsigned int retry_after)
{
	char *text = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	struct MHD_Response *r;
	enum MHD_Result ret;
	char ra[16];

	json_decref(j);
	if (!text)
		text = strdup("{\"error\":\"out of memory\"}");
	r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	if (retry_after) {
		snprintf(ra, sizeof(ra), "%u", retry_after);
		MHD_add_response_header(r, "Retry-After", ra);
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result ag_api_error(struct MHD_Connection *c, unsigned int status, const char *msg)
{
	return ag_api_reply(c, status, json_pack("{s:s}", "error", msg), 0);
}

static int add_transition(enum bm_state s, int64_t at_ms, void *ctx)
{
	json_array_append_new(ctx, json_pack("{s:s, s:I}", "state", bm_state_name(s), "at_ms", (json_int_t)at_ms));
	return 0;
}

static json_t *transitions_json(struct bm_agent *a, const char *tenant, const char *id)
{
	json_t *arr = json_array();

	(void)bm_store__transitions(a->store, tenant, id, add_transition, arr);
	return arr;
}

/* A stored outcome as an object, its packed timeline in it again; null if none. */
static json_t *outcome_json(const char *text, const void *tl, size_t tl_len)
{
	json_t *o = text ? json_loads(text, 0, NULL) : NULL;
	json_t *t = o && tl_len ? ag_timeline_unpack(tl, tl_len) : NULL;

	if (t)
		json_object_set_new(o, "timeline", t);
	return o ? o : json_null();
}

json_t *ag_row_json(struct bm_agent *a, const struct bm_effect_row *row, bool full)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I}", "id", row->id, "tenant", row->tenant, "tool",
			      row->tool, "state", bm_state_name(row->state), "priority", row->priority,
			      "created_ms", (json_int_t)row->created_ms, "updated_ms", (json_int_t)row->updated_ms);

	if (!full)
		return j;
	json_object_set_new(j, "cgroup", row->cgroup[0] ? json_string(row->cgroup) : json_null());
	json_object_set_new(j, "transitions", transitions_json(a, row->tenant, row->id));
	json_object_set_new(j, "request", json_loads(row->request_json, 0, NULL));
	json_object_set_new(j, "outcome", outcome_json(row->outcome_json, row->timeline, row->timeline_len));
	return j;
}

json_t *ag_effect_json(struct bm_agent *a, const char *tenant, const char *id)
{
	struct bm_effect_row row = { 0 };
	const struct ag_effect *left, *live;
	bool final;
	json_t *j;

	if (bm_store__get(a->store, tenant, id, &row))
		return NULL;
	j = ag_row_json(a, &row, true);
	final = bm_state_final(row.state);
	bm_effect_row_clear(&row);
	/* ended, but the store refused its end (a full disk): what it knows not yet, the agent does */
	left = j && !final ? ag_remains_find(a, tenant, id) : NULL;
	if (left && left->unstored) {
		json_object_set_new(j, "state", json_string(bm_state_name(left->unstored_state)));
		json_object_set_new(j, "outcome", outcome_json(left->unstored, left->unstored_tl,
							       left->unstored_tl_len));
	}
	/* who it runs as, while it is the agent's: what an attached process takes (`run --non-root`) */
	live = j && !final ? ag_find(a, tenant, id) : NULL;
	if (live)
		json_object_set_new(j, "run_as", json_pack("{s:I, s:I}", "uid", (json_int_t)live->uid,
							   "gid", (json_int_t)live->gid));
	return j;
}

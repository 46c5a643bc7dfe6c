// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * GET /v1/effects/{id}/events: NDJSON lines (state changes, windows,
 * actions, the outcome) to every reader of an effect, from the agent's
 * hooks; a reader that stops reading loses lines, never the agent memory.
 */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/index.h"
#include "api/api.h"
#include "base/common.h"

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct ag_stream *st = cls;
	size_t n = st->len - st->off;

	(void)pos;
	if (!n) {
		if (st->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		/* nothing yet: sleep until a line resumes us */
		MHD_suspend_connection(st->conn);
		st->suspended = true;
		return 0;
	}
	n = n < max ? n : max;
	memcpy(buf, st->buf + st->off, n);
	st->off += n;
	if (st->off == st->len)
		st->off = st->len = 0;
	st->full_since_ns = 0;
	return (ssize_t)n;
}

static void stream_wake(struct ag_stream *st)
{
	if (st->suspended) {
		st->suspended = false;
		MHD_resume_connection(st->conn);
	}
}

/*
 * What a reader may leave unread: a second of windows for a dozen effects
 * and more. A reader whose buffer stays full for the idle timeout is cut.
 */
#define STREAM_MAX (1U << 20)

static uint64_t api_idle_ns(const struct ag_effect *e)
{
	return (uint64_t)e->agent->cfg.idle_timeout_s * BM_NSEC_PER_SEC;
}

/* A line (an NDJSON record) for every reader of e. */
static void push(struct ag_effect *e, json_t *line)
{
	char *text = line && e->readers ? json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	struct ag_stream *st;
	size_t n;

	if (!text)
		return;
	n = strlen(text);
	for (st = e->readers; st; st = st->next) {
		/* a reader that stopped reading loses lines rather than the agent its memory, then its stream */
		if (st->ended)
			continue;
		if (st->len + n + 1 > STREAM_MAX) {
			if (!st->full_since_ns)
				st->full_since_ns = bm_now_ns();
			else if (bm_now_ns() - st->full_since_ns > api_idle_ns(e)) {
				bm_warn("an events stream of %s@%s cut: its reader left 1 MiB unread for "
					"%u s", e->tenant, e->req.id, e->agent->cfg.idle_timeout_s);
				st->ended = true;
				st->len = st->off = 0;
				stream_wake(st);
			}
			continue;
		}
		if (st->len + n + 1 > st->cap) {
			size_t cap = (st->len + n + 1) * 2;
			char *p = realloc(st->buf, cap);

			if (!p)
				continue;
			st->buf = p;
			st->cap = cap;
		}
		memcpy(st->buf + st->len, text, n);
		st->buf[st->len + n] = '\n';
		st->len += n + 1;
		stream_wake(st);
	}
	free(text);
}

void ag_api_line(void *ctx, struct ag_effect *e, json_t *line)
{
	(void)ctx;
	push(e, line);
}

void ag_api_gone(void *ctx, struct ag_effect *e)
{
	struct ag_stream *st;

	(void)ctx;
	/* the connections keep their streams until MHD completes them (ag_api_completed()) */
	for (st = e->readers; st; st = st->next) {
		st->ended = true;
		stream_wake(st);
	}
	e->readers = NULL;
}

void ag_api_stream_detach(struct bm_api *api, struct ag_conn *cc)
{
	struct bm_agent *a = api->a;
	struct ag_stream **pp;
	unsigned int i;

	/* only while its effect lives: one that ended has no readers left */
	for (i = 0; cc->stream && i < a->n_eff; i++) {
		if (a->eff[i] != cc->eff)
			continue;
		for (pp = (struct ag_stream **)&a->eff[i]->readers; *pp; pp = &(*pp)->next) {
			if (*pp == cc->stream) {
				*pp = cc->stream->next;
				break;
			}
		}
	}
}

static void stream_free(void *cls)
{
	struct ag_stream *st = cls;

	free(st->buf);
	free(st);
}

enum MHD_Result ag_api_events(struct bm_api *api, struct MHD_Connection *c, struct ag_conn *cc,
			      const char *tenant, const char *id)
{
	struct bm_agent *a = api->a;
	struct ag_effect *e = ag_find(a, tenant, id);
	struct MHD_Response *r;
	struct ag_stream *st;
	enum MHD_Result ret;
	json_t *j, *line;

	st = calloc(1, sizeof(*st));
	if (!st)
		return ag_api_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	st->conn = c;
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st, stream_free);
	if (!r) {
		free(st);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/x-ndjson");
	/* a stream is quiet while its effect is: not idle (a full buffer that stays full is) */
	(void)MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0);
	if (e) {
		st->next = e->readers;
		e->readers = st;
		/* a reader gets every window: looked at every tick */
		ag_wake(a, e);
		cc->stream = st;
		cc->eff = e;
		line = json_pack("{s:s, s:s}", "type", "state", "state", bm_state_name(e->state));
		push(e, line);
		json_decref(line);
	} else {
		/* over already: its outcome, and the end */
		char *text;

		j = ag_effect_json(a, tenant, id);
		line = j ? json_pack("{s:s, s:O}", "type", "outcome", "outcome", json_object_get(j, "outcome")) : NULL;
		text = line ? json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
		if (text && asprintf(&st->buf, "%s\n", text) > 0)
			st->len = st->cap = strlen(st->buf);
		free(text);
		json_decref(line);
		json_decref(j);
		st->ended = true;
	}
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

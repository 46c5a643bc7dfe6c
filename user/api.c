// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's HTTP/1.1 JSON API on a Unix socket, and /metrics on TCP,
 * with libmicrohttpd in the agent's own event loop (epoll, no threads).
 * The caller's identity comes from the kernel (SO_PEERCRED), never from
 * the body: a tenant sees and acts on its own effects only, and another
 * tenant's id is simply not found.
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#include "api.h"
#include "common.h"
#include "export.h"

struct ag_conn {
	char *body;
	size_t len, cap;
	bool too_big;
	struct ag_stream *stream;
	struct ag_effect *eff;
	/*
	 * A POST whose effect is being launched: suspended on a->waiters until
	 * the spawner answers (wait_seq), then answered from the store.
	 */
	bool waiting, answered;
	uint64_t wait_seq;
	int wait_status;
	char tenant[BM_NAME_MAX + 1], id[BM_NAME_MAX + 1];
	struct MHD_Connection *conn;
	struct ag_conn *next;
};

struct caller {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	char tenant[BM_NAME_MAX + 1];
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, json_t *j, unsigned int retry_after)
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
	return reply(c, status, json_pack("{s:s}", "error", msg), 0);
}

#define error ag_api_error

static int peer(struct bm_agent *a, struct MHD_Connection *c, struct caller *who)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	who->pid = cred.pid;
	who->uid = cred.uid;
	who->gid = cred.gid;
	bm_agent_cfg_tenant(&a->cfg, cred.uid, who->tenant, sizeof(who->tenant));
	return 0;
}

static int add_transition(enum bm_state s, int64_t at_ms, void *ctx)
{
	json_array_append_new(ctx, json_pack("{s:s, s:I}", "state", bm_state_name(s), "at_ms", (json_int_t)at_ms));
	return 0;
}

static json_t *transitions_json(struct bm_agent *a, const char *tenant, const char *id)
{
	json_t *arr = json_array();

	bm_store__transitions(a->store, tenant, id, add_transition, arr);
	return arr;
}

static json_t *row_json(struct bm_agent *a, const struct bm_effect_row *row, bool full)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:I}", "id", row->id, "tenant", row->tenant, "tool",
			      row->tool, "state", bm_state_name(row->state), "priority", row->priority,
			      "created_ms", (json_int_t)row->created_ms, "updated_ms", (json_int_t)row->updated_ms);

	if (!full)
		return j;
	json_object_set_new(j, "cgroup", row->cgroup[0] ? json_string(row->cgroup) : json_null());
	json_object_set_new(j, "transitions", transitions_json(a, row->tenant, row->id));
	json_object_set_new(j, "request", json_loads(row->request_json, 0, NULL));
	json_object_set_new(j, "outcome", row->outcome_json ? json_loads(row->outcome_json, 0, NULL) : json_null());
	return j;
}

json_t *ag_effect_json(struct bm_agent *a, const char *tenant, const char *id)
{
	struct bm_effect_row row = { 0 };
	json_t *j;

	if (bm_store__get(a->store, tenant, id, &row))
		return NULL;
	j = row_json(a, &row, true);
	bm_effect_row_clear(&row);
	return j;
}

static enum MHD_Result create(struct bm_agent *a, struct MHD_Connection *c, struct ag_conn *cc,
			      const struct caller *who)
{
	struct bm_request req = { 0 };
	char tenant[BM_NAME_MAX + 1], id[BM_NAME_MAX + 1];
	const char *why = "";
	unsigned int retry = 0;
	struct ag_effect *e;
	json_t *errs = NULL, *j;
	int st;

	if (cc->too_big)
		return error(c, MHD_HTTP_CONTENT_TOO_LARGE, "request body larger than 1 MiB");
	if (bm_request_parse(cc->body ? cc->body : "", cc->len, &req, &errs)) {
		if (!errs)
			return error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
		return reply(c, MHD_HTTP_BAD_REQUEST, json_pack("{s:s, s:o}", "error", "invalid request", "fields", errs), 0);
	}
	/* the tenant is the caller's; only root may act for another */
	snprintf(tenant, sizeof(tenant), "%s", who->tenant);
	if (req.tenant[0] && strcmp(req.tenant, who->tenant)) {
		if (who->uid) {
			bm_request_free(&req);
			return reply(c, MHD_HTTP_FORBIDDEN, json_pack("{s:s, s:[{s:s, s:s}]}", "error", "forbidden", "fields",
				     "field", "tenant", "error", "not the caller's tenant"), 0);
		}
		snprintf(tenant, sizeof(tenant), "%s", req.tenant);
	}
	/* ag_submit() takes the request over (and zeroes it): an effect that failed at once is found by this */
	snprintf(id, sizeof(id), "%s", req.id);
	st = ag_submit(a, &req, tenant, who->uid, who->gid, who->pid, &e, &retry, &why);
	if (st >= 400) {
		bm_request_free(&req);
		return reply(c, (unsigned int)st, json_pack("{s:s}", "error", why), retry);
	}
	bm_request_free(&req);
	if (e && e->launching) {
		/* 201 says it runs: wait for the spawner's answer (ag_api_launched()) */
		cc->waiting = true;
		cc->wait_seq = e->seq;
		cc->wait_status = st;
		snprintf(cc->tenant, sizeof(cc->tenant), "%s", tenant);
		snprintf(cc->id, sizeof(cc->id), "%s", e->req.id);
		cc->conn = c;
		cc->next = a->waiters;
		a->waiters = cc;
		MHD_suspend_connection(c);
		return MHD_YES;
	}
	j = ag_effect_json(a, tenant, e ? e->req.id : id);
	return reply(c, (unsigned int)st, j ? j : json_pack("{s:s}", "error", "not found"), 0);
}

void ag_api_launched(struct bm_agent *a, uint64_t seq)
{
	struct ag_conn **pp = &a->waiters, *cc;

	while ((cc = *pp)) {
		if (cc->wait_seq != seq) {
			pp = &cc->next;
			continue;
		}
		*pp = cc->next;
		cc->waiting = false;
		cc->answered = true;
		MHD_resume_connection(cc->conn);
	}
}

static void unwait(struct bm_agent *a, struct ag_conn *cc)
{
	struct ag_conn **pp;

	for (pp = &a->waiters; *pp; pp = &(*pp)->next) {
		if (*pp == cc) {
			*pp = cc->next;
			break;
		}
	}
}

struct list_ctx {
	struct bm_agent *a;
	json_t *arr;
};

static int list_row(const struct bm_effect_row *row, void *ctx)
{
	struct list_ctx *l = ctx;

	json_array_append_new(l->arr, row_json(l->a, row, false));
	return 0;
}

static enum MHD_Result list(struct bm_agent *a, struct MHD_Connection *c, const struct caller *who)
{
	const char *state = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "state");
	const char *limit = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
	struct list_ctx l = { a, json_array() };
	enum bm_state st = 0;
	uint64_t n = 100;

	if (state && bm_state_parse(state, &st))
		return error(c, MHD_HTTP_BAD_REQUEST, "state: expected queued, running, ..., deadline_exceeded");
	if (limit && bm_parse_u64(limit, 1, 10000, &n))
		return error(c, MHD_HTTP_BAD_REQUEST, "limit: expected an integer in 1-10000");
	bm_store__list(a->store, who->tenant, state ? (int)st : -1, (unsigned int)n, list_row, &l);
	return reply(c, MHD_HTTP_OK, json_pack("{s:o}", "effects", l.arr), 0);
}

static enum MHD_Result health(struct bm_agent *a, struct MHD_Connection *c)
{
	const struct bm_features *f = bm_loader__features(a->loader);

	return reply(c, MHD_HTTP_OK, json_pack("{s:s, s:i, s:i, s:b, s:{s:b, s:b, s:s}}", "status", "ok", "running",
			     a->running, "queued", a->queue.n, "adopted", bm_loader__adopted(a->loader),
			     "meter", "cgroup_storage", f->cgrp_storage, "tick", f->tick, "net", f->net), 0);
}

/* ------------------------------------------------------------ event streams */

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct ag_stream *st = cls;
	size_t n = st->len - st->off;

	(void)pos;
	if (!n) {
		if (st->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
		/* nothing yet: sleep until ag_stream_push() resumes us */
		MHD_suspend_connection(st->conn);
		st->suspended = true;
		return 0;
	}
	n = n < max ? n : max;
	memcpy(buf, st->buf + st->off, n);
	st->off += n;
	if (st->off == st->len)
		st->off = st->len = 0;
	return (ssize_t)n;
}

static void stream_wake(struct ag_stream *st)
{
	if (st->suspended) {
		st->suspended = false;
		MHD_resume_connection(st->conn);
	}
}

void ag_stream_push(struct ag_effect *e, json_t *line)
{
	struct ag_stream *st;
	char *text;
	size_t n;

	if (!line)
		return;
	text = e->streams ? json_dumps(line, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	json_decref(line);
	if (!text)
		return;
	n = strlen(text);
	for (st = e->streams; st; st = st->next) {
		/* a reader that stopped reading loses lines rather than the agent its memory */
		if (st->ended || st->len + n + 1 > (4U << 20))
			continue;
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

void ag_streams_end(struct bm_agent *a, struct ag_effect *e)
{
	struct ag_stream *st;

	(void)a;
	/* the connections keep their streams until MHD completes them (api_completed) */
	for (st = e->streams; st; st = st->next) {
		st->ended = true;
		stream_wake(st);
	}
	e->streams = NULL;
}

static void stream_free(void *cls)
{
	struct ag_stream *st = cls;

	free(st->buf);
	free(st);
}

static enum MHD_Result events(struct bm_agent *a, struct MHD_Connection *c, struct ag_conn *cc,
			      const char *tenant, const char *id)
{
	struct ag_effect *e = ag_find(a, tenant, id);
	struct MHD_Response *r;
	struct ag_stream *st;
	enum MHD_Result ret;
	json_t *j;

	st = calloc(1, sizeof(*st));
	if (!st)
		return error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	st->conn = c;
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st, stream_free);
	if (!r) {
		free(st);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/x-ndjson");
	if (e) {
		st->next = e->streams;
		e->streams = st;
		/* a reader gets every window: looked at every tick */
		ag_wake(a, e);
		cc->stream = st;
		cc->eff = e;
		ag_stream_push(e, json_pack("{s:s, s:s}", "type", "state", "state", bm_state_name(e->state)));
	} else {
		/* over already: its outcome, and the end */
		json_t *line;
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

/* ------------------------------------------------------------------ routes */

static enum MHD_Result one(struct bm_agent *a, struct MHD_Connection *c, struct ag_conn *cc,
			   const struct caller *who, const char *method, const char *rest)
{
	char id[BM_NAME_MAX + 1];
	const char *slash = strchr(rest, '/'), *sub = slash ? slash + 1 : "";
	size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
	struct ag_effect *e;
	json_t *j;

	if (n > BM_NAME_MAX)
		return error(c, MHD_HTTP_BAD_REQUEST, "id: expected [A-Za-z0-9._-], 1-64 characters");
	memcpy(id, rest, n);
	id[n] = '\0';
	if (!bm_valid_name(id))
		return error(c, MHD_HTTP_BAD_REQUEST, "id: expected [A-Za-z0-9._-], 1-64 characters, not starting with '.'");
	/* another tenant's effect does not exist, as far as this caller can tell */
	j = ag_effect_json(a, who->tenant, id);
	if (!j)
		return error(c, MHD_HTTP_NOT_FOUND, "no such effect");
	if (!*sub && !strcmp(method, "GET"))
		return reply(c, MHD_HTTP_OK, j, 0);
	json_decref(j);
	if (!strcmp(sub, "events") && !strcmp(method, "GET"))
		return events(a, c, cc, who->tenant, id);
	if (!strcmp(sub, "cancel") && !strcmp(method, "POST")) {
		e = ag_find(a, who->tenant, id);
		if (!e || ag_cancel(a, e))
			return error(c, MHD_HTTP_CONFLICT, "the effect has ended");
		return reply(c, MHD_HTTP_ACCEPTED, ag_effect_json(a, who->tenant, id), 0);
	}
	if (!strcmp(sub, "exit") && !strcmp(method, "POST")) {
		json_t *body = cc->body ? json_loads(cc->body, JSON_REJECT_DUPLICATES, NULL) : NULL;
		json_t *ws = json_object_get(body, "wait_status");
		int err;

		e = ag_find(a, who->tenant, id);
		err = !json_is_integer(ws) || json_object_size(body) != 1 ? -EINVAL
		      : !e ? -EALREADY : ag_exit(a, e, (int)json_integer_value(ws));
		json_decref(body);
		if (err == -EINVAL)
			return error(c, MHD_HTTP_BAD_REQUEST, "expected {\"wait_status\": N} for an attached effect");
		if (err)
			return error(c, MHD_HTTP_CONFLICT, "the effect has ended");
		return reply(c, MHD_HTTP_ACCEPTED, ag_effect_json(a, who->tenant, id), 0);
	}
	if (!*sub || !strcmp(sub, "events") || !strcmp(sub, "cancel") || !strcmp(sub, "exit"))
		return error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed");
	return error(c, MHD_HTTP_NOT_FOUND, "no such resource");
}

static enum MHD_Result route(struct bm_agent *a, struct MHD_Connection *c, struct ag_conn *cc,
			     const char *url, const char *method)
{
	const char *as = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tenant");
	struct caller who;

	if (peer(a, c, &who))
		return error(c, MHD_HTTP_FORBIDDEN, "cannot tell who is calling");
	/* root (the operator, `run` on a tenant's behalf) may name the tenant; nobody else */
	if (as) {
		if (who.uid)
			return error(c, MHD_HTTP_FORBIDDEN, "tenant: only root may act for another tenant");
		if (!bm_valid_name(as))
			return error(c, MHD_HTTP_BAD_REQUEST, "tenant: expected [A-Za-z0-9._-], 1-64 characters");
		snprintf(who.tenant, sizeof(who.tenant), "%s", as);
	}
	if (!strcmp(url, "/v1/healthz"))
		return !strcmp(method, "GET") ? health(a, c) : error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed");
	if (!strcmp(url, "/v1/effects")) {
		if (!strcmp(method, "POST"))
			return create(a, c, cc, &who);
		if (!strcmp(method, "GET"))
			return list(a, c, &who);
		return error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed");
	}
	if (!strncmp(url, "/v1/effects/", 12))
		return one(a, c, cc, &who, method, url + 12);
	return error(c, MHD_HTTP_NOT_FOUND, "no such resource");
}

enum MHD_Result ag_api_handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				   const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct ag_conn *cc = *con_cls;

	(void)version;
	if (!cc) {
		cc = calloc(1, sizeof(*cc));
		*con_cls = cc;
		return cc ? MHD_YES : MHD_NO;
	}
	if (*upload_size) {
		/* more than 1 MiB is refused whole: keep reading, keep nothing */
		if (!cc->too_big && cc->len + *upload_size > BM_REQ_MAX_BODY) {
			cc->too_big = true;
		} else if (!cc->too_big) {
			if (cc->len + *upload_size + 1 > cc->cap) {
				size_t cap = (cc->len + *upload_size + 1) * 2;
				char *p = realloc(cc->body, cap);

				if (!p)
					return MHD_NO;
				cc->body = p;
				cc->cap = cap;
			}
			memcpy(cc->body + cc->len, upload, *upload_size);
			cc->len += *upload_size;
			cc->body[cc->len] = '\0';
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (cc->answered) {
		json_t *j = ag_effect_json(cls, cc->tenant, cc->id);

		return reply(c, (unsigned int)cc->wait_status, j ? j : json_pack("{s:s}", "error", "not found"), 0);
	}
	return route(cls, c, cc, url, method);
}

void ag_api_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct ag_conn *cc = *con_cls;
	struct bm_agent *a = cls;
	struct ag_stream **pp;
	unsigned int i;

	(void)c;
	(void)toe;
	if (!cc)
		return;
	if (cc->waiting)
		unwait(a, cc);
	/* a stream whose reader went away leaves its effect's list */
	for (i = 0; cc->stream && i < a->n_eff; i++) {
		if (a->eff[i] != cc->eff)
			continue;
		for (pp = &a->eff[i]->streams; *pp; pp = &(*pp)->next) {
			if (*pp == cc->stream) {
				*pp = cc->stream->next;
				break;
			}
		}
	}
	free(cc->body);
	free(cc);
	*con_cls = NULL;
}


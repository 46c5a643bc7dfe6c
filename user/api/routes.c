// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's HTTP/1.1 JSON API: one table of routes, each a handler. The
 * caller's identity comes from the kernel (SO_PEERCRED, its cgroup), never
 * from the body: a tenant sees and acts on its own effects only, and
 * another tenant's id is simply not found. Code inside an effect that
 * reaches the socket (a pod mounts it) is its effect's tenant, asks for
 * nothing looser than its own sandbox, and sees only the effects it asked
 * for. The agent answers in -errno; the statuses are chosen here, only here.
 */
#include <errno.h>
#include <microhttpd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/admit.h"
#include "agent/identity.h"
#include "agent/index.h"
#include "agent/intent.h"
#include "agent/request_sandbox.h"
#include "agent/tenant.h"
#include "api/api.h"
#include "base/common.h"
#include "effect/sandbox.h"

struct caller {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	char tenant[BM_NAME_MAX + 1];
	/* the effect the caller runs inside (its id; "": none) and that effect's sandbox */
	char effect[BM_NAME_MAX + 1];
	struct bm_sandbox sandbox;
	bool in_pod;			/* a pod's container: its tenant is the pod's */
	struct ag_pod pod;
};

/* What a route handler gets: the request, who asked, and the id in the path (if any). */
struct call {
	struct bm_api *api;
	struct MHD_Connection *c;
	struct ag_conn *cc;
	const struct caller *who;
	const char *id;
};

static int peer(struct bm_agent *a, struct MHD_Connection *c, struct caller *who)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct ag_effect *in;
	int err;

	memset(who, 0, sizeof(*who));
	if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	who->pid = cred.pid;
	who->uid = cred.uid;
	who->gid = cred.gid;
	bm_agent_cfg_tenant(&a->cfg, cred.uid, who->tenant, sizeof(who->tenant));
	in = ag_caller_effect(a, cred.pid);
	if (in) {
		snprintf(who->tenant, sizeof(who->tenant), "%s", in->tenant);
		snprintf(who->effect, sizeof(who->effect), "%s", in->req.id);
		who->sandbox = in->req.sandbox;
		return 0;
	}
	err = ag_caller_pod(a, cred.pid, &who->pod, who->tenant, sizeof(who->tenant));
	who->in_pod = !err;
	return err == -ENOENT ? 0 : err;
}

/* May the caller see effect row? Outside effects: any of its tenant's; inside: its own, and those it asked for. */
static bool visible(const struct caller *who, const struct bm_effect_row *row)
{
	return !who->effect[0] || !strcmp(row->id, who->effect) || !strcmp(row->parent, who->effect);
}

/* ag_submit()'s refusals, as statuses and messages; budget: what refused (-EDQUOT, -EAGAIN). */
static enum MHD_Result refused(struct MHD_Connection *c, int err, unsigned int retry,
			       const char *budget)
{
	char msg[160];

	switch (err) {
	case -EBUSY:
		return ag_api_reply(c, 429, json_pack("{s:s}", "error",
				    "this tool keeps hitting the same ceiling: backing off"), retry);
	case -EDQUOT:
		snprintf(msg, sizeof(msg), "the tenant is over its %s budget: retry in %u s",
			 budget, retry);
		return ag_api_reply(c, 429,
				    json_pack("{s:s, s:s, s:i}", "error", msg, "budget", budget,
					      "retry_after_s", (int)retry),
				    retry);
	case -EAGAIN:
		if (budget)
			return ag_api_reply(c, 429,
					    json_pack("{s:s, s:s, s:i}", "error",
						      "the tenant's share of the queue is full",
						      "budget", budget, "retry_after_s",
						      (int)retry),
					    retry);
		return ag_api_reply(c, 429, json_pack("{s:s}", "error", "the queue is full"), retry);
	case -EPERM:
		return ag_api_error(c, MHD_HTTP_FORBIDDEN,
				    "pid: only a process the caller started (its descendant) can be attached");
	case -EOPNOTSUPP:
		return ag_api_error(c, MHD_HTTP_FORBIDDEN,
				    "mode: a pod's tool calls run in the pod: attach them (burstmeter run in "
				    "the pod does)");
	case -ENOMEM:
		return ag_api_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	default:
		return ag_api_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "the state store failed");
	}
}

static enum MHD_Result create(const struct call *k)
{
	struct bm_agent *a = k->api->a;
	struct ag_conn *cc = k->cc;
	struct bm_request req = { 0 };
	char tenant[BM_NAME_MAX + 1], id[BM_NAME_MAX + 1], msg[256];
	unsigned int retry = 0, st;
	const char *looser, *field, *budget = NULL;
	struct ag_effect *e;
	json_t *errs = NULL, *j;
	int err;

	if (cc->too_big)
		return ag_api_error(k->c, MHD_HTTP_CONTENT_TOO_LARGE, "request body larger than 1 MiB");
	/* W3C trace context as a header, or as the body's field */
	if (bm_request_parse_with(cc->body ? cc->body : "", cc->len,
				  MHD_lookup_connection_value(k->c, MHD_HEADER_KIND, "traceparent"),
				  &req, &errs)) {
		if (!errs)
			return ag_api_error(k->c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
		return ag_api_reply(k->c, MHD_HTTP_BAD_REQUEST,
				    json_pack("{s:s, s:o}", "error", "invalid request", "fields", errs), 0);
	}
	/* what only the host can tell (a launch's workspace is there); an attached one's is its caller's */
	if (req.mode == BM_REQ_LAUNCH &&
	    bm_sandbox_check_host(&req.sandbox, &field, msg, sizeof(msg))) {
		bm_request_free(&req);
		return ag_api_reply(k->c, MHD_HTTP_BAD_REQUEST,
				    json_pack("{s:s, s:[{s:s, s:s}]}", "error", "invalid request",
					      "fields", "field", field, "error", msg), 0);
	}
	/* the tenant is the caller's; only root may act for another, and never from inside an effect */
	snprintf(tenant, sizeof(tenant), "%s", k->who->tenant);
	looser = k->who->effect[0] ? bm_sandbox_looser(&req.sandbox, &k->who->sandbox) : NULL;
	if (looser) {
		bm_request_free(&req);
		return ag_api_reply(k->c, MHD_HTTP_FORBIDDEN,
				    json_pack("{s:s, s:[{s:s, s:s}]}", "error", "forbidden", "fields", "field",
					      looser, "error", "looser than the sandbox of the effect that asks"),
				    0);
	}
	if (req.tenant[0] && strcmp(req.tenant, k->who->tenant)) {
		if (k->who->uid || k->who->effect[0] || k->who->in_pod) {
			bm_request_free(&req);
			return ag_api_reply(k->c, MHD_HTTP_FORBIDDEN,
					    json_pack("{s:s, s:[{s:s, s:s}]}", "error", "forbidden", "fields",
						      "field", "tenant", "error", "not the caller's tenant"), 0);
		}
		snprintf(tenant, sizeof(tenant), "%s", req.tenant);
	}
	/* a declared intent above the policy's hard levels is refused before anything runs */
	err = ag_intent_check(a, &req, tenant, &errs);
	if (err) {
		bm_request_free(&req);
		if (!errs)
			return ag_api_error(k->c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
		return ag_api_reply(k->c, MHD_HTTP_BAD_REQUEST,
				    json_pack("{s:s, s:o}", "error", "invalid request", "fields", errs), 0);
	}
	/* ag_submit() takes the request over (and zeroes it): an effect that failed at once is found by this */
	snprintf(id, sizeof(id), "%s", req.id);
	err = ag_submit(a, &req, tenant, k->who->uid, k->who->gid, k->who->pid,
			k->who->effect[0] ? k->who->effect : NULL, k->who->in_pod ? &k->who->pod : NULL,
			&e, &retry, &budget);
	bm_request_free(&req);
	if (err && err != -EEXIST)
		return refused(k->c, err, retry, budget);
	st = err ? MHD_HTTP_OK : !e || e->started ? MHD_HTTP_CREATED : MHD_HTTP_ACCEPTED;
	if (!err && e && e->launching) {
		/* 201 says it runs: wait for the spawner's answer (ag_api_launched()) */
		cc->waiting = true;
		cc->wait_seq = e->seq;
		cc->wait_status = (int)st;
		snprintf(cc->tenant, sizeof(cc->tenant), "%s", tenant);
		snprintf(cc->id, sizeof(cc->id), "%s", e->req.id);
		cc->conn = k->c;
		cc->next = k->api->waiters;
		k->api->waiters = cc;
		MHD_suspend_connection(k->c);
		return MHD_YES;
	}
	j = ag_effect_json(a, tenant, id);
	return ag_api_reply(k->c, st, j ? j : json_pack("{s:s}", "error", "not found"), 0);
}

void ag_api_launched(void *ctx, uint64_t seq)
{
	struct bm_api *api = ctx;
	struct ag_conn **pp = &api->waiters, *cc;

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

static void unwait(struct bm_api *api, struct ag_conn *cc)
{
	struct ag_conn **pp;

	for (pp = &api->waiters; *pp; pp = &(*pp)->next) {
		if (*pp == cc) {
			*pp = cc->next;
			break;
		}
	}
}

struct list_ctx {
	struct bm_agent *a;
	const struct caller *who;
	json_t *arr;
};

static int list_row(const struct bm_effect_row *row, void *ctx)
{
	struct list_ctx *l = ctx;

	if (visible(l->who, row))
		json_array_append_new(l->arr, ag_row_json(l->a, row, false));
	return 0;
}

static enum MHD_Result list(const struct call *k)
{
	const char *state = MHD_lookup_connection_value(k->c, MHD_GET_ARGUMENT_KIND, "state");
	const char *limit = MHD_lookup_connection_value(k->c, MHD_GET_ARGUMENT_KIND, "limit");
	struct list_ctx l = { k->api->a, k->who, json_array() };
	enum bm_state st = 0;
	uint64_t n = 100;

	if (state && bm_state_parse(state, &st)) {
		json_decref(l.arr);
		return ag_api_error(k->c, MHD_HTTP_BAD_REQUEST,
				    "state: expected queued, running, ..., deadline_exceeded");
	}
	if (limit && bm_parse_u64(limit, 1, 10000, &n)) {
		json_decref(l.arr);
		return ag_api_error(k->c, MHD_HTTP_BAD_REQUEST, "limit: expected an integer in 1-10000");
	}
	(void)bm_store__list(k->api->a->store, k->who->tenant, state ? (int)st : -1, (unsigned int)n,
			     list_row, &l);
	return ag_api_reply(k->c, MHD_HTTP_OK, json_pack("{s:o}", "effects", l.arr), 0);
}

/* Root outside any effect: the operator (or `run` on a tenant's behalf). */
static bool operator(const struct caller *who)
{
	return !who->uid && !who->effect[0];
}

static enum MHD_Result health(const struct call *k)
{
	struct bm_agent *a = k->api->a;
	const struct bm_features *f = bm_loader__features(a->loader);

	/* who caused the node's pressure names other tenants: for the operator only */
	return ag_api_reply(k->c, MHD_HTTP_OK,
			    json_pack("{s:s, s:i, s:i, s:i, s:i, s:b, s:{s:b, s:b, s:s}, s:o}", "status",
				      "ok", "running", a->running, "queued", a->queue.n, "max_running",
				      (int)a->cfg.max_running, "max_queued", (int)a->cfg.max_queued, "adopted",
				      bm_loader__adopted(a->loader), "meter", "cgroup_storage",
				      f->cgrp_storage, "tick", f->tick, "net",
				      bm_net_source_name(f->net), "pressure",
				      ag_pressure_json(a, operator(k->who))),
			    0);
}

/* GET /v1/tenants/self: the caller's tenant (root may name one with ?tenant=). */
static enum MHD_Result tenant_self(const struct call *k)
{
	return ag_api_reply(k->c, MHD_HTTP_OK, ag_tenant_json(k->api->a, k->who->tenant), 0);
}

static enum MHD_Result get_one(const struct call *k)
{
	json_t *j = ag_effect_json(k->api->a, k->who->tenant, k->id);

	return ag_api_reply(k->c, MHD_HTTP_OK, j, 0);
}

static enum MHD_Result events(const struct call *k)
{
	return ag_api_events(k->api, k->c, k->cc, k->who->tenant, k->id);
}

static enum MHD_Result cancel(const struct call *k)
{
	struct ag_effect *e = ag_find(k->api->a, k->who->tenant, k->id);
	int err = e ? ag_cancel(k->api->a, e) : -EALREADY;

	if (err == -EALREADY)
		return ag_api_error(k->c, MHD_HTTP_CONFLICT, "the effect has ended");
	/* not stored, so not done: the effect goes on as it was, the caller may ask again */
	if (err)
		return ag_api_error(k->c, MHD_HTTP_SERVICE_UNAVAILABLE,
				    "failed to store the cancel (the state dir is full?): not cancelled");
	return ag_api_reply(k->c, MHD_HTTP_ACCEPTED, ag_effect_json(k->api->a, k->who->tenant, k->id), 0);
}

static enum MHD_Result report_exit(const struct call *k)
{
	struct ag_effect *e = ag_find(k->api->a, k->who->tenant, k->id);
	json_t *body = k->cc->body ? json_loads(k->cc->body, JSON_REJECT_DUPLICATES, NULL) : NULL;
	json_t *ws = json_object_get(body, "wait_status"), *en = json_object_get(body, "enforcement");
	struct bm_sandbox_enf caller;
	const char *bad = NULL;
	char why[160];
	int err;

	/* what the caller made of the sandbox (its namespaces, its identity): its word, said so */
	err = !json_is_integer(ws) || json_object_size(body) != 1u + !!en ? -EINVAL
	      : en && bm_sandbox_enf_parse(en, &caller, &bad) ? -EINVAL
	      : !e ? -EALREADY : ag_exit(k->api->a, e, (int)json_integer_value(ws), en ? &caller : NULL);
	if (err == -EINVAL && bad)
		snprintf(why, sizeof(why), "enforcement.%.64s: not a part of the sandbox, or not a "
			 "string of at most %d printable bytes", bad, BM_SBX_MECH_LEN - 1);
	json_decref(body);
	if (err == -EINVAL && bad)
		return ag_api_error(k->c, MHD_HTTP_BAD_REQUEST, why);
	if (err == -EINVAL)
		return ag_api_error(k->c, MHD_HTTP_BAD_REQUEST,
				    "expected {\"wait_status\": N} for an attached effect (and its "
				    "\"enforcement\", if any)");
	if (err)
		return ag_api_error(k->c, MHD_HTTP_CONFLICT, "the effect has ended");
	return ag_api_reply(k->c, MHD_HTTP_ACCEPTED, ag_effect_json(k->api->a, k->who->tenant, k->id), 0);
}

/* POST .../attach {"pid": N}: the process of an attach that named none (ag_attach()). */
static enum MHD_Result attach_later(const struct call *k)
{
	struct ag_effect *e = ag_find(k->api->a, k->who->tenant, k->id);
	json_t *body = k->cc->body ? json_loads(k->cc->body, JSON_REJECT_DUPLICATES, NULL) : NULL;
	json_t *pid = json_object_get(body, "pid");
	json_int_t v = json_integer_value(pid);
	int err;

	err = !json_is_integer(pid) || json_object_size(body) != 1 || v < 1 || v > INT32_MAX ? -EINVAL
	      : !e ? -EALREADY : ag_attach(k->api->a, e, k->who->pid, k->who->uid, (pid_t)v);
	json_decref(body);
	if (err == -EINVAL)
		return ag_api_error(k->c, MHD_HTTP_BAD_REQUEST, "expected {\"pid\": N}, N >= 1");
	if (err == -EPERM)
		return refused(k->c, err, 0, NULL);
	if (err == -EALREADY)
		return ag_api_error(k->c, MHD_HTTP_CONFLICT,
				    "the effect is not an attach waiting for its process (launched, "
				    "attached already, or ended)");
	if (err)
		return ag_api_error(k->c, MHD_HTTP_INTERNAL_SERVER_ERROR, "the process could not be moved "
				    "into the effect's cgroup");
	return ag_api_reply(k->c, MHD_HTTP_OK, ag_effect_json(k->api->a, k->who->tenant, k->id), 0);
}

/*
 * The routes. A path is a prefix and, for one effect, an id and a sub-resource
 * after it ({id} stands for [A-Za-z0-9._-]{1,64}); the first route whose path
 * matches and whose method is the request's answers. A path that matches with
 * another method is 405, no path 404.
 */
static const struct route {
	const char *method, *path, *sub;	/* sub: NULL for no id, "" for the effect itself */
	enum MHD_Result (*fn)(const struct call *k);
} routes[] = {
	{ "GET", "/v1/healthz", NULL, health },
	{ "GET", "/v1/tenants/self", NULL, tenant_self },
	{ "POST", "/v1/effects", NULL, create },
	{ "GET", "/v1/effects", NULL, list },
	{ "GET", "/v1/effects/", "", get_one },
	{ "GET", "/v1/effects/", "events", events },
	{ "POST", "/v1/effects/", "cancel", cancel },
	{ "POST", "/v1/effects/", "exit", report_exit },
	{ "POST", "/v1/effects/", "attach", attach_later },
};

/* Does url match r? The id into id (for routes with one). 1 yes, 0 no, -EINVAL a bad id. */
static int match(const struct route *r, const char *url, char id[BM_NAME_MAX + 1])
{
	size_t n = strlen(r->path);
	const char *rest, *slash;

	if (!r->sub)
		return !strcmp(url, r->path);
	if (strncmp(url, r->path, n))
		return 0;
	rest = url + n;
	slash = strchr(rest, '/');
	n = slash ? (size_t)(slash - rest) : strlen(rest);
	/* a path that names an effect names a valid one, whatever follows it */
	if (n > BM_NAME_MAX)
		return -EINVAL;
	memcpy(id, rest, n);
	id[n] = '\0';
	if (!bm_valid_name(id))
		return -EINVAL;
	return !strcmp(slash ? slash + 1 : "", r->sub);
}

static enum MHD_Result route(struct bm_api *api, struct MHD_Connection *c, struct ag_conn *cc,
			     const char *url, const char *method)
{
	const char *as = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tenant");
	char id[BM_NAME_MAX + 1] = "";
	bool path_found = false;
	struct caller who;
	unsigned int i;
	int m;

	m = peer(api->a, c, &who);
	if (m == -EBADSLT)
		return ag_api_error(c, MHD_HTTP_FORBIDDEN,
				    "caller: in the kubelet's pods but in no pod container we can name");
	if (m)
		return ag_api_error(c, MHD_HTTP_FORBIDDEN, "cannot tell who is calling");
	/* root (the operator, `run` on a tenant's behalf) may name the tenant; nobody else */
	if (as) {
		if (who.uid || who.effect[0] || who.in_pod)
			return ag_api_error(c, MHD_HTTP_FORBIDDEN,
					    "tenant: only root may act for another tenant");
		if (!bm_valid_name(as))
			return ag_api_error(c, MHD_HTTP_BAD_REQUEST,
					    "tenant: expected [A-Za-z0-9._-], 1-64 characters");
		snprintf(who.tenant, sizeof(who.tenant), "%s", as);
	}
	for (i = 0; i < BM_ARRAY_SIZE(routes); i++) {
		const struct route *r = &routes[i];
		struct call k = { api, c, cc, &who, id };

		m = match(r, url, id);
		if (m < 0)
			return ag_api_error(c, MHD_HTTP_BAD_REQUEST,
					    "id: expected [A-Za-z0-9._-], 1-64 characters, not starting with '.'");
		if (!m)
			continue;
		path_found = true;
		if (strcmp(method, r->method))
			continue;
		/* another tenant's effect does not exist, as far as this caller can tell */
		if (r->sub) {
			struct bm_effect_row row;

			if (bm_store__get(api->a->store, who.tenant, id, &row))
				return ag_api_error(c, MHD_HTTP_NOT_FOUND, "no such effect");
			m = visible(&who, &row);
			bm_effect_row_clear(&row);
			if (!m)
				return ag_api_error(c, MHD_HTTP_NOT_FOUND, "no such effect");
		}
		return r->fn(&k);
	}
	if (path_found)
		return ag_api_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed");
	return ag_api_error(c, MHD_HTTP_NOT_FOUND, "no such resource");
}

enum MHD_Result ag_api_handler(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	struct ag_conn *cc = *con_cls;
	struct bm_api *api = cls;

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
		json_t *j = ag_effect_json(api->a, cc->tenant, cc->id);

		return ag_api_reply(c, (unsigned int)cc->wait_status,
				    j ? j : json_pack("{s:s}", "error", "not found"), 0);
	}
	return route(api, c, cc, url, method);
}

void ag_api_completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct ag_conn *cc = *con_cls;
	struct bm_api *api = cls;

	(void)c;
	(void)toe;
	if (!cc)
		return;
	if (cc->waiting)
		unwait(api, cc);
	/* a stream whose reader went away leaves its effect's readers */
	ag_api_stream_detach(api, cc);
	free(cc->body);
	free(cc);
	*con_cls = NULL;
}

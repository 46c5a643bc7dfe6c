/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Inside the API layer: its state beside the agent's, and what its files
 * share. reply.c answers (JSON, errors, an effect as the API shows it),
 * stream.c serves event streams, routes.c the routes, serve.c the daemons.
 */
#ifndef BM_API_H
#define BM_API_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>

#include "agent/state.h"

/* A client of GET /v1/effects/{id}/events: NDJSON lines wait in buf until MHD takes them. */
struct ag_stream {
	struct ag_stream *next;
	struct MHD_Connection *conn;
	char *buf;
	size_t len, cap, off;
	uint64_t full_since_ns;		/* when a line first found it full, 0: it is not */
	bool suspended, ended;
};

struct ag_conn {
	char *body;
	size_t len, cap;
	bool too_big;
	struct ag_stream *stream;
	struct ag_effect *eff;
	/*
	 * A POST whose effect is being launched: suspended on api->waiters
	 * until the spawner answers (wait_seq), then answered from the store.
	 */
	bool waiting, answered;
	uint64_t wait_seq;
	int wait_status;
	char tenant[BM_NAME_MAX + 1], id[BM_NAME_MAX + 1];
	struct MHD_Connection *conn;
	struct ag_conn *next;
};

struct ag_uid_conns {
	uid_t uid;
	unsigned int n;
};

struct bm_api {
	struct bm_agent *a;
	struct MHD_Daemon *api, *metrics;
	int listen_fd, metrics_fd;
	struct ag_conn *waiters;	/* POSTs whose answer waits for their effect's launch */
	struct ag_uid_conns *uids;	/* API connections per uid, for max_conns_per_uid */
	unsigned int n_uids;
	struct ag_tag t_api, t_metrics, t_listen;
};

/* --- reply.c */
/* Queue j (consumed; NULL: out of memory) as the answer, with Retry-After when retry_after. */
enum MHD_Result ag_api_reply(struct MHD_Connection *c, unsigned int status, json_t *j,
			     unsigned int retry_after);
/* A JSON error reply {"error": msg}. */
enum MHD_Result ag_api_error(struct MHD_Connection *c, unsigned int status, const char *msg);
/* An effect as the API shows it (state, transitions, request, outcome), or NULL: not tenant's. */
json_t *ag_effect_json(struct bm_agent *a, const char *tenant, const char *id);
/* The same without transitions, request and outcome (for lists). */
json_t *ag_row_json(struct bm_agent *a, const struct bm_effect_row *row, bool full);

/* --- stream.c */
/* GET /v1/effects/{id}/events for tenant's effect id (it exists in the store). */
enum MHD_Result ag_api_events(struct bm_api *api, struct MHD_Connection *c, struct ag_conn *cc,
			      const char *tenant, const char *id);
/* The agent's hooks: a line for e's readers; e's readers end. */
void ag_api_line(void *ctx, struct ag_effect *e, json_t *line);
void ag_api_gone(void *ctx, struct ag_effect *e);
/* cc's stream leaves its effect's readers (its connection is done). */
void ag_api_stream_detach(struct bm_api *api, struct ag_conn *cc);

/* --- routes.c */
/* libmicrohttpd's access handler and completion callback for the API socket (cls: the api). */
enum MHD_Result ag_api_handler(void *cls, struct MHD_Connection *c, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_size, void **con_cls);
void ag_api_completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe);
/* The agent's hook: the launch tagged seq is answered; the POSTs that wait for it answer now. */
void ag_api_launched(void *ctx, uint64_t seq);

#endif /* BM_API_H */

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's listeners: the API on a Unix socket (routes.c) and /metrics
 * on TCP, both libmicrohttpd daemons in external-epoll mode whose fds the
 * API registers in the agent's one event loop, with its hooks; and the
 * agent served, from start to stop.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/export.h"
#include "agent/tenant.h"
#include "agent/watch.h"
#include "api/api.h"
#include "api/serve.h"
#include "base/common.h"

/* ---------------------------------------------------------------- /metrics */

/* The meter's own cost: run time of our programs, when kernel.bpf_stats_enabled is on. */
static void bpf_cost(struct bm_agent *a, struct bm_export_node *n)
{
	struct bpf_prog_info info;
	uint32_t ids[16], len;
	int i, cnt, fd;

	cnt = bm_loader__prog_ids(a->loader, ids, 16);
	for (i = 0; i < cnt; i++) {
		fd = bpf_prog_get_fd_by_id(ids[i]);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(fd, &info, &len)) {
			n->bpf_run_ns += info.run_time_ns;
			n->bpf_run_cnt += info.run_cnt;
		}
		close(fd);
	}
}

/* The pod containers whose tool calls run now, one entry each (*n); NULL when there are none. */
static struct bm_export_pod *pods_running(const struct bm_agent *a, unsigned int *n)
{
	struct bm_export_pod *p = NULL;
	unsigned int i, j;

	*n = 0;
	for (i = 0; i < a->n_eff; i++) {
		const struct ag_effect *e = a->eff[i];

		if (!e->pod || !e->started || bm_state_final(e->state))
			continue;
		for (j = 0; j < *n && (strcmp(p[j].uid, e->pod->uid) ||
				       strcmp(p[j].container, e->pod->container)); j++)
			;
		if (j == *n) {
			/* at most one entry per effect: sized once, on the first */
			if (!p && !(p = calloc(a->n_eff, sizeof(*p))))
				return NULL;
			p[(*n)++] = (struct bm_export_pod){ e->tenant, e->pod->uid, e->pod->container, 0 };
		}
		p[j].running++;
	}
	return p;
}

static enum MHD_Result metrics_handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				       const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
	bool om = accept && strstr(accept, "application/openmetrics-text");
	struct bm_export_node node = { 0 };
	uint64_t stats[BM_STAT__MAX] = { 0 };
	struct bm_export_pod *pods;
	struct bm_api *api = cls;
	struct bm_agent *a = api->a;
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len;
	char *text;
	int err;

	(void)version;
	(void)upload;
	(void)upload_size;
	(void)con_cls;
	if (strcmp(url, "/metrics") || strcmp(method, "GET"))
		return ag_api_error(c, MHD_HTTP_NOT_FOUND, "only GET /metrics here");
	node.running = a->running;
	node.queued = a->queue.n;
	node.meter_reads = a->meter_reads;
	if (!bm_loader__stats(a->loader, stats)) {
		node.lost_records = stats[BM_STAT_RB_DROPS];
		node.map_full = stats[BM_STAT_MM_FULL] + stats[BM_STAT_TASK_FULL];
		node.late = stats[BM_STAT_LATE];
	}
	bpf_cost(a, &node);
	node.over_pressure = a->pressure.over_cpu || a->pressure.over_mem;
	node.pressure_episodes = a->pressure.episodes;
	node.pods = pods = pods_running(a, &node.n_pods);
	bm_export__node(a->exp, &node);
	ag_tenants_export(a);
	err = bm_export__render(a->exp, om, &text, &len);
	/* the export keeps no pointer into what is freed */
	node.pods = NULL;
	node.n_pods = 0;
	bm_export__node(a->exp, &node);
	free(pods);
	if (err)
		return ag_api_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", om ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
						      : "text/plain; version=0.0.4; charset=utf-8");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

/* ---------------------------------------------------------------- daemons */

/* The API socket: its directory made, a stale socket replaced, the mode set before anyone connects. */
static int listen_unix(const char *path, mode_t mode)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[PATH_MAX];
	char *slash;
	struct stat st;
	int fd, err;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (!lstat(path, &st)) {
		/* a socket someone answers on is another agent's: never taken from it */
		if (!S_ISSOCK(st.st_mode) || !connect(fd, (struct sockaddr *)&sun, sizeof(sun)) ||
		    errno == EAGAIN) {
			close(fd);
			return S_ISSOCK(st.st_mode) ? -EADDRINUSE : -EEXIST;
		}
		(void)unlink(path);
		close(fd);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -errno;
	}
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || chmod(path, mode) < 0 || listen(fd, 128) < 0) {
		err = -errno;
		close(fd);
		(void)unlink(path);	/* ours if bind made it; the error above is what is said */
		return err;
	}
	return fd;
}

static int listen_tcp(const char *hostport)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char host[64];
	const char *colon = strrchr(hostport, ':');
	uint64_t port;
	int fd, one = 1, err;

	if (!colon || (size_t)(colon - hostport) >= sizeof(host) || bm_parse_u64(colon + 1, 1, 65535, &port))
		return -EINVAL;
	snprintf(host, sizeof(host), "%.*s", (int)(colon - hostport), hostport);
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return -EINVAL;
	sin.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* without it a restart within TIME_WAIT fails to bind, and says so below */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 64) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Connections of the API socket per uid (socket_context: the uid + 1), for the per-uid cap. */
static unsigned int *uid_slot(struct bm_api *api, uid_t uid, bool add)
{
	struct ag_uid_conns *p;
	unsigned int i;

	for (i = 0; i < api->n_uids; i++)
		if (api->uids[i].uid == uid)
			return &api->uids[i].n;
	if (!add)
		return NULL;
	p = realloc(api->uids, (api->n_uids + 1) * sizeof(*p));
	if (!p)
		return NULL;
	api->uids = p;
	p[api->n_uids] = (struct ag_uid_conns){ uid, 0 };
	return &p[api->n_uids++].n;
}

static void conn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
			enum MHD_ConnectionNotificationCode toe)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct bm_api *api = cls;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	unsigned int *n;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		if (!ci || getsockopt(ci->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
			return;
		n = uid_slot(api, cred.uid, true);
		if (n) {
			(*n)++;
			*socket_context = (void *)((uintptr_t)cred.uid + 1);
		}
	} else if (*socket_context) {
		n = uid_slot(api, (uid_t)((uintptr_t)*socket_context - 1), false);
		if (n && *n)
			(*n)--;
		*socket_context = NULL;
	}
}

/* Connections of the API socket, all uids together. */
static unsigned int conns_held(const struct bm_api *api)
{
	unsigned int i, n = 0;

	for (i = 0; i < api->n_uids; i++)
		n += api->uids[i].n;
	return n;
}

/*
 * May uid, holding held connections, have one more? Its own cap, then the
 * node's: of max_conns the last eighth is root's alone, and the eighth
 * before it only for uids that hold none, so that no number of uids
 * together locks out root, or a uid that has not connected yet.
 */
static const char *conn_refusal(const struct bm_api *api, uid_t uid, unsigned int held)
{
	unsigned int max = api->a->cfg.max_conns, reserve = max / 8 ? max / 8 : 1;
	unsigned int total = conns_held(api);

	if (held >= api->a->cfg.max_conns_per_uid)
		return "the most one uid may";
	if (total >= max || (uid && total + reserve >= max) ||
	    (uid && held && total + 2 * reserve >= max))
		return "and the agent all it takes from such uids (the rest is kept for root and "
		       "for uids that hold none)";
	return NULL;
}

/* One over its share: told so in a line of HTTP, and closed (best effort: it is not read). */
static void refuse_busy(int fd, uid_t uid, unsigned int held, const char *why)
{
	char body[256], msg[512];
	int n;

	snprintf(body, sizeof(body), "{\"error\":\"uid %u holds %u connections to the agent, %s\"}",
		 (unsigned int)uid, held, why);
	n = snprintf(msg, sizeof(msg), "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json"
		     "\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
		     strlen(body), body);
	(void)!write(fd, msg, (size_t)n);
	close(fd);
}

/*
 * The API socket is ours to accept on: the caller's uid is known before MHD
 * sees it, so one local user holding idle connections cannot lock every
 * tenant out, nor can a few users together (conn_refusal()).
 */
static void accept_api(void *ctx)
{
	struct bm_api *api = ctx;
	struct sockaddr_un sun;
	struct ucred cred;
	socklen_t len, clen;
	const char *why;
	unsigned int *n;
	int fd;

	for (;;) {
		len = sizeof(sun);
		fd = accept4(api->listen_fd, (struct sockaddr *)&sun, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		clen = sizeof(cred);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0) {
			close(fd);
			continue;
		}
		n = uid_slot(api, cred.uid, false);
		why = conn_refusal(api, cred.uid, n ? *n : 0);
		if (why) {
			refuse_busy(fd, cred.uid, n ? *n : 0, why);
			continue;
		}
		/* MHD closes it on failure */
		(void)MHD_add_connection(api->api, fd, (struct sockaddr *)&sun, len);
	}
}

/*
 * MHD's messages, ours to print. Connections we hand it (accept_api()) it
 * takes for TCP: its tries of TCP_NODELAY and TCP_CORK on a Unix socket
 * fail, and say so on every request. Those are dropped; the rest are ours.
 */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (strstr(msg, "TCP_NODELAY") || strstr(msg, "TCP_CORK") ||
	    strstr(msg, "push the data from buffers"))
		return;
	bm_warn("libmicrohttpd: %s", msg);
}

static struct MHD_Daemon *start_daemon(int fd, MHD_AccessHandlerCallback handler, struct bm_api *api,
				       bool is_api)
{
	unsigned int timeout = is_api ? api->a->cfg.idle_timeout_s : 30;

	/* the logger first: libmicrohttpd warns (on stderr, its own way) about any option before it */
	if (is_api)
		return MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_NO_LISTEN_SOCKET | MHD_ALLOW_SUSPEND_RESUME |
					MHD_USE_ERROR_LOG, 0, NULL, NULL, handler, api,
					MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
					MHD_OPTION_CONNECTION_TIMEOUT, timeout, MHD_OPTION_CONNECTION_LIMIT,
					api->a->cfg.max_conns, MHD_OPTION_NOTIFY_COMPLETED, ag_api_completed, api,
					MHD_OPTION_NOTIFY_CONNECTION, conn_notify, api, MHD_OPTION_END);
	return MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, handler, api,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_CONNECTION_TIMEOUT, timeout, MHD_OPTION_CONNECTION_LIMIT,
				(unsigned int)512, MHD_OPTION_END);
}

static void run_daemons(void *ctx)
{
	struct bm_api *api = ctx;

	if (api->api)
		(void)MHD_run(api->api);
	if (api->metrics)
		(void)MHD_run(api->metrics);
}

static int timeout_ms(void *ctx)
{
	struct bm_api *api = ctx;
	MHD_UNSIGNED_LONG_LONG t, best = ULLONG_MAX;

	if (api->api && MHD_get_timeout(api->api, &t) == MHD_YES && t < best)
		best = t;
	if (api->metrics && MHD_get_timeout(api->metrics, &t) == MHD_YES && t < best)
		best = t;
	return best == ULLONG_MAX ? -1 : (int)(best > 1000 ? 1000 : best);
}

/* The daemon's epoll fd in the agent's loop: readable, it runs both daemons. */
static int watch_daemon(struct bm_api *api, struct MHD_Daemon *d, struct ag_tag *t)
{
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);

	return di ? ag_watch_fd(api->a, di->epoll_fd, t, run_daemons, api) : -EIO;
}

static int api_start(struct bm_api *api, const struct bm_agent_cfg *cfg)
{
	api->listen_fd = listen_unix(cfg->socket, cfg->socket_mode);
	if (api->listen_fd == -EADDRINUSE)
		return bm_err("another agent answers on %s: stop it first, or give this one "
			      "--socket and --state-dir of its own", cfg->socket), -EADDRINUSE;
	if (api->listen_fd < 0)
		return bm_err_errno(api->listen_fd, "failed to listen on %s", cfg->socket);
	api->api = start_daemon(api->listen_fd, ag_api_handler, api, true);
	if (!api->api || watch_daemon(api, api->api, &api->t_api) ||
	    ag_watch_fd(api->a, api->listen_fd, &api->t_listen, accept_api, api))
		return bm_err("failed to start the API on %s", cfg->socket), -EIO;
	if (!cfg->metrics[0])
		return 0;
	api->metrics_fd = listen_tcp(cfg->metrics);
	if (api->metrics_fd < 0)
		return bm_err_errno(api->metrics_fd, "failed to listen on %s for /metrics", cfg->metrics);
	api->metrics = start_daemon(api->metrics_fd, metrics_handler, api, false);
	if (!api->metrics || watch_daemon(api, api->metrics, &api->t_metrics))
		return bm_err("failed to serve /metrics on %s", cfg->metrics), -EIO;
	return 0;
}

static void api_stop(struct bm_api *api, const struct bm_agent_cfg *cfg)
{
	struct bm_agent *a = api->a;
	unsigned int i;

	/* MHD must not be stopped with suspended connections: end and resume every stream */
	for (i = 0; i < a->n_eff; i++)
		ag_api_gone(api, a->eff[i]);
	memset(&a->hooks, 0, sizeof(a->hooks));
	if (api->api) {
		(void)MHD_run(api->api);
		MHD_stop_daemon(api->api);
	}
	if (api->metrics)
		MHD_stop_daemon(api->metrics);
	api->api = api->metrics = NULL;
	if (api->listen_fd >= 0) {
		close(api->listen_fd);
		(void)unlink(cfg->socket);
	}
	free(api->uids);
	api->uids = NULL;
	if (api->metrics_fd >= 0)
		close(api->metrics_fd);
	api->listen_fd = api->metrics_fd = -1;
}

int bm_agent_serve(const struct bm_agent_cfg *cfg)
{
	struct bm_api api = { .listen_fd = -1, .metrics_fd = -1 };
	int err;

	api.a = bm_agent_new(cfg);
	if (!api.a)
		return -EINVAL;
	api.a->hooks = (struct ag_hooks){
		.ctx = &api, .line = ag_api_line, .gone = ag_api_gone, .launched = ag_api_launched,
		.timeout_ms = timeout_ms, .run = run_daemons,
	};
	err = api_start(&api, cfg);
	if (!err)
		err = bm_agent_loop(api.a);
	api_stop(&api, cfg);
	bm_agent_free(api.a);
	return err;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The agent's listeners: the API on a Unix socket (handlers in api.c) and
 * /metrics on TCP, both libmicrohttpd daemons in external-epoll mode, so
 * they run in the agent's one event loop.
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "api.h"
#include "common.h"
#include "export.h"

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

static enum MHD_Result metrics_handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				       const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
	bool om = accept && strstr(accept, "application/openmetrics-text");
	struct bm_export_node node = { 0 };
	uint64_t stats[BM_STAT__MAX] = { 0 };
	struct bm_agent *a = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	size_t len;
	char *text;

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
	bm_export__node(a->exp, &node);
	if (bm_export__render(a->exp, om, &text, &len))
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
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		unlink(path);
	}
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || chmod(path, mode) < 0 || listen(fd, 128) < 0) {
		err = -errno;
		close(fd);
		unlink(path);
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
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 64) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static struct MHD_Daemon *start_daemon(int fd, MHD_AccessHandlerCallback handler, struct bm_agent *a, bool api)
{
	return MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				handler, a, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned int)(api ? 0 : 30), MHD_OPTION_CONNECTION_LIMIT, (unsigned int)512,
				MHD_OPTION_NOTIFY_COMPLETED, api ? ag_api_completed : NULL, a, MHD_OPTION_END);
}

static int watch_daemon(struct bm_agent *a, struct MHD_Daemon *d, struct ag_tag *t, enum ag_kind kind)
{
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = t };

	t->kind = kind;
	t->ptr = NULL;
	if (!di || epoll_ctl(a->epfd, EPOLL_CTL_ADD, di->epoll_fd, &ev) < 0)
		return -errno ? -errno : -EIO;
	return 0;
}

int ag_api_start(struct bm_agent *a)
{
	a->listen_fd = listen_unix(a->cfg.socket, a->cfg.socket_mode);
	if (a->listen_fd < 0)
		return bm_err("failed to listen on %s: %s", a->cfg.socket, strerror(-a->listen_fd)), a->listen_fd;
	a->api = start_daemon(a->listen_fd, ag_api_handler, a, true);
	if (!a->api || watch_daemon(a, a->api, &a->t_api, AG_API))
		return bm_err("failed to start the API on %s", a->cfg.socket), -EIO;
	if (!a->cfg.metrics[0])
		return 0;
	a->metrics_fd = listen_tcp(a->cfg.metrics);
	if (a->metrics_fd < 0)
		return bm_err("failed to listen on %s for /metrics: %s", a->cfg.metrics, strerror(-a->metrics_fd)),
		       a->metrics_fd;
	a->metrics = start_daemon(a->metrics_fd, metrics_handler, a, false);
	if (!a->metrics || watch_daemon(a, a->metrics, &a->t_metrics, AG_METRICS))
		return bm_err("failed to serve /metrics on %s", a->cfg.metrics), -EIO;
	return 0;
}

void ag_api_stop(struct bm_agent *a)
{
	unsigned int i;

	/* MHD must not be stopped with suspended connections: end and resume every stream */
	for (i = 0; i < a->n_eff; i++)
		ag_streams_end(a, a->eff[i]);
	if (a->api) {
		MHD_run(a->api);
		MHD_stop_daemon(a->api);
	}
	if (a->metrics)
		MHD_stop_daemon(a->metrics);
	a->api = a->metrics = NULL;
	if (a->listen_fd >= 0) {
		close(a->listen_fd);
		unlink(a->cfg.socket);
	}
	if (a->metrics_fd >= 0)
		close(a->metrics_fd);
	a->listen_fd = a->metrics_fd = -1;
}

void ag_api_run(struct bm_agent *a)
{
	if (a->api)
		MHD_run(a->api);
	if (a->metrics)
		MHD_run(a->metrics);
}

int ag_api_timeout_ms(struct bm_agent *a)
{
	MHD_UNSIGNED_LONG_LONG t, best = ULLONG_MAX;

	if (a->api && MHD_get_timeout(a->api, &t) == MHD_YES && t < best)
		best = t;
	if (a->metrics && MHD_get_timeout(a->metrics, &t) == MHD_YES && t < best)
		best = t;
	return best == ULLONG_MAX ? -1 : (int)(best > 1000 ? 1000 : best);
}

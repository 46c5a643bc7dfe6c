// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/common.h"
#include "cli/client.h"
#include "cli/mcp_progress.h"
#include "cli/mcp_proto.h"
#include "cli/mcp_text.h"

static const char *const dim_keys[BM_MCP_DIMS] = { "cpu_cores", "memory_bytes", "pids", "net_tx_bytes_per_s" };

int bm_mcp_progress_init(struct bm_mcp_progress *p, const json_t *token, uint64_t timeout_ns)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	p->token = json_incref((json_t *)token);
	p->total_s = timeout_ns / 1e9;
	p->start_ns = bm_now_ns();
	p->next_ns = p->start_ns + BM_MCP_PROGRESS_MS * BM_NSEC_PER_MSEC;
	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	return p->stop_fd < 0 ? -errno : 0;
}

void bm_mcp_progress_note(struct bm_mcp_progress *p, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&p->lock);
	va_start(ap, fmt);
	vsnprintf(p->note, sizeof(p->note), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&p->lock);
}

/* One NDJSON line of the effect's events. */
static int on_line(json_t *line, void *ctx)
{
	struct bm_mcp_progress *p = ctx;
	const char *type = json_string_value(json_object_get(line, "type"));
	double v;
	int d;

	if (!type)
		return 0;
	if (!strcmp(type, "outcome"))
		return 1;
	pthread_mutex_lock(&p->lock);
	if (!strcmp(type, "window")) {
		for (d = 0; d < BM_MCP_DIMS; d++) {
			v = json_number_value(json_object_get(line, dim_keys[d]));
			p->last[d] = v > p->last[d] ? v : p->last[d];
			p->peak[d] = v > p->peak[d] ? v : p->peak[d];
		}
		p->windows++;
	} else if (!strcmp(type, "action")) {
		snprintf(p->note, sizeof(p->note), "the ladder: %s for %s",
			 json_string_value(json_object_get(line, "action")) ?: "?",
			 json_string_value(json_object_get(line, "reason")) ?: "?");
	} else if (!strcmp(type, "state") && json_string_value(json_object_get(line, "state")) &&
		   strcmp(json_string_value(json_object_get(line, "state")), "running")) {
		snprintf(p->note, sizeof(p->note), "%s", json_string_value(json_object_get(line, "state")));
	}
	pthread_mutex_unlock(&p->lock);
	return 0;
}

static void *follow(void *arg)
{
	struct bm_mcp_progress *p = arg;

	bm_client_follow(p->sock, p->path, p->stop_fd, on_line, p);
	return NULL;
}

void bm_mcp_progress_follow(struct bm_mcp_progress *p, const char *sock, const char *id)
{
	if (!p->token || p->following)
		return;
	snprintf(p->sock, sizeof(p->sock), "%s", sock);
	snprintf(p->path, sizeof(p->path), "/v1/effects/%s/events", id);
	p->following = !pthread_create(&p->events, NULL, follow, p);
}

int bm_mcp_progress_wait_ms(const struct bm_mcp_progress *p)
{
	uint64_t now = bm_now_ns();

	/* bounded: the caller also looks at its child's end on each return */
	if (!p->token)
		return 200;
	return now >= p->next_ns ? 0 : (int)((p->next_ns - now) / BM_NSEC_PER_MSEC) + 1;
}

void bm_mcp_progress_tick(struct bm_mcp_progress *p)
{
	char msg[512], mem[32], pmem[32];
	uint64_t now = bm_now_ns();
	double t = (double)(now - p->start_ns) / 1e9;
	json_t *params;
	int n;

	if (!p->token || now < p->next_ns || t <= p->sent)
		return;
	p->next_ns = now + BM_MCP_PROGRESS_MS * BM_NSEC_PER_MSEC;
	pthread_mutex_lock(&p->lock);
	if (p->windows > p->last_windows) {
		bm_mcp_bytes(p->last[BM_MCP_MEM], mem, sizeof(mem));
		bm_mcp_bytes(p->peak[BM_MCP_MEM], pmem, sizeof(pmem));
		n = snprintf(msg, sizeof(msg), "running %.1f s: last %.1f s cpu %.2f cores, mem %s, %.0f tasks; "
			     "peak %.2f cores, %s, %.0f tasks", t, (p->windows - p->last_windows) / 100.0,
			     p->last[BM_MCP_CPU], mem, p->last[BM_MCP_PIDS], p->peak[BM_MCP_CPU], pmem,
			     p->peak[BM_MCP_PIDS]);
		memset(p->last, 0, sizeof(p->last));
		p->last_windows = p->windows;
	} else {
		n = snprintf(msg, sizeof(msg), "running %.1f s", t);
	}
	if (p->note[0] && n > 0 && (size_t)n < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - (size_t)n, "; %s", p->note);
	p->note[0] = '\0';
	pthread_mutex_unlock(&p->lock);
	params = json_pack("{s:O, s:f, s:s}", "progressToken", p->token, "progress", t, "message", msg);
	if (params && p->total_s > 0)
		json_object_set_new(params, "total", json_real(p->total_s));
	p->sent = t;
	bm_mcp_notify("notifications/progress", params);
}

void bm_mcp_progress_stop(struct bm_mcp_progress *p)
{
	uint64_t one = 1;

	if (p->following) {
		if (write(p->stop_fd, &one, sizeof(one)) < 0)
			bm_dbg("failed to stop following events: %s", strerror(errno));
		pthread_join(p->events, NULL);
		p->following = false;
	}
	json_decref(p->token);
	p->token = NULL;
}

void bm_mcp_progress_free(struct bm_mcp_progress *p)
{
	bm_mcp_progress_stop(p);
	if (p->stop_fd >= 0)
		close(p->stop_fd);
	p->stop_fd = -1;
	pthread_mutex_destroy(&p->lock);
}

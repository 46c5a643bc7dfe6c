/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Progress of a running call (MCP "Progress": notifications/progress for
 * the request's _meta.progressToken): every BM_MCP_PROGRESS_MS its elapsed
 * seconds and, through the agent, the peaks of the windows it closed since
 * the last one and so far, read from GET /v1/effects/{id}/events by a
 * thread of its own. Without a token nothing is followed or sent.
 */
#ifndef BM_MCP_PROGRESS_H
#define BM_MCP_PROGRESS_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define BM_MCP_PROGRESS_MS 500

enum { BM_MCP_CPU, BM_MCP_MEM, BM_MCP_PIDS, BM_MCP_NET, BM_MCP_DIMS };

struct bm_mcp_progress {
	json_t *token;			/* NULL: no progress asked for */
	double total_s;			/* the timeout, 0 if none */
	uint64_t start_ns, next_ns;
	double sent;			/* the last progress value sent: each must be larger */
	pthread_mutex_t lock;		/* what the events thread fills: */
	double last[BM_MCP_DIMS], peak[BM_MCP_DIMS];
	unsigned int windows, last_windows;
	char note[160];			/* a state or an action of the ladder, said once */
	pthread_t events;
	bool following;
	int stop_fd;
	char sock[4096], path[128];
};

int bm_mcp_progress_init(struct bm_mcp_progress *p, const json_t *token, uint64_t timeout_ns);
/* Follow the effect's events through the agent at sock. */
void bm_mcp_progress_follow(struct bm_mcp_progress *p, const char *sock, const char *id);
/* Say this in the next notification. */
void bm_mcp_progress_note(struct bm_mcp_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* How long the caller may wait before the next tick (ms, bounded). */
int bm_mcp_progress_wait_ms(const struct bm_mcp_progress *p);
/* Send a notification if one is due. */
void bm_mcp_progress_tick(struct bm_mcp_progress *p);
/* Stop following (idempotent); nothing is sent after it. */
void bm_mcp_progress_stop(struct bm_mcp_progress *p);
void bm_mcp_progress_free(struct bm_mcp_progress *p);

#endif /* BM_MCP_PROGRESS_H */

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Messages out: stdout is shared by the reader (answers) and every running
 * call (progress, results), so each message is formatted first and written
 * whole under one lock. Nothing else may write to stdout (the stdio
 * transport: only MCP messages there; logs go to stderr).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/version.h"
#include "cli/mcp_proto.h"

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static bool out_gone;

json_t *bm_mcp_server_info(void)
{
	return json_pack("{s:s, s:s, s:s}", "name", "burstmeter", "title", "burstmeter: metered tool calls",
			 "version", BM_VERSION);
}

bool bm_mcp_legacy_version(const char *v)
{
	/* structuredContent and outputSchema came with 2025-06-18 */
	return v && (!strcmp(v, BM_MCP_LEGACY) || !strcmp(v, "2025-06-18"));
}

static bool write_all(const char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(STDOUT_FILENO, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

bool bm_mcp_send(json_t *msg)
{
	/* compact JSON never holds a raw newline: strings escape theirs */
	char *text = msg ? json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(9)) : NULL;
	size_t n = text ? strlen(text) : 0;
	bool ok;

	json_decref(msg);
	if (!text)
		return false;
	text[n] = '\n';
	pthread_mutex_lock(&out_lock);
	ok = !out_gone && write_all(text, n + 1);
	out_gone |= !ok;
	pthread_mutex_unlock(&out_lock);
	free(text);
	return ok;
}

void bm_mcp_result(const json_t *id, json_t *result, const struct bm_mcp_era *era)
{
	json_t *meta;

	if (!result)
		result = json_object();
	if (era && era->modern) {
		json_object_set_new(result, "resultType", json_string("complete"));
		meta = json_object_get(result, "_meta");
		if (!meta)
			json_object_set_new(result, "_meta", meta = json_object());
		json_object_set_new(meta, BM_MCP_META_SERVER, bm_mcp_server_info());
	}
	bm_mcp_send(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result));
}

void bm_mcp_error(const json_t *id, int code, json_t *data, const char *fmt, ...)
{
	char msg[1024];
	json_t *err;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err = json_pack("{s:i, s:s}", "code", code, "message", msg);
	if (!err)
		err = json_pack("{s:i, s:s}", "code", code, "message", "error");
	if (data)
		json_object_set_new(err, "data", data);
	bm_mcp_send(json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", err));
}

void bm_mcp_notify(const char *method, json_t *params)
{
	bm_mcp_send(json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params",
			      params ? params : json_object()));
}

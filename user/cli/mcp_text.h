/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What `burstmeter mcp` tells the model: the short line it reads first,
 * built from an outcome (why it ended, at what, after how long, and what to
 * change for a retry), and a command's output, capped to its first and last
 * bytes and always valid UTF-8. Pure: no I/O, no locks.
 */
#ifndef BM_MCP_TEXT_H
#define BM_MCP_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One stream's output: its first cap/2 bytes, its last cap - cap/2, and how many in all. */
struct bm_mcp_out {
	char *buf;		/* cap bytes: the head, then the tail as a ring */
	size_t cap, head, tail_len, tail_pos;
	uint64_t total;
};

/* Returns 0 or -ENOMEM; cap 0 keeps nothing but the count. */
int bm_mcp_out__init(struct bm_mcp_out *o, size_t cap);
void bm_mcp_out__add(struct bm_mcp_out *o, const char *p, size_t n);
/*
 * What was kept, as UTF-8 (invalid bytes become U+FFFD), with a line saying
 * how many bytes were left out between head and tail when some were.
 * Sets *truncated. A new string, or NULL (ENOMEM).
 */
char *bm_mcp_out__text(const struct bm_mcp_out *o, bool *truncated);
void bm_mcp_out__free(struct bm_mcp_out *o);

/* p[0..n) with every invalid UTF-8 sequence (and NUL) replaced by U+FFFD; a new string or NULL. */
char *bm_mcp_utf8(const char *p, size_t n);

/*
 * The line the model reads first, e.g. "killed: memory_ceiling at 512 MiB
 * after 3.1 s; retry with a smaller working set or limits.memory >= 768M".
 * What the outcome's "expect" says was exceeded is said too. Written to buf.
 */
void bm_mcp_summary(const json_t *outcome, char *buf, size_t len);

/*
 * The outcome's "expect" ({declared, observed, exceeded}: the agent's
 * report of the call's expectations) in the tool's shape: {"memory_bytes":
 * {"expected": E, "observed": O, "exceeded": bool}, ...}, one member per
 * expectation. New; NULL when the outcome has none.
 */
json_t *bm_mcp_expect_report(const json_t *outcome);

/* Bytes for people: "512 B", "12 KiB", "3.5 MiB", "1.2 GiB". */
void bm_mcp_bytes(double v, char *buf, size_t len);

#endif /* BM_MCP_TEXT_H */

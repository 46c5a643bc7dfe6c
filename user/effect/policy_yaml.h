/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Policy files (YAML): defaults per dimension, then rules that override
 * them for a tenant and/or a tool kind. libcyaml maps the document onto
 * structs and rejects unknown keys; levels are strings ("1.5", "512M",
 * "50M") checked by user/base/parse.c, and every error names FILE:LINE:COLUMN.
 *
 *   cooldown_ms: 250
 *   freeze_timeout_ms: 2000
 *   cancel_grace_ms: 1000
 *   expect_widens_soft: true   # a request's expect raises soft levels (effect/expect.h)
 *   defaults:
 *     cpu:    { soft: 1.5, hard: 2, hold_ms: 100, steps: [throttle, freeze] }
 *     memory: { hard: 2G, steps: [freeze, kill] }
 *   rules:
 *     - match: { tenant: acme, tool: pytest }
 *       net: { soft: 50M, hard: 200M, steps: [freeze, cancel] }
 */
#ifndef BM_POLICY_YAML_H
#define BM_POLICY_YAML_H

#include <stddef.h>

#include "effect/policy.h"

/*
 * Load the policy that applies to (tenant, tool) from the YAML text
 * (name is used in messages). On error, returns -EINVAL and writes one
 * line "NAME:LINE:COL: what is wrong" into err. Returns 0 on success.
 */
int bm_policy_load(const char *text, size_t len, const char *name, const char *tenant,
		   const char *tool, struct bm_policy *out, char *err, size_t errlen);

/* Read FILE and bm_policy_load() it. Returns 0, -EINVAL (err set) or -errno. */
int bm_policy_load_file(const char *path, const char *tenant, const char *tool,
			struct bm_policy *out, char *err, size_t errlen);

/* The tool kind of a command: the basename of argv[0] ("/usr/bin/python3" -> "python3"). */
const char *bm_policy_tool(const char *argv0);

#endif /* BM_POLICY_YAML_H */

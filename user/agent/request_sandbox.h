/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The "sandbox" member of an execution request, parsed and written back. */
#ifndef BM_REQUEST_SANDBOX_H
#define BM_REQUEST_SANDBOX_H

#include <jansson.h>

#include "agent/request_field.h"
#include "effect/sandbox.h"

/* v: the "sandbox" member, or NULL (then all defaults). */
void bm_sandbox_parse(struct bm_req_errs *e, json_t *v, struct bm_sandbox *sb);
json_t *bm_sandbox_json(const struct bm_sandbox *sb);

#endif /* BM_REQUEST_SANDBOX_H */

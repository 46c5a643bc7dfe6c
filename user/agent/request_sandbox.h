/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The "sandbox" member of an execution request, parsed and written back. */
#ifndef BM_REQUEST_SANDBOX_H
#define BM_REQUEST_SANDBOX_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/request_field.h"
#include "effect/sandbox.h"

/* v: the "sandbox" member, or NULL (then all defaults). */
void bm_sandbox_parse(struct bm_req_errs *e, json_t *v, struct bm_sandbox *sb);
/* (bm_sandbox_json(), its canonical form, is effect/sandbox.h's: outcomes carry it too.) */
/*
 * What only the host can tell, at submission of a launch: the workspace
 * exists and is a directory. 0, or -errno with *field and msg set.
 */
int bm_sandbox_check_host(const struct bm_sandbox *sb, const char **field, char *msg, size_t len);

/* A parse.h reader: bm_parse_size, bm_parse_cores, bm_parse_duration_ns, bm_parse_u64. */
typedef int (*bm_req_parse_fn)(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/*
 * A quantity member v (a JSON number, or a string with units) read with
 * parse into *dst, in [min, max]; a bad one recorded under field, naming
 * expect (the accepted forms). The sandbox's quantities go through it.
 */
void bm_req_quantity(struct bm_req_errs *e, const char *field, json_t *v, bm_req_parse_fn parse,
		     uint64_t min, uint64_t max, const char *expect, uint64_t *dst);

#endif /* BM_REQUEST_SANDBOX_H */

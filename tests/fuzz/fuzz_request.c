// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for bm_request_parse(): the one function that reads
 * bytes straight from API callers. Besides memory errors (ASan/UBSan) it
 * checks the contract: a refused body yields -EINVAL, a non-empty list of
 * {"field", "error"} strings that dumps as JSON, and nothing owned in the
 * request; an accepted body yields a canonical form (bm_request_json) that
 * parses back to an equal request, field by field, and to the same canonical
 * form.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/request.h"
#include "agent/request_field.h"
#include "fuzz.h"

static void check_refused(int err, const struct bm_request *r, json_t *errs)
{
	CHECK(err == -EINVAL, "unexpected error %d", err);
	CHECK(!r->argv && !r->env && !r->labels, "a refused request still owns memory");
	fuzz_check_field_errors(errs, BM_REQ_MAX_ERRORS);
}

static bool strv_equal(char **a, char **b)
{
	if (!a || !b)
		return a == b;
	for (; *a && *b; a++, b++)
		if (strcmp(*a, *b))
			return false;
	return !*a && !*b;
}

static bool sandbox_equal(const struct bm_sandbox *a, const struct bm_sandbox *b)
{
	unsigned int i;

	if (a->cpu_request_milli != b->cpu_request_milli ||
	    a->cpu_limit_milli != b->cpu_limit_milli || a->memory_request != b->memory_request ||
	    a->memory_limit != b->memory_limit || a->pids_limit != b->pids_limit ||
	    a->timeout_ns != b->timeout_ns || a->max_ephemeral_storage != b->max_ephemeral_storage ||
	    a->network_policy != b->network_policy || a->n_cidrs != b->n_cidrs ||
	    a->read_only_root_fs != b->read_only_root_fs ||
	    a->run_as_non_root != b->run_as_non_root ||
	    a->drop_all_capabilities != b->drop_all_capabilities ||
	    strcmp(bm_sandbox_workspace(a), bm_sandbox_workspace(b)))
		return false;
	for (i = 0; i < a->n_cidrs; i++)
		if (a->cidrs[i].family != b->cidrs[i].family ||
		    a->cidrs[i].prefix != b->cidrs[i].prefix ||
		    memcmp(a->cidrs[i].addr, b->cidrs[i].addr, sizeof(a->cidrs[i].addr)))
			return false;
	return true;
}

/* Every field bm_request_parse() fills. */
static bool request_equal(const struct bm_request *a, const struct bm_request *b)
{
	return !strcmp(a->id, b->id) && !strcmp(a->tenant, b->tenant) &&
	       !strcmp(a->intent, b->intent) && a->mode == b->mode &&
	       a->attach_pid == b->attach_pid && strv_equal(a->argv, b->argv) &&
	       strv_equal(a->env, b->env) && !a->cwd == !b->cwd &&
	       (!a->cwd || !strcmp(a->cwd, b->cwd)) &&
	       a->priority == b->priority && json_equal(a->labels, b->labels) &&
	       a->window_ns == b->window_ns && sandbox_equal(&a->sandbox, &b->sandbox) &&
	       !strcmp(a->tool, b->tool) && a->expect.set == b->expect.set &&
	       !memcmp(a->expect.v, b->expect.v, sizeof(a->expect.v)) &&
	       !strcmp(a->traceparent, b->traceparent);
}

static void check_round_trip(const struct bm_request *r)
{
	struct bm_request back;
	json_t *canon, *again, *errs = NULL;
	char *text, *etext;
	int err;

	canon = bm_request_json(r);
	CHECK(canon, "bm_request_json failed");
	text = json_dumps(canon, JSON_COMPACT);
	CHECK(text, "canonical form does not dump");
	err = bm_request_parse(text, strlen(text), &back, &errs);
	etext = errs ? json_dumps(errs, JSON_COMPACT) : NULL;
	CHECK(!err, "canonical %s refused (%d): %s", text, err, etext ? etext : "");
	CHECK(request_equal(r, &back), "canonical %s parses back to another request", text);
	again = bm_request_json(&back);
	CHECK(again && json_equal(canon, again), "canonical form changed: %s", text);
	free(etext);
	free(text);
	json_decref(errs);
	json_decref(canon);
	json_decref(again);
	bm_request_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bm_request r;
	json_t *errs = NULL;
	int err;

	err = bm_request_parse((const char *)data, size, &r, &errs);
	if (err) {
		check_refused(err, &r, errs);
		json_decref(errs);
		return 0;
	}
	CHECK(!errs, "errors set on success");
	/* an attach may name its pid later (POST /v1/effects/ID/attach): 0 until then */
	CHECK(r.labels && (r.mode == BM_REQ_ATTACH ? r.attach_pid >= 0 : r.argv && r.argv[0]),
	      "accepted request is incomplete");
	check_round_trip(&r);
	bm_request_free(&r);
	return 0;
}

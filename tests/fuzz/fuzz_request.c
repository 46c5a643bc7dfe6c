// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for bm_request_parse(): the one function that reads
 * bytes straight from API callers. Besides memory errors (ASan/UBSan) it
 * checks the contract: a refused body yields -EINVAL, a non-empty list of
 * {"field", "error"} strings that dumps as JSON, and nothing owned in the
 * request; an accepted body yields a canonical form that parses back to the
 * same canonical form.
 *
 * Not built by the Makefile (it needs clang's libFuzzer runtime):
 *   mkdir -p build/fuzz && clang -g -O1 -std=gnu11 -D_GNU_SOURCE -Iinclude -Iuser \
 *     -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *     tests/fuzz/fuzz_request.c user/agent/request.c user/agent/request_sandbox.c user/base/parse.c \
 *     -ljansson -o build/fuzz/fuzz_request
 *   build/fuzz/fuzz_request -max_len=8192 -max_total_time=600 CORPUS_DIR
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/request.h"

#define CHECK(cond, ...)                                              \
	do {                                                          \
		if (!(cond)) {                                        \
			fprintf(stderr, "fuzz_request: " __VA_ARGS__); \
			fputc('\n', stderr);                          \
			abort();                                      \
		}                                                     \
	} while (0)

static void check_refused(int err, const struct bm_request *r, json_t *errs)
{
	char *text;
	json_t *e;
	size_t i;

	CHECK(err == -EINVAL, "unexpected error %d", err);
	CHECK(!r->argv && !r->env && !r->labels, "a refused request still owns memory");
	CHECK(json_is_array(errs) && json_array_size(errs) > 0, "refused without errors");
	CHECK(json_array_size(errs) <= BM_REQ_MAX_ERRORS + 1, "error list not capped");
	json_array_foreach(errs, i, e) {
		CHECK(json_object_size(e) == 2 && json_is_string(json_object_get(e, "field")) &&
			      json_is_string(json_object_get(e, "error")),
		      "malformed error entry %zu", i);
	}
	/* json_dumps() fails on invalid UTF-8: every message must be sendable */
	text = json_dumps(errs, JSON_COMPACT);
	CHECK(text, "error list does not dump");
	free(text);
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
	CHECK(r.labels && (r.mode == BM_REQ_ATTACH ? r.attach_pid > 0 : r.argv && r.argv[0]),
	      "accepted request is incomplete");
	check_round_trip(&r);
	bm_request_free(&r);
	return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for bm_mcp_req_parse(): run_command's arguments, as a
 * model sends them to `burstmeter mcp` (any JSON value). A refusal is
 * -EINVAL with a capped list of {"field", "error"} that dumps as JSON and
 * nothing owned. An accepted call is one the agent accepts (mcp_req.h): the
 * attach request made of it, as mcp_run.c makes it, parses with
 * bm_request_parse(); its argv, environment, intent and sandbox are set, its
 * id is the one asked for or a generated "mcp-...", its output cap in range.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/request.h"
#include "agent/request_field.h"
#include "agent/request_intent.h"
#include "cli/mcp_req.h"
#include "fuzz.h"

/* What mcp_run.c sends the agent for an accepted call (attach_request()), pid 1 for ours. */
static json_t *attach_form(const struct bm_mcp_req *r)
{
	json_t *q = json_pack("{s:s, s:s, s:i, s:{s:s}, s:O}", "id", r->id, "mode", "attach",
			      "pid", 1, "labels", "via", "mcp", "sandbox", r->sandbox);
	json_t *argv = json_array();
	size_t i;

	CHECK(q && argv, "out of memory");
	if (*r->intent)
		json_object_set_new(q, "intent", json_string(r->intent));
	for (i = 0; r->argv[i]; i++)
		json_array_append_new(argv, json_string(r->argv[i]));
	json_object_set_new(q, "argv", argv);
	if (r->tool[0])
		json_object_set_new(q, "tool", json_string(r->tool));
	if (r->expect.set)
		json_object_set_new(q, "expect", bm_expect_request_json(&r->expect));
	if (r->traceparent[0])
		json_object_set_new(q, "traceparent", json_string(r->traceparent));
	return q;
}

static void check_accepted(const json_t *args, const struct bm_mcp_req *r)
{
	const char *want = json_string_value(json_object_get(args, "id"));
	json_t *q, *errs = NULL;
	struct bm_request back;
	char *text, *etext;
	int err;

	CHECK(r->argv && r->argv[0] && r->envp && r->intent && json_is_object(r->sandbox),
	      "an accepted call without argv, environment, intent or sandbox");
	CHECK(want ? !strcmp(r->id, want) : !strncmp(r->id, "mcp-", 4), "id \"%s\"", r->id);
	CHECK(r->max_output <= BM_MCP_OUTPUT_MAX, "max_output %zu", r->max_output);
	q = attach_form(r);
	text = json_dumps(q, JSON_COMPACT);
	CHECK(text, "the agent's request does not dump");
	err = bm_request_parse(text, strlen(text), &back, &errs);
	etext = errs ? json_dumps(errs, JSON_COMPACT) : NULL;
	CHECK(!err, "the agent refuses what the server took (%d): %s: %s", err, text,
	      etext ? etext : "");
	free(etext);
	free(text);
	json_decref(errs);
	json_decref(q);
	bm_request_free(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct bm_mcp_cfg cfg = { .max_output = BM_MCP_OUTPUT_DEFAULT };
	json_t *args, *errs = NULL;
	struct bm_mcp_req r;
	json_error_t jerr;
	int err;

	/* the arguments are whatever JSON the model sent; no arguments at all is NULL */
	args = size ? json_loadb((const char *)data, size, JSON_DECODE_ANY, &jerr) : NULL;
	if (size && !args)
		return 0;
	err = bm_mcp_req_parse(args, &cfg, &r, &errs);
	if (err) {
		CHECK(err == -EINVAL, "unexpected error %d", err);
		CHECK(!r.argv && !r.envp && !r.cwd && !r.intent && !r.sandbox,
		      "a refused call still owns memory");
		fuzz_check_field_errors(errs, BM_REQ_MAX_ERRORS);
		json_decref(errs);
	} else {
		CHECK(!errs, "errors set on success");
		check_accepted(args, &r);
		bm_mcp_req_free(&r);
	}
	json_decref(args);
	return 0;
}

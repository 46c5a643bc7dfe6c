// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/mcp_result.h"

/*
 * The outcome's advice names `burstmeter run`'s flags; a caller of the tool
 * sets its own arguments instead: the same words in those terms.
 */
static void mcp_advice(json_t *retry)
{
	static const char *const words[][2] = {
		{ "--pids", "limits.pids" }, { "--memory", "limits.memory" }, { "--cpu", "limits.cpu" },
		{ "--timeout", "timeout_seconds" },
	};
	const char *a = json_string_value(json_object_get(retry, "advice")), *p;
	char buf[1024];
	size_t i, n = 0, w;

	if (!a || !strstr(a, "--"))
		return;
	for (p = a; *p && n + 1 < sizeof(buf);) {
		for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
			w = strlen(words[i][0]);
			if (!strncmp(p, words[i][0], w) && !(p[w] == '-' || (p[w] >= 'a' && p[w] <= 'z')))
				break;
		}
		if (i < sizeof(words) / sizeof(words[0])) {
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s", words[i][1]);
			p += strlen(words[i][0]);
		} else {
			buf[n++] = *p++;
		}
	}
	if (n >= sizeof(buf))
		return;
	buf[n] = '\0';
	json_object_set_new(retry, "advice", json_string(buf));
}

json_t *bm_mcp_outcome_brief(const json_t *outcome)
{
	json_t *o = json_deep_copy(outcome);

	json_object_del(o, "histograms");
	json_object_del(o, "timeline");
	if (json_is_object(json_object_get(o, "retry")))
		mcp_advice(json_object_get(o, "retry"));
	return o;
}

/* An outcome that names no command (an older agent was not told the argv): ours. */
static json_t *with_command(const json_t *outcome, char *const *argv)
{
	json_t *o = bm_mcp_outcome_brief(outcome), *cmd = json_array();
	size_t i;

	if (json_array_size(json_object_get(o, "command"))) {
		json_decref(cmd);
		return o;
	}
	for (i = 0; argv && argv[i]; i++)
		json_array_append_new(cmd, json_string(argv[i]));
	json_object_set_new(o, "command", cmd);
	return o;
}

json_t *bm_mcp_result_text(const char *text, bool is_error)
{
	return json_pack("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text, "isError", is_error);
}

static void add_text(json_t *content, const char *text)
{
	json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", text));
}

/* "stdout (1234 bytes):\n..." when there was any */
static void add_stream(json_t *content, const char *name, const char *text, uint64_t total, bool cut)
{
	char *block;

	if (!total)
		return;
	if (asprintf(&block, "%s (%llu bytes%s):\n%s", name, (unsigned long long)total,
		     cut ? ", the middle left out" : "", text) < 0)
		return;
	add_text(content, block);
	free(block);
}

static json_t *finish(json_t *sc, const char *summary, bool is_error, const char *out, const char *err,
		      uint64_t out_n, uint64_t err_n, bool out_cut, bool err_cut)
{
	json_t *content = json_array(), *brief = json_deep_copy(sc);
	char *text;

	add_text(content, summary);
	add_stream(content, "stdout", out, out_n, out_cut);
	add_stream(content, "stderr", err, err_n, err_cut);
	/* the structured part once more as text, without the output shown above */
	json_object_del(brief, "stdout");
	json_object_del(brief, "stderr");
	text = json_dumps(brief, JSON_COMPACT | JSON_REAL_PRECISION(6));
	if (text)
		add_text(content, text);
	free(text);
	json_decref(brief);
	return json_pack("{s:o, s:o, s:b}", "content", content, "structuredContent", sc, "isError", is_error);
}

json_t *bm_mcp_result_ran(const struct bm_mcp_req *req, const char *via, const char *state,
			  const json_t *outcome, const struct bm_mcp_out *out, const struct bm_mcp_out *err)
{
	const char *reason = json_string_value(json_object_get(json_object_get(outcome, "termination"), "reason"));
	const json_t *ex = json_object_get(outcome, "exit");
	char summary[1024], *o_text, *e_text;
	bool o_cut = false, e_cut = false;
	json_t *sc, *r, *retry, *brief = with_command(outcome, req->argv);

	bm_mcp_summary(brief, summary, sizeof(summary));
	o_text = bm_mcp_out__text(out, &o_cut);
	e_text = bm_mcp_out__text(err, &e_cut);
	retry = json_object_get(brief, "retry");
	sc = json_pack("{s:s, s:s, s:s, s:s, s:O, s:O, s:s, s:s, s:I, s:I, s:b, s:o}", "effect_id",
		       req->id, "via", via, "state", state, "summary", summary,
		       "exit_code", json_object_get(ex, "code") ? json_object_get(ex, "code") : json_null(),
		       "signal", json_object_get(ex, "signal") ? json_object_get(ex, "signal") : json_null(),
		       "stdout", o_text ? o_text : "", "stderr", e_text ? e_text : "",
		       "stdout_bytes", (json_int_t)out->total, "stderr_bytes", (json_int_t)err->total,
		       "truncated", o_cut || e_cut, "outcome", brief);
	/* what the outcome lacks is left out, not made up: the outputSchema holds every value given */
	if (sc && reason)
		json_object_set_new(sc, "reason", json_string(reason));
	if (sc && json_is_object(retry))
		json_object_set(sc, "retry", retry);
	if (sc && json_object_get(outcome, "expect"))
		json_object_set_new(sc, "expectations", bm_mcp_expect_report(outcome));
	r = sc ? finish(sc, summary, !reason || strcmp(reason, "completed"), o_text ? o_text : "",
			e_text ? e_text : "", out->total, err->total, o_cut, e_cut)
	       : bm_mcp_result_text(summary, true);
	free(o_text);
	free(e_text);
	return r;
}

json_t *bm_mcp_result_refused(const struct bm_mcp_req *req, const char *via, int status, const char *why,
			      const json_t *fields, unsigned int retry_after_s)
{
	char summary[1024];
	json_t *sc, *ref;
	int n;

	n = snprintf(summary, sizeof(summary), "refused%s: %s", status == 429 ? " (429)" : status == 403 ? " (403)" : "",
		     why);
	if (retry_after_s && n > 0 && (size_t)n < sizeof(summary))
		snprintf(summary + n, sizeof(summary) - (size_t)n, "; retry after %u s", retry_after_s);
	ref = json_pack("{s:i, s:s, s:i}", "status", status, "error", why, "retry_after_s", (int)retry_after_s);
	if (ref && fields)
		json_object_set(ref, "fields", (json_t *)fields);
	sc = json_pack("{s:s, s:s, s:s, s:s, s:o}", "effect_id", req->id, "via", via, "state", "refused",
		       "summary", summary, "refused", ref);
	return sc ? finish(sc, summary, true, "", "", 0, 0, false, false) : bm_mcp_result_text(summary, true);
}

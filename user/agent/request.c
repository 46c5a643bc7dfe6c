// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Execution requests: the JSON body of POST /v1/effects, checked field by
 * field before anything is started. Every check runs even after one has
 * failed, so a caller fixes its request in one round trip, not one per
 * field. Numbers, sizes, durations and names go through parse.h only; the
 * sandbox member is in request_sandbox.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/request.h"
#include "agent/request_field.h"
#include "agent/request_intent.h"
#include "agent/request_sandbox.h"
#include "base/common.h"

#define PID_MAX 4194304		/* PID_MAX_LIMIT on 64-bit kernels */
#define ARG_MAX_BYTES 4096
#define ENV_ENTRY_MAX 131071	/* MAX_ARG_STRLEN - 1: execve() refuses a longer "K=V" */
#define INTENT_MAX 4096
#define LABEL_KEY_MAX 63
#define LABEL_VALUE_MAX 255

static const char *const top_keys[] = {
	"id", "tenant", "intent", "mode", "pid", "argv", "env", "cwd", "priority", "labels",
	"window_ms", "sandbox", "expect", "tool", "traceparent", NULL,
};

/* id (required) and tenant (optional): names that become path components and keys. */
static void name_field(struct bm_req_errs *e, json_t *root, const char *key, bool required,
		       char *out)
{
	json_t *v = json_object_get(root, key);
	const char *s;

	if (!v) {
		if (required)
			bm_req_error(e, key, "required");
		return;
	}
	s = bm_req_string(e, key, v, SIZE_MAX);
	if (s && !bm_valid_name(s))
		bm_req_error(e, key, "invalid %s \"%.*s\": expected 1-%d of [A-Za-z0-9._-], "
			     "not starting with '.'", key, bm_req_quote_len(s, BM_REQ_QUOTE_MAX), s,
			     BM_NAME_MAX);
	else if (s)
		strcpy(out, s);		/* bm_valid_name(): at most BM_NAME_MAX bytes */
}

static void parse_argv(struct bm_req_errs *e, json_t *v, struct bm_request *r)
{
	char field[BM_REQ_FIELD_MAX];
	size_t i, n, j = 0;
	const char *s;
	json_t *a;

	if (!json_is_array(v)) {
		bm_req_error(e, "argv", "must be an array of strings");
		return;
	}
	n = json_array_size(v);
	if (n < 1 || n > BM_REQ_MAX_ARGS) {
		bm_req_error(e, "argv", "%zu arguments, expected 1..%d", n, BM_REQ_MAX_ARGS);
		return;
	}
	r->argv = calloc(n + 1, sizeof(*r->argv));
	if (!r->argv) {
		e->oom = true;
		return;
	}
	json_array_foreach(v, i, a) {
		snprintf(field, sizeof(field), "argv[%zu]", i);
		s = bm_req_string(e, field, a, ARG_MAX_BYTES);
		if (!s)
			continue;
		if (!*s) {
			bm_req_error(e, field, "must not be empty");
			continue;
		}
		/* packed, so that bm_request_free() finds every string before the NULL */
		r->argv[j] = strdup(s);
		if (!r->argv[j++])
			e->oom = true;
	}
}

/* mode, and pid or argv: which of the two is required depends on the mode. */
static void parse_mode(struct bm_req_errs *e, json_t *root, struct bm_request *r)
{
	json_t *v = json_object_get(root, "mode");
	json_t *pid = json_object_get(root, "pid");
	json_t *argv = json_object_get(root, "argv");
	const char *s = v ? bm_req_string(e, "mode", v, SIZE_MAX) : "launch";
	bool known = s && (!strcmp(s, "launch") || !strcmp(s, "attach"));

	r->mode = known && !strcmp(s, "attach") ? BM_REQ_ATTACH : BM_REQ_LAUNCH;
	if (s && !known)
		bm_req_error(e, "mode", "\"%.*s\": expected \"launch\" or \"attach\"",
			     bm_req_quote_len(s, BM_REQ_QUOTE_MAX), s);
	if (pid)
		r->attach_pid = (pid_t)bm_req_int(e, root, "pid", 1, PID_MAX, 0);
	if (argv)
		parse_argv(e, argv, r);
	/* with an unknown mode, which of pid/argv belongs is unknown: checked alone */
	if (!known)
		return;
	/* attach without a pid: the cgroup is made first, the process named by POST .../attach */
	/* attach's argv only says what the process runs: its tool kind, the outcome's command */
	if (r->mode == BM_REQ_LAUNCH && json_object_get(root, "tool"))
		bm_req_error(e, "tool", "only with mode \"attach\": a launch's tool kind is its "
			     "argv[0]'s basename");
	if (r->mode == BM_REQ_LAUNCH && !argv)
		bm_req_error(e, "argv", "required with mode \"launch\"");
	if (r->mode == BM_REQ_LAUNCH && pid)
		bm_req_error(e, "pid", "not allowed with mode \"launch\"");
}

static bool valid_env_name(const char *k)
{
	return *k && (*k < '0' || *k > '9') &&
	       strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789") ==
		       strlen(k);
}

static void parse_env(struct bm_req_errs *e, json_t *v, struct bm_request *r)
{
	char field[BM_REQ_FIELD_MAX];
	const char *key, *s;
	size_t n, j = 0, klen;
	json_t *val;

	if (!json_is_object(v)) {
		bm_req_error(e, "env", "must be an object of strings");
		return;
	}
	n = json_object_size(v);
	if (n > BM_REQ_MAX_ENV) {
		bm_req_error(e, "env", "%zu variables, at most %d", n, BM_REQ_MAX_ENV);
		return;
	}
	r->env = calloc(n + 1, sizeof(*r->env));
	if (!r->env) {
		e->oom = true;
		return;
	}
	json_object_foreach(v, key, val) {
		klen = strlen(key);
		snprintf(field, sizeof(field), "env.%.*s", bm_req_quote_len(key, BM_REQ_QUOTE_MAX), key);
		if (!valid_env_name(key) || klen >= ENV_ENTRY_MAX) {
			bm_req_error(e, field,
				     "invalid variable name: expected [A-Za-z_][A-Za-z0-9_]*");
			continue;
		}
		s = bm_req_string(e, field, val, ENV_ENTRY_MAX - klen - 1);
		if (!s)
			continue;
		if (asprintf(&r->env[j], "%s=%s", key, s) < 0) {
			r->env[j] = NULL;	/* undefined after a failure */
			e->oom = true;
		} else {
			j++;
		}
	}
}

/* path is absolute: every component follows a '/' */
static bool has_dotdot(const char *path)
{
	size_t n = strlen(path);

	return strstr(path, "/../") || (n >= 3 && !strcmp(path + n - 3, "/.."));
}

static void parse_cwd(struct bm_req_errs *e, json_t *v, struct bm_request *r)
{
	const char *s = bm_req_string(e, "cwd", v, PATH_MAX - 1);

	if (!s)
		return;
	if (s[0] != '/')
		bm_req_error(e, "cwd", "\"%.*s\" is not an absolute path",
			     bm_req_quote_len(s, BM_REQ_QUOTE_MAX), s);
	else if (has_dotdot(s))
		bm_req_error(e, "cwd", "must not contain a \"..\" component");
	else if (!(r->cwd = strdup(s)))	/* at most PATH_MAX - 1 bytes */
		e->oom = true;
}

static bool valid_label_key(const char *k)
{
	size_t n = strlen(k);

	return n >= 1 && n <= LABEL_KEY_MAX &&
	       strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789_./-") == n;
}

/* r->labels exists: filled with the labels that pass. */
static void parse_labels(struct bm_req_errs *e, json_t *v, struct bm_request *r)
{
	char field[BM_REQ_FIELD_MAX];
	const char *key, *s;
	json_t *val;

	if (!json_is_object(v)) {
		bm_req_error(e, "labels", "must be an object of strings");
		return;
	}
	if (json_object_size(v) > BM_REQ_MAX_LABELS) {
		bm_req_error(e, "labels", "%zu labels, at most %d", json_object_size(v),
			     BM_REQ_MAX_LABELS);
		return;
	}
	json_object_foreach(v, key, val) {
		snprintf(field, sizeof(field), "labels.%.*s", bm_req_quote_len(key, BM_REQ_QUOTE_MAX),
			 key);
		if (!valid_label_key(key)) {
			bm_req_error(e, field, "invalid label key: expected [a-z0-9_./-]{1,%d}",
				     LABEL_KEY_MAX);
			continue;
		}
		s = bm_req_string(e, field, val, LABEL_VALUE_MAX);
		if (s && json_object_set_new(r->labels, key, json_string(s)))
			e->oom = true;
	}
}

static void parse_root(struct bm_req_errs *e, json_t *root, struct bm_request *r)
{
	const char *s;
	json_t *v;

	bm_req_unknown_keys(e, "", root, top_keys);
	name_field(e, root, "id", true, r->id);
	name_field(e, root, "tenant", false, r->tenant);
	v = json_object_get(root, "intent");
	s = v ? bm_req_string(e, "intent", v, INTENT_MAX) : NULL;
	/* jansson checked it is UTF-8; sized to it: ten thousand effects keep theirs */
	r->intent = strdup(s ? s : "");
	if (!r->intent)
		e->oom = true;
	parse_mode(e, root, r);
	v = json_object_get(root, "env");
	if (v)
		parse_env(e, v, r);
	v = json_object_get(root, "cwd");
	if (v)
		parse_cwd(e, v, r);
	r->priority = (int)bm_req_int(e, root, "priority", 1, 10, 5);
	r->labels = json_object();
	if (!r->labels)
		e->oom = true;
	v = json_object_get(root, "labels");
	if (v && r->labels)
		parse_labels(e, v, r);
	r->window_ns = (uint64_t)bm_req_int(e, root, "window_ms", 1, 1000, 10) * BM_NSEC_PER_MSEC;
	bm_sandbox_parse(e, json_object_get(root, "sandbox"), &r->sandbox);
	/* after the sandbox: a declaration is held against its limits */
	bm_expect_parse(e, json_object_get(root, "expect"), &r->sandbox, &r->expect);
	v = json_object_get(root, "tool");
	if (v)
		bm_req_tool(e, v, r->tool);
	v = json_object_get(root, "traceparent");
	if (v)
		bm_req_traceparent(e, "traceparent", v, r->traceparent);
}

/* The traceparent header: checked as the field is, and one trace, not two. */
static void parse_header_tp(struct bm_req_errs *e, const char *hdr, json_t *root,
			    struct bm_request *r)
{
	char tp[BM_TRACEPARENT_MAX + 1] = "";
	json_t *v = json_string(hdr);
	const char *field = json_string_value(json_object_get(root, "traceparent"));

	if (!v) {
		bm_req_error(e, "traceparent", "the traceparent header is not valid UTF-8");
		return;
	}
	bm_req_traceparent(e, "traceparent", v, tp);
	json_decref(v);
	if (!tp[0])
		return;
	if (field && strcmp(field, tp))
		bm_req_error(e, "traceparent", "the traceparent header and field differ: give one");
	else
		strcpy(r->traceparent, tp);
}

int bm_request_parse(const char *body, size_t len, struct bm_request *out, json_t **errs)
{
	return bm_request_parse_with(body, len, NULL, out, errs);
}

int bm_request_parse_with(const char *body, size_t len, const char *traceparent_header,
			  struct bm_request *out, json_t **errs)
{
	struct bm_req_errs e = { .arr = json_array() };
	json_t *root;
	int err;

	if (errs)
		*errs = NULL;
	memset(out, 0, sizeof(*out));
	if (!e.arr)
		return -ENOMEM;
	root = bm_req_load(&e, body, len, BM_REQ_MAX_BODY);
	if (root)
		parse_root(&e, root, out);
	if (root && traceparent_header)
		parse_header_tp(&e, traceparent_header, root, out);
	json_decref(root);
	err = bm_req_done(&e, errs);
	if (err)
		bm_request_free(out);
	return err;
}

static json_t *strv_json(char **v)
{
	json_t *a = json_array();

	for (; a && v && *v; v++)
		if (json_array_append_new(a, json_string(*v))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* "K=V" strings back into {"K": "V"}: parse_env() put the first '=' after the name. */
static json_t *env_json(char **env)
{
	json_t *o = json_object();
	const char *eq;

	for (; o && *env; env++) {
		eq = strchr(*env, '=');
		if (!eq || json_object_setn_new(o, *env, eq - *env, json_string(eq + 1))) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

json_t *bm_request_json(const struct bm_request *r)
{
	json_t *o = json_object();
	int bad = !o;

	/* a NULL o or value makes json_object_set_new() fail (and free the value) */
	bad |= json_object_set_new(o, "id", json_string(r->id));
	if (r->tenant[0])
		bad |= json_object_set_new(o, "tenant", json_string(r->tenant));
	if (r->intent && r->intent[0])
		bad |= json_object_set_new(o, "intent", json_string(r->intent));
	if (r->mode == BM_REQ_ATTACH) {
		bad |= json_object_set_new(o, "mode", json_string("attach"));
		if (r->attach_pid)
			bad |= json_object_set_new(o, "pid", json_integer(r->attach_pid));
		if (r->argv)
			bad |= json_object_set_new(o, "argv", strv_json(r->argv));
		if (r->tool[0])
			bad |= json_object_set_new(o, "tool", json_string(r->tool));
	} else {
		bad |= json_object_set_new(o, "mode", json_string("launch"));
		bad |= json_object_set_new(o, "argv", strv_json(r->argv));
	}
	if (r->env)
		bad |= json_object_set_new(o, "env", env_json(r->env));
	if (r->cwd)
		bad |= json_object_set_new(o, "cwd", json_string(r->cwd));
	bad |= json_object_set_new(o, "priority", json_integer(r->priority));
	bad |= json_object_set_new(o, "labels",
				   r->labels ? json_deep_copy(r->labels) : json_object());
	bad |= json_object_set_new(o, "window_ms",
				   json_integer((json_int_t)(r->window_ns / BM_NSEC_PER_MSEC)));
	bad |= json_object_set_new(o, "sandbox", bm_sandbox_json(&r->sandbox));
	if (r->expect.set)
		bad |= json_object_set_new(o, "expect", bm_expect_request_json(&r->expect));
	if (r->traceparent[0])
		bad |= json_object_set_new(o, "traceparent", json_string(r->traceparent));
	if (bad) {
		json_decref(o);
		errno = ENOMEM;
		return NULL;
	}
	return o;
}

static void strv_free(char ***v)
{
	char **p;

	for (p = *v; p && *p; p++)
		free(*p);
	free(*v);
	*v = NULL;
}

void bm_request_free(struct bm_request *r)
{
	if (!r)
		return;
	strv_free(&r->argv);
	strv_free(&r->env);
	free(r->intent);
	free(r->cwd);
	free((char *)r->sandbox.workspace);
	r->sandbox.workspace = NULL;
	r->intent = r->cwd = NULL;
	json_decref(r->labels);
	r->labels = NULL;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Agent execution requests (run_request.h): the fields of one agent run,
 * checked as POST /v1/effects checks its own (request_field.h helpers,
 * bm_sandbox_parse()), then against what a pod needs and what the API
 * server accepts. Every check runs even after one has failed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/request.h"
#include "agent/request_field.h"
#include "agent/request_sandbox.h"
#include "agent/run_request.h"
#include "base/common.h"
#include "base/parse.h"

#define MIB (1024ULL * 1024)
#define TIB (MIB * MIB)
#define ARG_MAX_BYTES 4096
#define ENV_VALUE_MAX 131071	/* MAX_ARG_STRLEN - 1, as the effects API */

static const char *const top_keys[] = {
	"agent_image", "agent_id", "run_id", "tenant_id", "entry_command", "env_vars", "sandbox",
	"workspace_size", "priority", "labels", NULL,
};

/* Label prefixes that are not the request's to set: ours, and the ones Kubernetes reserves. */
static const char *const reserved_domains[] = { "burstmeter.io", "kubernetes.io", "k8s.io" };

static void parse_image(struct bm_req_errs *e, json_t *root, struct bm_run_request *r)
{
	json_t *v = json_object_get(root, "agent_image");
	const char *s;
	size_t i;

	if (!v) {
		bm_req_error(e, "agent_image", "required");
		return;
	}
	s = bm_req_string(e, "agent_image", v, BM_RUN_IMAGE_MAX);
	if (!s)
		return;
	for (i = 0; s[i]; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
			break;
	if (!*s || s[i])
		bm_req_error(e, "agent_image", "%s: expected an image reference such as "
			     "\"registry.example/agent:1.2\"",
			     s[strspn(s, " \t\n\r\v\f")] ?
			     "must not contain white space or control characters" :
			     "must not be blank");
	else
		strcpy(r->image, s);	/* at most BM_RUN_IMAGE_MAX bytes */
}

/*
 * agent_id, run_id, tenant_id: each labels the pod; run_id also names it,
 * so it must be a DNS subdomain as well (lowercase).
 */
static void parse_id(struct bm_req_errs *e, json_t *root, const char *key, bool pod_name,
		     char *out)
{
	json_t *v = json_object_get(root, key);
	const char *s;
	int q;

	if (!v) {
		bm_req_error(e, key, "required");
		return;
	}
	s = bm_req_string(e, key, v, SIZE_MAX);
	if (!s)
		return;
	q = bm_req_quote_len(s, BM_REQ_QUOTE_MAX);
	if (!*s)
		bm_req_error(e, key, "must not be blank");
	else if (pod_name && (!bm_k8s_dns_subdomain(s) || strlen(s) > BM_K8S_LABEL_MAX))
		bm_req_error(e, key, "invalid %s \"%.*s\": it names the pod and labels it: "
			     "expected 1-%d of [a-z0-9.-], starting and ending with a letter or "
			     "digit", key, q, s, BM_K8S_LABEL_MAX);
	else if (!bm_k8s_label_value(s))
		bm_req_error(e, key, "invalid %s \"%.*s\": it labels the pod: expected 1-%d of "
			     "[A-Za-z0-9._-], starting and ending with a letter or digit", key, q,
			     s, BM_K8S_LABEL_MAX);
	else
		strcpy(out, s);		/* at most BM_K8S_LABEL_MAX bytes */
}

static void parse_command(struct bm_req_errs *e, json_t *v, struct bm_run_request *r)
{
	char field[BM_REQ_FIELD_MAX];
	size_t i, n, bad = 0;
	const char *s;
	json_t *a;

	n = json_array_size(v);
	if (!json_is_array(v) || n < 1 || n > BM_REQ_MAX_ARGS) {
		bm_req_error(e, "entry_command", "must be an array of 1..%d strings",
			     BM_REQ_MAX_ARGS);
		return;
	}
	json_array_foreach(v, i, a) {
		snprintf(field, sizeof(field), "entry_command[%zu]", i);
		s = bm_req_string(e, field, a, ARG_MAX_BYTES);
		if (s && !*s)
			bm_req_error(e, field, "must not be empty");
		bad += !s || !*s;
	}
	if (!bad) {
		r->command = json_deep_copy(v);
		e->oom |= !r->command;
	}
}

static bool valid_env_name(const char *k)
{
	return *k && (*k < '0' || *k > '9') &&
	       strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789") ==
		       strlen(k);
}

static void parse_env(struct bm_req_errs *e, json_t *v, struct bm_run_request *r)
{
	char field[BM_REQ_FIELD_MAX];
	const char *key, *s;
	json_t *val;

	if (!json_is_object(v) || json_object_size(v) > BM_REQ_MAX_ENV) {
		bm_req_error(e, "env_vars", "must be an object of at most %d strings",
			     BM_REQ_MAX_ENV);
		return;
	}
	json_object_foreach(v, key, val) {
		snprintf(field, sizeof(field), "env_vars.%.*s",
			 bm_req_quote_len(key, BM_REQ_QUOTE_MAX), key);
		if (!valid_env_name(key) || strlen(key) > BM_NAME_MAX) {
			bm_req_error(e, field, "invalid variable name: expected "
				     "[A-Za-z_][A-Za-z0-9_]*, at most %d", BM_NAME_MAX);
			continue;
		}
		if (!strcmp(key, BM_RUN_SOCKET_ENV)) {
			bm_req_error(e, field, "reserved: the pod's socket of the node agent");
			continue;
		}
		s = bm_req_string(e, field, val, ENV_VALUE_MAX);
		if (s && json_object_set_new(r->env, key, json_string(s)))
			e->oom = true;
	}
}

static bool reserved_key(const char *key)
{
	const char *slash = strchr(key, '/');
	size_t n = slash ? (size_t)(slash - key) : 0, d, i;

	for (i = 0; slash && i < BM_ARRAY_SIZE(reserved_domains); i++) {
		d = strlen(reserved_domains[i]);
		/* the domain itself or any subdomain of it */
		if (n >= d && !memcmp(key + n - d, reserved_domains[i], d) &&
		    (n == d || key[n - d - 1] == '.'))
			return true;
	}
	return false;
}

static void parse_labels(struct bm_req_errs *e, json_t *v, struct bm_run_request *r)
{
	char field[BM_REQ_FIELD_MAX];
	const char *key, *s;
	json_t *val;

	if (!json_is_object(v) || json_object_size(v) > BM_REQ_MAX_LABELS) {
		bm_req_error(e, "labels", "must be an object of at most %d strings",
			     BM_REQ_MAX_LABELS);
		return;
	}
	json_object_foreach(v, key, val) {
		snprintf(field, sizeof(field), "labels.%.*s",
			 bm_req_quote_len(key, BM_REQ_QUOTE_MAX), key);
		if (!bm_k8s_label_key(key)) {
			bm_req_error(e, field, "invalid label key: expected [prefix/]name, "
				     "the name 1-%d of [A-Za-z0-9._-] starting and ending with a "
				     "letter or digit, the prefix a DNS subdomain",
				     BM_K8S_LABEL_MAX);
			continue;
		}
		if (reserved_key(key)) {
			bm_req_error(e, field, "reserved prefix: burstmeter.io/, "
				     "kubernetes.io/ and k8s.io/ are not the request's to set");
			continue;
		}
		s = bm_req_string(e, field, val, SIZE_MAX);
		if (s && !bm_k8s_label_value(s))
			bm_req_error(e, field, "invalid label value \"%.*s\": expected at "
				     "most %d of [A-Za-z0-9._-], starting and ending with a letter "
				     "or digit",
				     bm_req_quote_len(s, BM_REQ_QUOTE_MAX), s, BM_K8S_LABEL_MAX);
		else if (s && json_object_set_new(r->labels, key, json_string(s)))
			e->oom = true;
	}
}

/* A request or limit left out is the other one: a pod gets both, like a Guaranteed one. */
static void pair(struct bm_req_errs *e, json_t *sb, const char *what, uint64_t *req,
		 uint64_t *lim)
{
	char rk[32], lk[32];

	snprintf(rk, sizeof(rk), "%s_request", what);
	snprintf(lk, sizeof(lk), "%s_limit", what);
	if (!json_object_get(sb, rk) && !json_object_get(sb, lk)) {
		snprintf(lk, sizeof(lk), "sandbox.%s_limit", what);
		bm_req_error(e, lk, "required (or sandbox.%s_request): a pod's %s request "
			     "and limit", what, what);
	}
	if (!*req)
		*req = *lim;
	if (!*lim)
		*lim = *req;
}

/* What a pod needs of the sandbox beyond what the effects API checks. */
static void check_sandbox(struct bm_req_errs *e, json_t *sb, struct bm_sandbox *s)
{
	static const char *const flags[] = {
		"read_only_root_fs", "run_as_non_root", "drop_all_capabilities",
	};
	char field[64];
	json_t *v;
	size_t i;

	if (!json_is_object(sb)) {
		if (!sb)
			bm_req_error(e, "sandbox", "required: the pod's resources and deadline");
		return;		/* else bm_sandbox_parse() said so */
	}
	pair(e, sb, "cpu", &s->cpu_request_milli, &s->cpu_limit_milli);
	pair(e, sb, "memory", &s->memory_request, &s->memory_limit);
	if (!json_object_get(sb, "timeout_seconds") && !json_object_get(sb, "timeout_ns"))
		bm_req_error(e, "sandbox.timeout_seconds", "required: the pod's "
			     "activeDeadlineSeconds");
	if (json_object_get(sb, "pids_limit"))
		bm_req_error(e, "sandbox.pids_limit", "not supported for a pod: the kubelet's "
			     "podPidsLimit bounds a pod's tasks");
	for (i = 0; i < BM_ARRAY_SIZE(flags); i++) {
		v = json_object_get(sb, flags[i]);
		snprintf(field, sizeof(field), "sandbox.%s", flags[i]);
		if (json_is_false(v))
			bm_req_error(e, field, "must be true or left out: a pod is always "
				     "hardened");
	}
	s->read_only_root_fs = s->run_as_non_root = s->drop_all_capabilities = true;
	if (!s->max_ephemeral_storage)
		s->max_ephemeral_storage = BM_RUN_DEFAULT_VOLUME;
}

static void parse_root(struct bm_req_errs *e, json_t *root, struct bm_run_request *r)
{
	json_t *sb = json_object_get(root, "sandbox"), *v;

	bm_req_unknown_keys(e, "", root, top_keys);
	parse_image(e, root, r);
	parse_id(e, root, "agent_id", false, r->agent_id);
	parse_id(e, root, "run_id", true, r->run_id);
	parse_id(e, root, "tenant_id", false, r->tenant_id);
	v = json_object_get(root, "entry_command");
	if (v)
		parse_command(e, v, r);
	v = json_object_get(root, "env_vars");
	if (v)
		parse_env(e, v, r);
	v = json_object_get(root, "labels");
	if (v)
		parse_labels(e, v, r);
	r->workspace_bytes = BM_RUN_DEFAULT_VOLUME;
	v = json_object_get(root, "workspace_size");
	if (v)
		bm_req_quantity(e, "workspace_size", v, bm_parse_k8s_bytes, MIB, 64 * TIB,
				"a size 1Mi..64Ti (bytes, or e.g. \"10Gi\")", &r->workspace_bytes);
	r->priority = (int)bm_req_int(e, root, "priority", 1, 10, 5);
	bm_sandbox_parse(e, sb, &r->sandbox);
	check_sandbox(e, sb, &r->sandbox);
}

int bm_run_request_parse(const char *body, size_t len, struct bm_run_request *out,
			 json_t **errs)
{
	struct bm_req_errs e = { .arr = json_array() };
	json_t *root;
	int err;

	if (errs)
		*errs = NULL;
	memset(out, 0, sizeof(*out));
	out->env = json_object();
	out->labels = json_object();
	if (!e.arr || !out->env || !out->labels) {
		json_decref(e.arr);
		bm_run_request_free(out);
		return -ENOMEM;
	}
	root = bm_req_load(&e, body, len, BM_REQ_MAX_BODY);
	if (root)
		parse_root(&e, root, out);
	json_decref(root);
	err = bm_req_done(&e, errs);
	if (err)
		bm_run_request_free(out);
	return err;
}

void bm_run_request_free(struct bm_run_request *r)
{
	if (!r)
		return;
	json_decref(r->command);
	json_decref(r->env);
	json_decref(r->labels);
	free((char *)r->sandbox.workspace);
	r->sandbox.workspace = NULL;
	r->command = r->env = r->labels = NULL;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for bm_run_request_parse(), `burstmeter podspec`'s input,
 * and bm_podspec_build() on what it accepts. A refused request: -EINVAL, a
 * capped list of {"field", "error"} that dumps as JSON, nothing owned. An
 * accepted one holds only what the API server takes (the pod's name a DNS
 * subdomain of at most 63, label keys and values valid, a priority 1..10),
 * and its manifests are what `kubectl apply` would not refuse for a name or
 * a label: every object's name a DNS subdomain, every label valid, the Pod
 * named by run_id with its priority's class and a deadline; the same bytes
 * twice.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/podspec.h"
#include "agent/request_field.h"
#include "agent/run_request.h"
#include "base/k8sname.h"
#include "fuzz.h"

static void check_labels(json_t *labels, const char *what)
{
	const char *k;
	json_t *v;

	CHECK(json_is_object(labels), "%s: labels not an object", what);
	json_object_foreach(labels, k, v) {
		CHECK(bm_k8s_label_key(k), "%s: label key \"%s\" the API server refuses", what, k);
		CHECK(json_is_string(v) && bm_k8s_label_value(json_string_value(v)),
		      "%s: label %s's value refused by the API server", what, k);
	}
}

static void check_accepted(const struct bm_run_request *r)
{
	const char *k;
	json_t *v;

	CHECK(r->image[0] && !strpbrk(r->image, " \t\n\r\f\v"), "image \"%s\" accepted", r->image);
	CHECK(bm_k8s_dns_subdomain(r->run_id) && strlen(r->run_id) <= BM_K8S_LABEL_MAX,
	      "run_id \"%s\" accepted", r->run_id);
	CHECK(bm_k8s_label_value(r->agent_id) && r->agent_id[0], "agent_id \"%s\" accepted",
	      r->agent_id);
	CHECK(bm_k8s_label_value(r->tenant_id) && r->tenant_id[0], "tenant_id \"%s\" accepted",
	      r->tenant_id);
	CHECK(r->priority >= 1 && r->priority <= 10, "priority %d accepted", r->priority);
	CHECK(json_is_object(r->env) && !json_object_get(r->env, BM_RUN_SOCKET_ENV),
	      "env_vars not an object, or with the reserved socket variable");
	json_object_foreach(r->env, k, v)
		CHECK(json_is_string(v), "env_vars.%s not a string", k);
	CHECK(!r->command || (json_is_array(r->command) && json_array_size(r->command) > 0),
	      "an empty entry_command accepted");
	check_labels(r->labels, "the request");
}

static void check_manifests(const struct bm_run_request *r)
{
	const struct bm_podspec_opts o = { .agent_socket = "/run/burstmeter/api.sock",
					   .socket_gid = -1 };
	json_t *list = bm_podspec_build(r, &o), *again = bm_podspec_build(r, &o), *item, *pod;
	char *text;
	size_t i;

	CHECK(list && again, "bm_podspec_build failed on an accepted request");
	text = json_dumps(list, JSON_COMPACT);
	CHECK(text, "the manifests do not dump as JSON");
	CHECK(json_equal(list, again), "two builds of one request differ: %s", text);
	json_array_foreach(json_object_get(list, "items"), i, item) {
		json_t *meta = json_object_get(item, "metadata");
		const char *name = json_string_value(json_object_get(meta, "name"));

		CHECK(name && bm_k8s_dns_subdomain(name), "item %zu: name refused: %s", i, text);
		check_labels(json_object_get(meta, "labels"), name);
	}
	pod = json_array_get(json_object_get(list, "items"), 0);
	CHECK(!strcmp(json_string_value(json_object_get(pod, "kind")) ?: "", "Pod") &&
		      !strcmp(json_string_value(json_object_get(json_object_get(pod, "metadata"),
							      "name")) ?: "", r->run_id),
	      "the first item is not the Pod named by run_id: %s", text);
	CHECK(!strcmp(json_string_value(json_object_get(json_object_get(pod, "spec"),
						       "priorityClassName")) ?: "",
		      bm_podspec_priority_class(r->priority)),
	      "the Pod's priorityClassName is not its priority's: %s", text);
	CHECK(json_integer_value(json_object_get(json_object_get(pod, "spec"),
						 "activeDeadlineSeconds")) > 0,
	      "the Pod has no deadline: %s", text);
	CHECK(json_array_size(json_object_get(list, "items")) ==
		      (r->sandbox.network_policy == BM_NET_FULL ? 1u : 2u),
	      "a NetworkPolicy where the policy is full, or none where it is not: %s", text);
	free(text);
	json_decref(list);
	json_decref(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bm_run_request r;
	json_t *errs = NULL;
	int err;

	err = bm_run_request_parse((const char *)data, size, &r, &errs);
	if (err) {
		CHECK(err == -EINVAL, "unexpected error %d", err);
		CHECK(!r.command && !r.env && !r.labels && !r.sandbox.workspace,
		      "a refused request still owns memory");
		fuzz_check_field_errors(errs, BM_REQ_MAX_ERRORS);
		json_decref(errs);
		return 0;
	}
	CHECK(!errs, "errors set on success");
	check_accepted(&r);
	check_manifests(&r);
	bm_run_request_free(&r);
	return 0;
}

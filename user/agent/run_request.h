/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Agent execution requests: one agent run, to become one Kubernetes pod
 * (`burstmeter podspec`). Validated like POST /v1/effects (the same field
 * helpers and the same sandbox parser), plus what the API server would
 * refuse: every bad field is reported, not just the first.
 *
 *   agent_image     required, no blank or white space
 *   agent_id        required, a label value (it labels the pod)
 *   run_id          required, the pod's name and a label value:
 *                   1-63 of [a-z0-9.-], starting and ending alphanumeric
 *   tenant_id       required, a label value
 *   entry_command   optional: the container's command (else the image's)
 *   env_vars        optional: {"NAME": "value"}; BURSTMETER_SOCKET is ours
 *   sandbox         required: the effects API's, with a timeout, CPU and
 *                   memory (request or limit; the one left out is the
 *                   other); pids_limit has no pod field; the hardening
 *                   flags may only be true (a pod is always hardened)
 *   workspace_size  optional, default 1Gi; sandbox.max_ephemeral_storage
 *                   (the /tmp volume) default 1Gi
 *   priority        1-10, default 5
 *   labels          optional: Kubernetes label keys and values, not under
 *                   burstmeter.io/, kubernetes.io/ or k8s.io/
 */
#ifndef BM_RUN_REQUEST_H
#define BM_RUN_REQUEST_H

#include <jansson.h>
#include <stdint.h>

#include "base/k8sname.h"
#include "effect/sandbox.h"

#define BM_RUN_IMAGE_MAX 4096
#define BM_RUN_DEFAULT_VOLUME (1024ULL * 1024 * 1024)	/* workspace and /tmp: 1Gi */
#define BM_RUN_SOCKET_ENV "BURSTMETER_SOCKET"

struct bm_run_request {
	char image[BM_RUN_IMAGE_MAX + 1];
	char agent_id[BM_K8S_LABEL_MAX + 1];
	char run_id[BM_K8S_LABEL_MAX + 1];
	char tenant_id[BM_K8S_LABEL_MAX + 1];
	json_t *command;	/* array of strings, owned; NULL: the image's entrypoint */
	json_t *env;		/* object name -> string, owned, in request order; never NULL */
	json_t *labels;		/* object key -> string, owned; never NULL */
	uint64_t workspace_bytes;
	int priority;
	/* requests and limits of CPU and memory, the timeout and /tmp's size all set */
	struct bm_sandbox sandbox;
};

/*
 * Parse and validate a request (a JSON object of at most BM_REQ_MAX_BODY
 * bytes). Returns 0; -EINVAL with *errs a new array of {"field", "error"},
 * one per bad field (as bm_request_parse()); -ENOMEM. errs may be NULL. On
 * error *out owns nothing.
 */
int bm_run_request_parse(const char *body, size_t len, struct bm_run_request *out,
			 json_t **errs);

/* Free what the request owns; NULL-safe. */
void bm_run_request_free(struct bm_run_request *r);

#endif /* BM_RUN_REQUEST_H */

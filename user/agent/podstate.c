// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Pod objects -> run states (podstate.h). The phase says where a pod is;
 * the reason comes from what the API keeps beside it, read in the order
 * that names the cause rather than the symptom: an eviction or a deadline
 * kills containers too, so they come before the containers' exit codes,
 * and an OOM kill before a plain non-zero exit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/podstate.h"
#include "base/common.h"

static const char *const state_names[] = {
	[BM_RUN_QUEUED] = "queued",	   [BM_RUN_RUNNING] = "running",
	[BM_RUN_SUCCEEDED] = "succeeded", [BM_RUN_FAILED] = "failed",
	[BM_RUN_TIMED_OUT] = "timed_out", [BM_RUN_OOM_KILLED] = "oom_killed",
	[BM_RUN_EVICTED] = "evicted",	   [BM_RUN_UNKNOWN] = "unknown",
};

/* The waiting reasons of a container whose image cannot be had: it will not start by itself. */
static const char *const pull_failures[] = {
	"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
	"RegistryUnavailable", "SignatureValidationFailed", "ErrImageInspect",
};
static const char *const create_failures[] = {
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError",
	"PreCreateHookError", "PreStartHookError",
};

/* DisruptionTarget's reasons (Kubernetes 1.26+): who took the pod away. */
static const struct {
	const char *api, *reason;
} disruptions[] = {
	{ "PreemptionByScheduler", "preempted" },
	{ "PreemptionByKubeScheduler", "preempted" },	/* its name in 1.25 */
	{ "EvictionByEvictionAPI", "eviction_api" },
	{ "DeletionByTaintManager", "node_taint" },
	{ "DeletionByPodGC", "node_gone" },
	{ "TerminationByKubelet", "node_pressure" },
};

const char *bm_run_state_name(enum bm_run_state s)
{
	return (unsigned int)s < BM_ARRAY_SIZE(state_names) ? state_names[s] : NULL;
}

bool bm_run_state_terminal(enum bm_run_state s)
{
	return s != BM_RUN_QUEUED && s != BM_RUN_RUNNING && s != BM_RUN_UNKNOWN;
}

static const char *str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static bool in(const char *s, const char *const *list, size_t n)
{
	size_t i;

	for (i = 0; s && i < n; i++)
		if (!strcmp(s, list[i]))
			return true;
	return false;
}

/* Copy at most len - 1 bytes of s, not splitting a UTF-8 character, control bytes blanked. */
static void copy_text(char *dst, size_t len, const char *s)
{
	size_t n = s ? strnlen(s, len) : 0;

	if (n == len) {
		n = len - 1;	/* s[n] is left out: back up to the start of its character */
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	if (n)
		memcpy(dst, s, n);
	dst[n] = '\0';
	bm_blank_controls(dst, ' ');
}

static int set(struct bm_podstate *st, enum bm_run_state s, const char *reason)
{
	st->state = s;
	snprintf(st->reason, sizeof(st->reason), "%s", reason);
	return 0;
}

static json_t *condition(json_t *status, const char *type)
{
	json_t *conds = json_object_get(status, "conditions"), *c;
	size_t i;

	json_array_foreach(conds, i, c)
		if (!strcmp(str(c, "type") ?: "", type))
			return c;
	return NULL;
}

/* The condition of that type when its status is "True", else NULL. */
static json_t *condition_true(json_t *status, const char *type)
{
	json_t *c = condition(status, type);

	return !strcmp(str(c, "status") ?: "", "True") ? c : NULL;
}

/* A container status's current state of that kind ("waiting", "running", "terminated"). */
static json_t *cstate(json_t *cs, const char *kind)
{
	return json_object_get(json_object_get(cs, "state"), kind);
}

static void about(struct bm_podstate *st, json_t *cs, json_t *detail)
{
	json_t *code = json_object_get(detail, "exitCode");

	copy_text(st->container, sizeof(st->container), str(cs, "name"));
	if (json_is_integer(code))
		st->exit_code = (int)json_integer_value(code);
	copy_text(st->message, sizeof(st->message), str(detail, "message"));
}

/*
 * The first container (init containers first: they ran first) whose
 * terminated state has that reason (NULL: any) and, with nonzero, a
 * non-zero exit code. init: search only the init containers, or only the
 * others.
 */
static json_t *terminated(json_t *status, bool init, const char *reason, bool nonzero,
			  json_t **detail)
{
	json_t *list = json_object_get(status, init ? "initContainerStatuses"
						    : "containerStatuses");
	json_t *cs, *t;
	size_t i;

	json_array_foreach(list, i, cs) {
		t = cstate(cs, "terminated");
		if (!json_is_object(t) || (reason && strcmp(str(t, "reason") ?: "", reason)))
			continue;
		if (nonzero && !json_integer_value(json_object_get(t, "exitCode")))
			continue;
		*detail = t;
		return cs;
	}
	return NULL;
}

static const char *disruption(json_t *cond)
{
	const char *r = str(cond, "reason");
	size_t i;

	for (i = 0; r && i < BM_ARRAY_SIZE(disruptions); i++)
		if (!strcmp(r, disruptions[i].api))
			return disruptions[i].reason;
	return "disrupted";
}

/* The non-zero exit of a container, init ones first; false when there is none. */
static bool exited(json_t *status, struct bm_podstate *st)
{
	json_t *cs, *t;

	cs = terminated(status, true, "OOMKilled", false, &t);
	if (!cs)
		cs = terminated(status, false, "OOMKilled", false, &t);
	if (cs) {
		about(st, cs, t);
		return !set(st, BM_RUN_OOM_KILLED, "memory_limit");
	}
	cs = terminated(status, true, NULL, true, &t);
	if (cs) {
		about(st, cs, t);
		return !set(st, BM_RUN_FAILED, "init_failed");
	}
	cs = terminated(status, false, NULL, true, &t);
	if (cs) {
		about(st, cs, t);
		return !set(st, BM_RUN_FAILED, "exited");
	}
	return false;
}

static int failed(json_t *status, struct bm_podstate *st)
{
	const char *reason = str(status, "reason");
	json_t *dt = condition_true(status, "DisruptionTarget");

	copy_text(st->message, sizeof(st->message), str(status, "message"));
	if (reason && !strcmp(reason, "DeadlineExceeded"))
		return set(st, BM_RUN_TIMED_OUT, "deadline_exceeded");
	if (reason && !strcmp(reason, "Evicted"))
		return set(st, BM_RUN_EVICTED, "node_pressure");
	/* graceful node shutdown: "Terminated" (1.21+), "Shutdown" before */
	if (reason && (!strcmp(reason, "Terminated") || !strcmp(reason, "Shutdown")))
		return set(st, BM_RUN_EVICTED, "node_shutdown");
	if (dt) {
		copy_text(st->message, sizeof(st->message), str(dt, "message"));
		return set(st, BM_RUN_EVICTED, disruption(dt));
	}
	if (exited(status, st))
		return 0;
	/* the kubelet refused it at admission (OutOfcpu, NodeAffinity, ...): no container ran */
	if (reason) {
		copy_text(st->message, sizeof(st->message), str(status, "message") ?: reason);
		return set(st, BM_RUN_FAILED, "rejected");
	}
	return set(st, BM_RUN_FAILED, "error");
}

/* Deleted before it ended: by an eviction, or by someone, with what its containers said. */
static int gone(json_t *status, struct bm_podstate *st)
{
	json_t *dt = condition_true(status, "DisruptionTarget"), *cs, *t;

	if (dt) {
		copy_text(st->message, sizeof(st->message), str(dt, "message"));
		return set(st, BM_RUN_EVICTED, disruption(dt));
	}
	cs = terminated(status, false, NULL, false, &t);
	if (cs)
		about(st, cs, t);
	return set(st, BM_RUN_FAILED, "deleted");
}

/* What a Pending pod waits for: a node, its init containers, its sandbox, its image. */
static int queued(json_t *status, struct bm_podstate *st)
{
	static const char *const lists[] = { "initContainerStatuses", "containerStatuses" };
	bool creating = false;
	json_t *cs, *w;
	size_t l, i;

	set(st, BM_RUN_QUEUED, condition_true(status, "PodScheduled") ? "scheduled" : "pending");
	cs = condition(status, "PodScheduled");
	if (!strcmp(str(cs, "status") ?: "", "False")) {
		copy_text(st->message, sizeof(st->message), str(cs, "message"));
		return set(st, BM_RUN_QUEUED, "unschedulable");
	}
	for (l = 0; l < BM_ARRAY_SIZE(lists); l++) {
		json_array_foreach(json_object_get(status, lists[l]), i, cs) {
			w = cstate(cs, "waiting");
			if (in(str(w, "reason"), pull_failures, BM_ARRAY_SIZE(pull_failures))) {
				about(st, cs, w);
				return set(st, BM_RUN_QUEUED, "image_pull_failed");
			}
			if (in(str(w, "reason"), create_failures, BM_ARRAY_SIZE(create_failures))) {
				about(st, cs, w);
				return set(st, BM_RUN_QUEUED, "create_failed");
			}
			/* an init container not yet terminated (with 0) holds the others back */
			if (!l && !json_is_object(cstate(cs, "terminated"))) {
				about(st, cs, NULL);
				return set(st, BM_RUN_QUEUED, "initializing");
			}
			creating |= l && json_is_object(w);
		}
	}
	if (!creating)
		return 0;
	/* the sandbox is up (1.29+; PodHasNetwork before): what is left is mostly the pull */
	if (condition_true(status, "PodReadyToStartContainers") ||
	    condition_true(status, "PodHasNetwork"))
		return set(st, BM_RUN_QUEUED, "image_pulling");
	return set(st, BM_RUN_QUEUED, "starting");
}

int bm_podstate_of(json_t *pod, bool deleted, struct bm_podstate *out)
{
	json_t *meta = json_object_get(pod, "metadata"), *kind = json_object_get(pod, "kind");
	const char *phase;
	json_t *status;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->exit_code = -1;
	/* no kind is a pod (a List's items may leave it out); any other kind is not */
	if (!json_is_object(pod) || !json_is_object(meta) ||
	    (kind && strcmp(json_string_value(kind) ?: "", "Pod")))
		return -EINVAL;
	status = json_object_get(pod, "status");
	phase = str(status, "phase") ?: "";
	for (i = 0; phase[i] && i + 1 < sizeof(out->phase); i++)
		out->phase[i] = strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				       "0123456789_-", phase[i]) ? phase[i] : '_';
	deleted |= json_is_string(json_object_get(meta, "deletionTimestamp"));
	if (!strcmp(phase, "Succeeded")) {
		out->exit_code = 0;
		return set(out, BM_RUN_SUCCEEDED, "completed");
	}
	if (!strcmp(phase, "Failed"))
		return failed(status, out);
	if (deleted)
		return gone(status, out);
	if (!strcmp(phase, "Pending"))
		return queued(status, out);
	if (!strcmp(phase, "Running"))
		return set(out, BM_RUN_RUNNING, "started");
	return set(out, BM_RUN_UNKNOWN, out->phase[0] ? out->phase : "none");
}

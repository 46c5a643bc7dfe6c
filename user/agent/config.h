/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The node agent's configuration: YAML through libcyaml (unknown keys and
 * malformed values are errors with FILE:LINE:COLUMN), defaults embedded,
 * command-line flags over both.
 */
#ifndef BM_AGENT_CFG_H
#define BM_AGENT_CFG_H

#include <limits.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/budget.h"
#include "base/parse.h"

#define BM_AGENT_SOCKET "/run/burstmeter/api.sock"
#define BM_AGENT_STATE_DIR "/var/lib/burstmeter"
#define BM_AGENT_PIN_DIR "/sys/fs/bpf/burstmeter"
/* Prometheus' port registry has 9100-9999 for exporters; 9477 is not taken there. */
#define BM_AGENT_METRICS "127.0.0.1:9477"
#define BM_AGENT_MAX_TENANTS 256

struct bm_tenant_map {
	uid_t uid;
	char tenant[BM_NAME_MAX + 1];
};

/* A tenant's budgets of its own (budgets.tenants): the defaults, with what it names replaced. */
struct bm_tenant_budget {
	char tenant[BM_NAME_MAX + 1];
	struct bm_budget_cfg b;
};

/* What admission does while the node is over admit_cpu_pressure or admit_mem_available. */
enum bm_pressure_action {
	BM_PRESSURE_PAUSE,		/* nothing starts */
	BM_PRESSURE_THROTTLE_TOP,	/* the top contributor held (CPU: capped); others start */
};

struct bm_agent_cfg {
	char socket[PATH_MAX];
	mode_t socket_mode;
	char state_dir[PATH_MAX];
	char pin_dir[PATH_MAX];
	char metrics[128];		/* host:port for /metrics over TCP; "" = off */
	char policy[PATH_MAX];		/* policy file applied to every effect; "" = embedded */
	/*
	 * The effects' parent cgroup, from the node's root (base/cgroup_node.h):
	 * outside a container's cgroup, so that they outlive it. "" = our own.
	 */
	char cgroup_parent[256];
	/*
	 * Where this node's kubelet keeps pods, as a cgroup v2 path ("" the root:
	 * /kubepods.slice or /kubepods there): a caller in a pod's container below
	 * it is that pod (its effects go in the pod's cgroup); a look-alike tree
	 * anywhere else is nobody's pod.
	 */
	char kubepods_root[256];
	char pod_tenants[PATH_MAX];	/* "<pod uid> <tenant>" per line; "": pod-<uid> */
	uint64_t window_ns;
	unsigned int max_running;	/* effects running at once on the node */
	unsigned int max_queued;	/* beyond it: 429 */
	unsigned int tenant_max_running;	/* a tenant's share of max_running */
	double admit_cpu_pressure;	/* node PSI cpu some avg10 (%) above which nothing starts */
	char admit_cpu_pressure_file[PATH_MAX];	/* that PSI: the node's, or a cgroup's cpu.pressure */
	uint64_t admit_mem_available;	/* MemAvailable (bytes) below which nothing starts */
	char admit_meminfo_file[PATH_MAX];	/* where MemAvailable is read: /proc/meminfo */
	unsigned int max_tools;		/* tool kinds kept as /metrics labels before "other" */
	unsigned int max_metric_tenants;	/* tenants kept as /metrics labels before "other" */
	unsigned int uid_min, uid_max;	/* the uids given to tenants that have none of their own */
	uint64_t max_log_bytes;		/* an effect's output kept at most, the rest dropped */
	uint64_t retention_ns;		/* ended effects (rows, logs) kept this long */
	unsigned int retention_effects;	/* and at most this many of them */
	unsigned int max_conns_per_uid;	/* API connections a uid may hold at once */
	unsigned int max_conns;		/* all uids together; an eighth kept for root, one for newcomers */
	unsigned int idle_timeout_s;	/* an API connection with nothing to say is closed */
	uint32_t ring_bytes;		/* the meter's ring buffer (a power of 2) */
	struct bm_tenant_map tenants[BM_AGENT_MAX_TENANTS];
	unsigned int n_tenants;
	enum bm_pressure_action pressure_action;
	/*
	 * enforcement: meter: no controllers, the meter holds every ceiling (its
	 * kernel kills), as run --meter-only; a node that delegates none, and tests
	 */
	bool meter_only;
	/* budgets: every tenant's, unless it has its own; no rate: no budget */
	struct bm_budget_cfg budget;
	struct bm_tenant_budget budgets[BM_AGENT_MAX_TENANTS];
	unsigned int n_budgets;
	uint64_t fair_half_life_ns;	/* how fast fair admission forgets a tenant's use */
	bool fair_cpu_yield;		/* a tenant over its share of the CPUs yields (budgets.fair_cpu) */
};

void bm_agent_cfg_default(struct bm_agent_cfg *c);

/*
 * Parse the YAML text over c (name is used in messages). Returns 0 or -EINVAL
 * (err: "NAME:LINE:COL: ..."). A failed parse may have changed some of c.
 */
int bm_agent_cfg_parse(struct bm_agent_cfg *c, const char *text, size_t len, const char *name,
		       char *err, size_t errlen);

/* Load FILE over the defaults. Returns 0, -EINVAL (err: "FILE:LINE:COL: ...") or -errno. */
int bm_agent_cfg_load(struct bm_agent_cfg *c, const char *path, char *err, size_t errlen);

/* The budgets of tenant: its own, else the defaults. */
const struct bm_budget_cfg *bm_agent_cfg_budget(const struct bm_agent_cfg *c, const char *tenant);

/* The tenant of a caller's uid: the mapping, else "uid-<uid>". */
void bm_agent_cfg_tenant(const struct bm_agent_cfg *c, uid_t uid, char *out, size_t len);

#endif /* BM_AGENT_CFG_H */

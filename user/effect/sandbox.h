/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The sandbox of an effect, as an execution request (or `run`'s flags)
 * declares it: ceilings and quantities, the network policy and its egress
 * CIDRs, the hardening flags and the workspace; and the names of what
 * holds each part (the outcome's "enforcement"). sandbox_exec.h turns it
 * into what holds it.
 */
#ifndef BM_SANDBOX_H
#define BM_SANDBOX_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/cidr.h"

#define BM_REQ_MAX_CIDRS 64

enum bm_netpol {
	BM_NET_NONE,
	BM_NET_EGRESS_RESTRICTED,
	BM_NET_EGRESS_ALLOW_LIST,
	BM_NET_FULL,
};

struct bm_sandbox {
	uint64_t cpu_request_milli, cpu_limit_milli;	/* 0 = not given */
	uint64_t memory_request, memory_limit;		/* bytes */
	uint64_t pids_limit;				/* tasks (burstmeter's own, beyond the seed's) */
	uint64_t timeout_ns;
	uint64_t max_ephemeral_storage;			/* bytes */
	uint64_t io_read_bps, io_write_bps, io_iops;	/* per disk behind its paths */
	enum bm_netpol network_policy;			/* default full */
	struct bm_cidr cidrs[BM_REQ_MAX_CIDRS];
	unsigned int n_cidrs;
	bool read_only_root_fs, run_as_non_root, drop_all_capabilities;
	/*
	 * absolute, bound read-write (NULL or "": none); not owned here: a
	 * request's (bm_request_free()) or run's own buffer
	 */
	const char *workspace;
};

/* Its workspace, "" for none. */
static inline const char *bm_sandbox_workspace(const struct bm_sandbox *sb)
{
	return sb->workspace ? sb->workspace : "";
}

/* "none", "egress_restricted", "egress_allow_list", "full"; NULL if out of range. */
const char *bm_netpol_name(enum bm_netpol p);
/* The policy named s (one of those names): 0, or -EINVAL. */
int bm_netpol_parse(const char *s, enum bm_netpol *out);
/*
 * Does c allow anything p does not (a limit lifted or raised, a looser
 * network policy or a CIDR outside p's, a hardening flag of p's off)? The
 * request field that does, or NULL if c is no looser than p.
 */
const char *bm_sandbox_looser(const struct bm_sandbox *c, const struct bm_sandbox *p);
/*
 * The sandbox in a request's form ("sandbox" of POST /v1/effects, and of
 * an outcome): sizes as integer bytes, CPU as "<n>m", the timeout as
 * timeout_ns, unset quantities left out. NULL + errno on failure.
 */
json_t *bm_sandbox_json(const struct bm_sandbox *sb);

/* What holds each part of a sandbox, by the outcome's "enforcement" key. */
enum bm_sbx {
	BM_SBX_NETWORK,		/* "network" */
	BM_SBX_RO_ROOT,		/* "read_only_root" */
	BM_SBX_TMP,		/* "tmp" */
	BM_SBX_WORKSPACE,	/* "workspace" */
	BM_SBX_USER,		/* "user" */
	BM_SBX_CAPS,		/* "caps" */
	BM_SBX_ENV,		/* "env" */
	BM_SBX_CWD,		/* "cwd" */
	BM_SBX_NAMESPACES,	/* "namespaces" */
	BM_SBX_SHM,		/* "shm" */
	BM_SBX_SOCKET,		/* "socket" */
	BM_SBX__MAX,
};

#define BM_SBX_MECH_LEN 160

struct bm_sandbox_enf {
	char mech[BM_SBX__MAX][BM_SBX_MECH_LEN];	/* "": not applied */
	/*
	 * mech[k] is what the caller of an attach says it made (its namespaces
	 * and identity are its own choice, SECURITY.md): its word, not the
	 * agent's, and said so ("by": {"caps": "caller", ...}).
	 */
	bool by_caller[BM_SBX__MAX];
};

/* The outcome's key for k ("network", ...). */
const char *bm_sbx_name(enum bm_sbx k);
/*
 * Add every applied mechanism of enf to obj (keys already there are kept),
 * and obj's "by" {key: "caller"} for those by_caller. 0 or -ENOMEM.
 */
int bm_sandbox_enf_json(const struct bm_sandbox_enf *enf, json_t *obj);
/*
 * An attach's caller's word of what it made (POST .../exit "enforcement",
 * as bm_sandbox_enf_json() wrote it): every key a sandbox key, every value
 * a string of printable characters that fits. 0 with enf filled (by_caller
 * not set: the taker says whose it is), or -EINVAL with *bad the key.
 */
int bm_sandbox_enf_parse(const json_t *obj, struct bm_sandbox_enf *enf, const char **bad);
/*
 * Take the caller's word (from) into enf for every part enf has none of
 * (what the agent held itself stands), marked by_caller.
 */
void bm_sandbox_enf_take_caller(struct bm_sandbox_enf *enf, const struct bm_sandbox_enf *from);

#endif /* BM_SANDBOX_H */

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/common.h"
#include "effect/sandbox.h"

static const char *const netpol_names[] = {
	[BM_NET_NONE] = "none",
	[BM_NET_EGRESS_RESTRICTED] = "egress_restricted",
	[BM_NET_EGRESS_ALLOW_LIST] = "egress_allow_list",
	[BM_NET_FULL] = "full",
};

const char *bm_netpol_name(enum bm_netpol p)
{
	return (unsigned int)p < BM_ARRAY_SIZE(netpol_names) ? netpol_names[p] : NULL;
}

int bm_netpol_parse(const char *s, enum bm_netpol *out)
{
	size_t i;

	for (i = 0; i < BM_ARRAY_SIZE(netpol_names); i++) {
		if (!strcmp(s, netpol_names[i])) {
			*out = (enum bm_netpol)i;
			return 0;
		}
	}
	return -EINVAL;
}

static bool cidr_within(const struct bm_cidr *c, const struct bm_cidr *in)
{
	unsigned int i, bits;

	if (c->family != in->family || c->prefix < in->prefix)
		return false;
	for (i = 0; i * 8 < in->prefix; i++) {
		bits = in->prefix - i * 8 >= 8 ? 8 : in->prefix - i * 8;
		if ((c->addr[i] ^ in->addr[i]) & (uint8_t)(0xff00 >> bits))
			return false;
	}
	return true;
}

/* Is path dir itself or below it ("" is no directory)? Both are absolute, without "..". */
static bool within_dir(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	return n && !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/' || n == 1);
}

/* A limit of the parent's that the child lifts, or raises: 0 = none. */
static bool lifts(uint64_t child, uint64_t parent)
{
	return parent && (!child || child > parent);
}

const char *bm_sandbox_looser(const struct bm_sandbox *c, const struct bm_sandbox *p)
{
	unsigned int i, j;

	if (lifts(c->cpu_limit_milli, p->cpu_limit_milli))
		return "sandbox.cpu_limit";
	if (lifts(c->memory_limit, p->memory_limit))
		return "sandbox.memory_limit";
	if (lifts(c->pids_limit, p->pids_limit))
		return "sandbox.pids_limit";
	if (lifts(c->timeout_ns, p->timeout_ns))
		return "sandbox.timeout_seconds";
	if (lifts(c->max_ephemeral_storage, p->max_ephemeral_storage))
		return "sandbox.max_ephemeral_storage";
	if (lifts(c->io_read_bps, p->io_read_bps))
		return "sandbox.io_read_bps";
	if (lifts(c->io_write_bps, p->io_write_bps))
		return "sandbox.io_write_bps";
	if (lifts(c->io_iops, p->io_iops))
		return "sandbox.io_iops";
	/* none < egress_restricted < egress_allow_list (of the parent's CIDRs) < full */
	if (c->network_policy > p->network_policy)
		return "sandbox.network_policy";
	for (i = 0; c->network_policy == BM_NET_EGRESS_ALLOW_LIST && i < c->n_cidrs; i++) {
		for (j = 0; j < p->n_cidrs && !cidr_within(&c->cidrs[i], &p->cidrs[j]); j++)
			;
		if (j == p->n_cidrs)
			return "sandbox.allowed_egress_cidrs";
	}
	if (p->read_only_root_fs && !c->read_only_root_fs)
		return "sandbox.read_only_root_fs";
	if (p->run_as_non_root && !c->run_as_non_root)
		return "sandbox.run_as_non_root";
	if (p->drop_all_capabilities && !c->drop_all_capabilities)
		return "sandbox.drop_all_capabilities";
	/* under a read-only root, a place to write that is not inside the parent's own */
	if (p->read_only_root_fs && *bm_sandbox_workspace(c) &&
	    !within_dir(c->workspace, bm_sandbox_workspace(p)))
		return "sandbox.workspace";
	return NULL;
}

static json_t *cidrs_json(const struct bm_sandbox *sb)
{
	char buf[BM_CIDR_STRLEN];
	json_t *a = json_array();
	unsigned int i;

	for (i = 0; a && i < sb->n_cidrs && i < BM_REQ_MAX_CIDRS; i++)
		if (bm_cidr_format(&sb->cidrs[i], buf, sizeof(buf)) ||
		    json_array_append_new(a, json_string(buf))) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static json_t *milli_json(uint64_t milli)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llum", (unsigned long long)milli);
	return json_string(buf);
}

json_t *bm_sandbox_json(const struct bm_sandbox *sb)
{
	json_t *o = json_object();
	int bad = !o;

	/* unset quantities are left out: 0 is not a valid value for any of them */
	if (sb->cpu_request_milli)
		bad |= json_object_set_new(o, "cpu_request", milli_json(sb->cpu_request_milli));
	if (sb->cpu_limit_milli)
		bad |= json_object_set_new(o, "cpu_limit", milli_json(sb->cpu_limit_milli));
	if (sb->memory_request)
		bad |= json_object_set_new(o, "memory_request", json_integer(sb->memory_request));
	if (sb->memory_limit)
		bad |= json_object_set_new(o, "memory_limit", json_integer(sb->memory_limit));
	if (sb->timeout_ns)
		bad |= json_object_set_new(o, "timeout_ns", json_integer(sb->timeout_ns));
	if (sb->pids_limit)
		bad |= json_object_set_new(o, "pids_limit", json_integer((json_int_t)sb->pids_limit));
	if (sb->max_ephemeral_storage)
		bad |= json_object_set_new(o, "max_ephemeral_storage",
					   json_integer(sb->max_ephemeral_storage));
	if (sb->io_read_bps)
		bad |= json_object_set_new(o, "io_read_bps", json_integer((json_int_t)sb->io_read_bps));
	if (sb->io_write_bps)
		bad |= json_object_set_new(o, "io_write_bps", json_integer((json_int_t)sb->io_write_bps));
	if (sb->io_iops)
		bad |= json_object_set_new(o, "io_iops", json_integer((json_int_t)sb->io_iops));
	bad |= json_object_set_new(o, "network_policy",
				   json_string(bm_netpol_name(sb->network_policy)));
	if (sb->n_cidrs)
		bad |= json_object_set_new(o, "allowed_egress_cidrs", cidrs_json(sb));
	bad |= json_object_set_new(o, "read_only_root_fs", json_boolean(sb->read_only_root_fs));
	bad |= json_object_set_new(o, "run_as_non_root", json_boolean(sb->run_as_non_root));
	bad |= json_object_set_new(o, "drop_all_capabilities",
				   json_boolean(sb->drop_all_capabilities));
	if (*bm_sandbox_workspace(sb))
		bad |= json_object_set_new(o, "workspace", json_string(sb->workspace));
	if (bad) {
		json_decref(o);
		errno = ENOMEM;
		return NULL;
	}
	return o;
}

static const char *const sbx_names[BM_SBX__MAX] = {
	[BM_SBX_NETWORK] = "network", [BM_SBX_RO_ROOT] = "read_only_root", [BM_SBX_TMP] = "tmp",
	[BM_SBX_WORKSPACE] = "workspace", [BM_SBX_USER] = "user", [BM_SBX_CAPS] = "caps",
	[BM_SBX_ENV] = "env", [BM_SBX_CWD] = "cwd", [BM_SBX_NAMESPACES] = "namespaces",
	[BM_SBX_SHM] = "shm", [BM_SBX_SOCKET] = "socket",
};

const char *bm_sbx_name(enum bm_sbx k)
{
	return (unsigned int)k < BM_SBX__MAX ? sbx_names[k] : NULL;
}

int bm_sandbox_enf_json(const struct bm_sandbox_enf *enf, json_t *obj)
{
	json_t *by = NULL;
	int k;

	for (k = 0; k < BM_SBX__MAX; k++) {
		if (!enf->mech[k][0] || json_object_get(obj, sbx_names[k]))
			continue;
		if (json_object_set_new(obj, sbx_names[k], json_string(enf->mech[k])))
			return -ENOMEM;
		if (!enf->by_caller[k])
			continue;
		by = by ? by : json_object_get(obj, "by");
		if (!json_is_object(by) && (!(by = json_object()) || json_object_set_new(obj, "by", by)))
			return -ENOMEM;
		if (json_object_set_new(by, sbx_names[k], json_string("caller")))
			return -ENOMEM;
	}
	return 0;
}

int bm_sandbox_enf_parse(const json_t *obj, struct bm_sandbox_enf *enf, const char **bad)
{
	const unsigned char *p;
	const char *key;
	json_t *v;
	int k;

	memset(enf, 0, sizeof(*enf));
	if (!json_is_object(obj)) {
		*bad = "enforcement";
		return -EINVAL;
	}
	json_object_foreach((json_t *)obj, key, v) {
		*bad = key;
		for (k = 0; k < BM_SBX__MAX && strcmp(key, sbx_names[k]); k++)
			;
		if (k == BM_SBX__MAX || !json_is_string(v) || !json_string_length(v) ||
		    json_string_length(v) >= BM_SBX_MECH_LEN || enf->mech[k][0])
			return -EINVAL;
		for (p = (const unsigned char *)json_string_value(v); *p; p++)
			if (*p < ' ' || *p == 0x7f)
				return -EINVAL;
		memcpy(enf->mech[k], json_string_value(v), json_string_length(v) + 1);
	}
	*bad = NULL;
	return 0;
}

void bm_sandbox_enf_take_caller(struct bm_sandbox_enf *enf, const struct bm_sandbox_enf *from)
{
	int k;

	for (k = 0; k < BM_SBX__MAX; k++)
		if (from->mech[k][0] && !enf->mech[k][0]) {
			memcpy(enf->mech[k], from->mech[k], sizeof(enf->mech[k]));
			enf->by_caller[k] = true;
		}
}

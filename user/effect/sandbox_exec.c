// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "effect/sandbox_exec.h"

static void say(struct bm_sandbox_enf *enf, enum bm_sbx k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void say(struct bm_sandbox_enf *enf, enum bm_sbx k, const char *fmt, ...)
{
	va_list ap;

	if (!enf)
		return;
	va_start(ap, fmt);
	vsnprintf(enf->mech[k], sizeof(enf->mech[k]), fmt, ap);
	va_end(ap);
}

/* Sizes as the flags take them: whole MiB where they are. */
static const char *size_text(uint64_t bytes, char *buf, size_t len)
{
	if (bytes % (1ULL << 20))
		snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%llu MiB", (unsigned long long)(bytes >> 20));
	return buf;
}

/* What the exec options hold, in the words of the outcome's "enforcement". */
static void describe(const struct bm_sandbox *sb, const struct bm_sandbox_ctx *c,
		     const struct bm_exec *x, struct bm_sandbox_enf *enf)
{
	char sz[32];
	unsigned int n = 0;

	if (x->new_netns)
		say(enf, BM_SBX_NETWORK, "netns (loopback only)");
	if (x->mnt.ro_root)
		say(enf, BM_SBX_RO_ROOT, "mount_setattr recursive (every mount read-only)");
	if (x->mnt.tmp_bytes)
		say(enf, BM_SBX_TMP, "tmpfs %s on /tmp", size_text(x->mnt.tmp_bytes, sz, sizeof(sz)));
	if (x->mnt.workspace[0])
		say(enf, BM_SBX_WORKSPACE, "bind read-write: %.80s", x->mnt.workspace);
	if (x->set_ids)
		say(enf, BM_SBX_USER, "setuid %u:%u, no supplementary groups", (unsigned int)x->uid,
		    (unsigned int)x->gid);
	if (x->drop_caps && bm_exec_can_drop_bounding())
		say(enf, BM_SBX_CAPS, "bounding set empty; ambient, permitted, effective, inheritable "
		    "empty; no_new_privs; seccomp: no new user namespace, no setns");
	else if (x->drop_caps)
		say(enf, BM_SBX_CAPS, "none held (not root; bounding set kept), no_new_privs; seccomp: "
		    "no new user namespace, no setns");
	for (; x->envp && x->envp[n]; n++)
		;
	if (x->envp)
		say(enf, BM_SBX_ENV, "%s: %u variable%s", c->clean_env ? "clean" : "given", n,
		    n == 1 ? "" : "s");
	if (x->cwd)
		say(enf, BM_SBX_CWD, "chdir %.80s%s", x->cwd, x->set_ids ? " as the uid" : "");
	if (x->pid_ns)
		say(enf, BM_SBX_NAMESPACES, "pid (bm-init outside the cgroup), mount (own /proc, "
		    "cgroupfs read-only), cgroup%s", x->new_netns ? ", net" : "");
	if (x->mnt.shm_bytes)
		say(enf, BM_SBX_SHM, "tmpfs %s on /dev/shm", size_text(x->mnt.shm_bytes, sz, sizeof(sz)));
	if (x->mnt.hide[0])
		say(enf, BM_SBX_SOCKET, "/dev/null bound over %.80s", x->mnt.hide);
	(void)sb;
}

void bm_sandbox_exec(const struct bm_sandbox *sb, const struct bm_sandbox_ctx *c, struct bm_exec *x,
		     struct bm_sandbox_enf *enf)
{
	int i;

	memset(x, 0, sizeof(*x));
	x->envp = c->envp;
	x->cwd = c->cwd;
	for (i = 0; i < 3; i++)
		x->stdio[i] = c->stdio[i];
	x->set_ids = c->set_ids;
	x->uid = c->uid;
	x->gid = c->gid;
	x->drop_caps = sb->drop_all_capabilities;
	/* a setuid binary must not give back what was dropped, or what another uid had */
	x->no_new_privs = sb->drop_all_capabilities || x->set_ids;
	x->new_netns = sb->network_policy == BM_NET_NONE;
	x->pid_ns = x->cgroup_ns = c->isolate;
	x->mnt.proc = x->mnt.ro_cgroup = c->isolate;
	x->mnt.ro_root = sb->read_only_root_fs;
	if (sb->read_only_root_fs || sb->max_ephemeral_storage)
		x->mnt.tmp_bytes = sb->max_ephemeral_storage ? sb->max_ephemeral_storage
							     : BM_SANDBOX_TMP_DEFAULT;
	/* its pages are charged to its memory cgroup: no bigger than its ceiling */
	if (c->isolate)
		x->mnt.shm_bytes = sb->memory_limit ? sb->memory_limit : BM_SANDBOX_SHM_DEFAULT;
	/* a socket path fits sun_path (108 bytes) */
	if (c->hide && c->isolate)
		snprintf(x->mnt.hide, sizeof(x->mnt.hide), "%.200s", c->hide);
	snprintf(x->mnt.workspace, sizeof(x->mnt.workspace), "%s", bm_sandbox_workspace(sb));
	x->log_max = c->isolate ? c->log_max : 0;
	describe(sb, c, x, enf);
}

bool bm_sandbox_filters_egress(const struct bm_sandbox *sb)
{
	return sb->network_policy == BM_NET_EGRESS_RESTRICTED ||
	       sb->network_policy == BM_NET_EGRESS_ALLOW_LIST;
}

int bm_sandbox_egress(struct bm_egress *eg, const struct bm_sandbox *sb, int cgroup_fd, uint64_t cgid,
		      struct bm_sandbox_enf *enf)
{
	int err;

	if (!bm_sandbox_filters_egress(sb))
		return 0;
	err = bm_egress__apply(eg, cgroup_fd, cgid, sb->cidrs, sb->n_cidrs);
	if (err)
		return err;
	if (sb->network_policy == BM_NET_EGRESS_RESTRICTED)
		say(enf, BM_SBX_NETWORK, "cgroup bpf egress filter: its own host only");
	else
		say(enf, BM_SBX_NETWORK, "cgroup bpf egress filter: its own host and %u CIDR%s",
		    sb->n_cidrs, sb->n_cidrs == 1 ? "" : "s");
	return 1;
}

void bm_sandbox_egress_forget(struct bm_egress *eg, const struct bm_sandbox *sb, uint64_t cgid)
{
	bm_egress__forget(eg, cgid, sb->cidrs, sb->n_cidrs);
}

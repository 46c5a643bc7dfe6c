/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * `burstmeter run`'s sandbox flags: every key of an execution request's
 * "sandbox" (and its env and cwd), named as bwrap, systemd-run and docker
 * users would guess them, validated before anything exists. Turned into a
 * struct bm_sandbox and a struct bm_sandbox_ctx for bm_sandbox_exec(): the
 * standalone run and the run through the agent apply them through it, as
 * the agent does its launches.
 */
#ifndef BM_RUN_SANDBOX_H
#define BM_RUN_SANDBOX_H

#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

#include "effect/sandbox_exec.h"

#define BM_RUN_MAX_ENV 256

/* getopt_long codes of the sandbox flags (run_opts.c lists them in its table). */
enum {
	BM_RUN_OPT_NETWORK = 512, BM_RUN_OPT_ALLOW_EGRESS, BM_RUN_OPT_RO_ROOT, BM_RUN_OPT_TMP_SIZE,
	BM_RUN_OPT_WORKSPACE, BM_RUN_OPT_USER, BM_RUN_OPT_NON_ROOT, BM_RUN_OPT_DROP_CAPS,
	BM_RUN_OPT_CLEAN_ENV, BM_RUN_OPT_ENV, BM_RUN_OPT_CWD, BM_RUN_OPT__END,
};

#define BM_RUN_SANDBOX_OPTIONS                                                        \
	{ "network", required_argument, NULL, BM_RUN_OPT_NETWORK },                   \
	{ "allow-egress", required_argument, NULL, BM_RUN_OPT_ALLOW_EGRESS },         \
	{ "read-only-root", no_argument, NULL, BM_RUN_OPT_RO_ROOT },                  \
	{ "tmp-size", required_argument, NULL, BM_RUN_OPT_TMP_SIZE },                 \
	{ "workspace", required_argument, NULL, BM_RUN_OPT_WORKSPACE },               \
	{ "user", required_argument, NULL, BM_RUN_OPT_USER },                         \
	{ "non-root", no_argument, NULL, BM_RUN_OPT_NON_ROOT },                       \
	{ "drop-caps", no_argument, NULL, BM_RUN_OPT_DROP_CAPS },                     \
	{ "clean-env", no_argument, NULL, BM_RUN_OPT_CLEAN_ENV },                     \
	{ "env", required_argument, NULL, BM_RUN_OPT_ENV },                           \
	{ "cwd", required_argument, NULL, BM_RUN_OPT_CWD }

#define BM_RUN_SANDBOX_USAGE                                                                  \
	"  --network POLICY    none (a loopback of its own), restricted (its own host\n"     \
	"                      only), full (default)\n"                                      \
	"  --allow-egress CIDR also reach CIDR (repeatable; implies --network restricted)\n" \
	"  --read-only-root    every mount read-only; /tmp a private tmpfs\n"                \
	"  --tmp-size SIZE     a private /tmp tmpfs of SIZE (default 64M with\n"             \
	"                      --read-only-root)\n"                                          \
	"  --workspace DIR     DIR bound read-write, the rest read-only\n"                   \
	"  --user USER[:GROUP] run as USER or UID[:GID], no supplementary groups\n"          \
	"  --non-root          run as a non-root uid (standalone: nobody; through the\n"     \
	"                      agent: the uid it gives the tenant)\n"                        \
	"  --drop-caps         no capabilities, none to regain: no_new_privs, and seccomp\n"  \
	"                      refuses new user namespaces (unshare/clone CLONE_NEWUSER;\n"  \
	"                      clone3 ENOSYS) and setns; still uid 0 without --user\n"     \
	"  --clean-env         only the --env pairs (and a default PATH)\n"                  \
	"  --env KEY=VALUE     set KEY in the command's environment (repeatable)\n"          \
	"  --cwd DIR           run in DIR (entered as the --user)\n"                         \
	"  With any of --network none|restricted, --allow-egress, --read-only-root,\n"       \
	"  --tmp-size, --workspace, --user, --non-root or --drop-caps the command also\n"    \
	"  gets PID, mount and cgroup namespaces of its own, as the agent's effects do.\n"

struct bm_run_sandbox {
	struct bm_sandbox sb;	/* the request's form; its ceilings come from --cpu & co. */
	bool isolate;		/* a flag that asks for the sandbox proper was given */
	bool set_user;		/* --user (or --non-root, standalone: nobody) */
	bool user_flag;		/* --user itself */
	uid_t uid;
	gid_t gid;
	bool clean_env;
	const char *env[BM_RUN_MAX_ENV];	/* "KEY=VALUE", from argv */
	unsigned int n_env;
	char cwd[PATH_MAX];	/* "": ours */
	char workspace[PATH_MAX];	/* what sb.workspace points to ("": none) */
	bool net_given;		/* --network */
};

/* One sandbox flag (c a BM_RUN_OPT_* code): 0, or -EINVAL after one line naming it. */
int bm_run_sandbox_opt(int c, const char *arg, struct bm_run_sandbox *s);
/* Once every flag is in: what they ask of each other. 0, or -EINVAL after one line. */
int bm_run_sandbox_check(struct bm_run_sandbox *s);
/*
 * The flag a caller that is not root cannot have through the agent (the
 * command is its own child: only root makes namespaces or takes another
 * uid), or NULL.
 */
const char *bm_run_sandbox_needs_root(const struct bm_run_sandbox *s, uid_t euid);
/*
 * The command's environment into *out: NULL to keep ours (no env flag),
 * else a new vector (free() it) of ours or, with --clean-env, of nothing
 * but PATH (unless given), with the --env pairs set. 0 or -ENOMEM.
 */
int bm_run_sandbox_envp(const struct bm_run_sandbox *s, char ***out);
/* The context for bm_sandbox_exec(): envp as above, the identity, the directory, isolation. */
void bm_run_sandbox_ctx(const struct bm_run_sandbox *s, char **envp, bool isolate,
			struct bm_sandbox_ctx *c);

#endif /* BM_RUN_SANDBOX_H */

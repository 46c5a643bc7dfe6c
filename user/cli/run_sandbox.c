// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/common.h"
#include "base/parse.h"
#include "cli/run_sandbox.h"

#define MIB (1024ULL * 1024)
#define TIB (MIB * MIB)
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

extern char **environ;

static int bad(const char *flag, const char *value, const char *expected)
{
	bm_err("invalid %s '%s': expected %s (see 'burstmeter run --help')", flag, value, expected);
	return -EINVAL;
}

/* An existing directory, as an absolute path without links (entered the same after a chdir). */
static int directory(const char *flag, const char *arg, char *out)
{
	char real[PATH_MAX];
	struct stat st;

	if (!realpath(arg, real)) {
		bm_err("invalid %s '%s': %s", flag, arg, strerror(errno));
		return -EINVAL;
	}
	if (stat(real, &st) < 0 || !S_ISDIR(st.st_mode))
		return bad(flag, arg, "a directory");
	snprintf(out, PATH_MAX, "%s", real);
	return 0;
}

static int cidr(const char *arg, struct bm_sandbox *sb)
{
	char net[BM_CIDR_STRLEN], hint[BM_CIDR_STRLEN + 64];
	struct bm_cidr c;
	int err = bm_cidr_parse(arg, &c);

	if (err == -EDOM && !bm_cidr_format(&c, net, sizeof(net))) {
		snprintf(hint, sizeof(hint), "no host bits (did you mean %s?)", net);
		return bad("--allow-egress", arg, hint);
	}
	if (err)
		return bad("--allow-egress", arg,
			   "a CIDR, e.g. 10.0.0.0/8, 127.0.0.2/32 or 2001:db8::/32");
	if (sb->n_cidrs == BM_REQ_MAX_CIDRS)
		return bad("--allow-egress", arg, "at most 64 CIDRs");
	sb->cidrs[sb->n_cidrs++] = c;
	return 0;
}

/* A uid or gid in decimal (not -1, which means "unchanged" to setresuid). */
static bool number_id(const char *s, unsigned int *out)
{
	uint64_t v;

	if (bm_parse_u64(s, 0, 4294967294ULL, &v))
		return false;
	*out = (unsigned int)v;
	return true;
}

/*
 * USER|UID[:GROUP|GID]: names resolved here, as setpriv and docker do; a
 * UID's gid is its user's, else the UID itself.
 */
static int user(const char *arg, struct bm_run_sandbox *s)
{
	char name[256], *colon;
	struct passwd *pw;
	struct group *gr;
	unsigned int id;

	snprintf(name, sizeof(name), "%s", arg);
	colon = strchr(name, ':');
	if (colon)
		*colon++ = '\0';
	if (!*name || strlen(arg) >= sizeof(name) || (colon && !*colon))
		return bad("--user", arg, "USER, UID, USER:GROUP or UID:GID");
	if (number_id(name, &id)) {
		pw = getpwuid(id);
		s->uid = id;
		s->gid = pw ? pw->pw_gid : id;
	} else if ((pw = getpwnam(name))) {
		s->uid = pw->pw_uid;
		s->gid = pw->pw_gid;
	} else {
		return bad("--user", arg, "a user of this host, or a numeric UID");
	}
	if (colon && number_id(colon, &id))
		s->gid = id;
	else if (colon && (gr = getgrnam(colon)))
		s->gid = gr->gr_gid;
	else if (colon)
		return bad("--user", arg, "a group of this host after ':', or a numeric GID");
	s->set_user = s->user_flag = true;
	return 0;
}

static int env(const char *arg, struct bm_run_sandbox *s)
{
	const char *eq = strchr(arg, '=');
	size_t klen = eq ? (size_t)(eq - arg) : 0;

	if (!eq || !klen || (arg[0] >= '0' && arg[0] <= '9') ||
	    strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_0123456789") != klen)
		return bad("--env", arg,
			   "KEY=VALUE, KEY of letters, digits and '_', not starting with a digit");
	if (s->n_env == BM_RUN_MAX_ENV)
		return bad("--env", arg, "at most 256 of them");
	s->env[s->n_env++] = arg;
	return 0;
}

static int network(const char *arg, struct bm_run_sandbox *s)
{
	/* the request's names too, so that one vocabulary works in both */
	if (!strcmp(arg, "none"))
		s->sb.network_policy = BM_NET_NONE;
	else if (!strcmp(arg, "restricted") || !strcmp(arg, "egress_restricted"))
		s->sb.network_policy = BM_NET_EGRESS_RESTRICTED;
	else if (!strcmp(arg, "full"))
		s->sb.network_policy = BM_NET_FULL;
	else
		return bad("--network", arg, "none, restricted or full");
	s->net_given = true;
	return 0;
}

int bm_run_sandbox_opt(int c, const char *arg, struct bm_run_sandbox *s)
{
	switch (c) {
	case BM_RUN_OPT_NETWORK:
		return network(arg, s);
	case BM_RUN_OPT_ALLOW_EGRESS:
		return cidr(arg, &s->sb);
	case BM_RUN_OPT_RO_ROOT:
		s->sb.read_only_root_fs = true;
		return 0;
	case BM_RUN_OPT_TMP_SIZE:
		return bm_parse_size(arg, MIB, 64 * TIB, &s->sb.max_ephemeral_storage)
		       ? bad("--tmp-size", arg, "a size in 1M-64T, e.g. 64M, 1G") : 0;
	case BM_RUN_OPT_WORKSPACE:
		if (directory("--workspace", arg, s->workspace))
			return -EINVAL;
		s->sb.workspace = s->workspace;
		if (!strcmp(s->workspace, "/"))
			return bad("--workspace", arg, "a directory other than / (the rest is read-only)");
		/* bound read-write, the rest read-only: what a workspace is for */
		s->sb.read_only_root_fs = true;
		return 0;
	case BM_RUN_OPT_USER:
		return user(arg, s);
	case BM_RUN_OPT_NON_ROOT:
		s->sb.run_as_non_root = true;
		return 0;
	case BM_RUN_OPT_DROP_CAPS:
		s->sb.drop_all_capabilities = true;
		return 0;
	case BM_RUN_OPT_CLEAN_ENV:
		s->clean_env = true;
		return 0;
	case BM_RUN_OPT_ENV:
		return env(arg, s);
	case BM_RUN_OPT_CWD:
		return directory("--cwd", arg, s->cwd);
	default:
		return -EINVAL;
	}
}

/* Is path at or below dir (both absolute, real)? */
static bool below(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return dir[0] && !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

int bm_run_sandbox_check(struct bm_run_sandbox *s)
{
	struct bm_sandbox *sb = &s->sb;
	struct passwd *pw;

	if (sb->n_cidrs && s->net_given && sb->network_policy != BM_NET_EGRESS_RESTRICTED) {
		bm_err("invalid --allow-egress with --network %s: CIDRs are allowed with --network "
		       "restricted (or alone)", bm_netpol_name(sb->network_policy));
		return -EINVAL;
	}
	if (sb->n_cidrs)
		sb->network_policy = BM_NET_EGRESS_ALLOW_LIST;
	if (sb->run_as_non_root && s->user_flag && !s->uid) {
		bm_err("invalid --user with --non-root: uid 0 is root");
		return -EINVAL;
	}
	/* a uid asked for is a non-root one unless it is 0: the request says so too */
	if (s->user_flag && s->uid)
		sb->run_as_non_root = true;
	if (sb->run_as_non_root && !s->user_flag) {
		/* standalone there is no agent to give a uid: nobody's, as the kernel's overflow uid */
		pw = getpwnam("nobody");
		s->uid = pw ? pw->pw_uid : 65534;
		s->gid = pw ? pw->pw_gid : 65534;
		s->set_user = true;
	}
	/* a private /tmp hides the host's: a directory there is not where the command would run */
	if (s->cwd[0] && (sb->read_only_root_fs || sb->max_ephemeral_storage) && below(s->cwd, "/tmp") &&
	    !below(s->cwd, bm_sandbox_workspace(sb))) {
		bm_err("invalid --cwd '%s': the sandbox's /tmp is a private tmpfs (make it the "
		       "--workspace, or a directory in it)", s->cwd);
		return -EINVAL;
	}
	s->isolate = sb->network_policy != BM_NET_FULL || sb->read_only_root_fs ||
		     sb->max_ephemeral_storage || *bm_sandbox_workspace(sb) || s->set_user ||
		     sb->drop_all_capabilities;
	return 0;
}

const char *bm_run_sandbox_needs_root(const struct bm_run_sandbox *s, uid_t euid)
{
	if (!euid)
		return NULL;
	if (s->sb.network_policy == BM_NET_NONE)
		return "--network none";
	if (*bm_sandbox_workspace(&s->sb))
		return "--workspace";
	if (s->sb.read_only_root_fs)
		return "--read-only-root";
	if (s->sb.max_ephemeral_storage)
		return "--tmp-size";
	if (s->user_flag && s->uid != euid)
		return "--user";
	return NULL;
}

/* The index in v[0..n) of the entry for the key of kv ("KEY=..."), or n. */
static size_t find_key(char **v, size_t n, const char *kv)
{
	size_t klen = strchr(kv, '=') - kv + 1, i;

	for (i = 0; i < n; i++)
		if (!strncmp(v[i], kv, klen))
			return i;
	return n;
}

int bm_run_sandbox_envp(const struct bm_run_sandbox *s, char ***out)
{
	size_t n = 0, base = 0, i, k;
	char **v;

	*out = NULL;
	if (!s->clean_env && !s->n_env)
		return 0;
	if (!s->clean_env)
		for (; environ && environ[base]; base++)
			;
	v = calloc(base + s->n_env + 2, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < base; i++)
		v[n++] = environ[i];
	/* a later --env of a key wins, as it does in docker and env(1) */
	for (i = 0; i < s->n_env; i++) {
		k = find_key(v, n, s->env[i]);
		v[k] = (char *)s->env[i];
		n += k == n;
	}
	if (s->clean_env && find_key(v, n, DEFAULT_PATH) == n)
		v[n++] = DEFAULT_PATH;
	v[n] = NULL;
	*out = v;
	return 0;
}

void bm_run_sandbox_ctx(const struct bm_run_sandbox *s, char **envp, bool isolate,
			struct bm_sandbox_ctx *c)
{
	memset(c, 0, sizeof(*c));
	c->envp = envp;
	c->clean_env = s->clean_env;
	c->cwd = s->cwd[0] ? s->cwd : NULL;
	c->stdio[0] = c->stdio[1] = c->stdio[2] = -1;
	c->set_ids = s->set_user;
	c->uid = s->uid;
	c->gid = s->gid;
	c->isolate = isolate;
}

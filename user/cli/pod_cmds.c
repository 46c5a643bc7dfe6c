// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `podspec` (an agent execution request -> the run's Pod and NetworkPolicy),
 * `podstate` (the run's pod objects -> its state, per change) and
 * `podtenants` (pod objects -> the agent's pod_tenants file). Each reads a
 * file or stdin; kubectl does the talking to the API server.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/config.h"
#include "agent/podspec.h"
#include "agent/podtenants.h"
#include "agent/podwatch.h"
#include "agent/request.h"
#include "base/common.h"
#include "base/k8sname.h"
#include "base/parse.h"
#include "base/yamlout.h"
#include "cli/pod_cmds.h"

extern char **environ;

static int usage_error(const char *cmd, const char *what)
{
	bm_err("%s (see 'burstmeter %s --help')", what, cmd);
	return BM_EXIT_USAGE;
}

static FILE *open_input(const char *cmd, const char *path)
{
	FILE *f;

	if (!path || !strcmp(path, "-"))
		return stdin;
	f = fopen(path, "r");
	if (!f)
		bm_err("cannot read %s: %s (see 'burstmeter %s --help')", path, strerror(errno),
		       cmd);
	return f;
}

/* All of f, at most max bytes (one more is read to tell "too big"). -EFBIG, -ENOMEM, -EIO. */
static int read_all(FILE *f, size_t max, char **buf, size_t *len)
{
	size_t n = 0, cap = 65536;
	char *b = malloc(cap), *nb;
	int err = -ENOMEM;

	while (b) {
		n += fread(b + n, 1, cap - n, f);
		if (n > max) {
			err = -EFBIG;
			break;
		}
		if (n < cap) {		/* fread() stops short only at the end or on an error */
			if (ferror(f)) {
				err = -EIO;
				break;
			}
			*buf = b;
			*len = n;
			return 0;
		}
		nb = realloc(b, 2 * cap);
		if (!nb)
			break;
		b = nb;
		cap *= 2;
	}
	free(b);
	return err;
}

static const char podspec_usage[] =
"Usage: burstmeter podspec [OPTIONS] [REQUEST.json|-]\n"
"Print the Pod and NetworkPolicy of one agent run from its execution request\n"
"(a file, or stdin), as YAML documents for 'kubectl apply -f -'. A bad request\n"
"is reported field by field before anything is printed (exit 125).\n"
"\n"
"  --json               a v1 List in JSON instead of YAML documents\n"
"  --namespace NS       metadata.namespace of both (default: none; kubectl -n decides)\n"
"  --cluster-cidr CIDR  egress_restricted may reach it, besides DNS (repeatable): the\n"
"                       pod CIDRs (policy is checked after service translation in\n"
"                       most plugins: a service CIDR's ipBlock matches nothing)\n"
"  --agent-socket PATH  the node agent's socket on the node; its directory (which\n"
"                       must hold nothing else) is mounted into the pod\n"
"                       (default " BM_AGENT_SOCKET ")\n"
"  --socket-group GID   a supplemental group of the pod, to reach that socket\n"
"  -h, --help           this help\n"
"\n"
"priorityClassName: priority 1-3 burstmeter-low, 4-7 burstmeter-normal, 8-10 burstmeter-high.\n"
"\n"
"EXAMPLES\n"
"  burstmeter podspec run.json | kubectl apply -f -\n"
"  burstmeter podspec --cluster-cidr 10.244.0.0/16 --namespace agents run.json\n"
"  burstmeter podspec --json - < run.json | jq '.items[0].spec.containers[0].resources'\n"
"  burstmeter podspec --agent-socket /run/bm/api.sock --socket-group 2000 run.json\n";

struct podspec_args {
	bool json;
	const char *input;
	struct bm_podspec_opts o;
	struct bm_cidr cidrs[BM_POD_MAX_CLUSTER_CIDRS];
};

static int add_cidr(struct podspec_args *a, const char *s)
{
	char net[BM_CIDR_STRLEN];
	struct bm_cidr c;
	int err;

	if (a->o.n_cluster_cidrs >= BM_POD_MAX_CLUSTER_CIDRS)
		return usage_error("podspec", "too many --cluster-cidr (at most 64)");
	err = bm_cidr_parse(s, &c);
	if (err == -EDOM && !bm_cidr_format(&c, net, sizeof(net))) {
		bm_err("invalid --cluster-cidr '%s': host bits set, did you mean '%s'? "
		       "(see 'burstmeter podspec --help')", s, net);
		return BM_EXIT_USAGE;
	}
	if (err)
		return usage_error("podspec",
				   "invalid --cluster-cidr (expected e.g. 10.96.0.0/12)");
	a->cidrs[a->o.n_cluster_cidrs++] = c;
	return 0;
}

/*
 * The socket's directory is mounted from the host into every run's pod, and
 * a read-only mount does not stop connect(): it must hold nothing but the
 * agent's socket. So never "/" or a top-level directory, never a climb out,
 * and never a directory where the node keeps other daemons' sockets.
 */
static bool valid_socket(const char *s)
{
	static const char *const shared[] = {
		"/var/run", "/run/containerd", "/var/run/containerd", "/run/crio", "/var/run/crio",
		"/run/docker", "/var/run/docker", "/run/systemd", "/run/user", "/run/dbus",
		"/var/lib", "/var/lib/kubelet", "/var/tmp", "/run/k3s", "/run/cri-dockerd",
	};
	const char *slash = strrchr(s, '/');
	size_t n = strlen(s), d, i;

	if (s[0] != '/' || n >= PATH_MAX || !slash || !slash[1] || strstr(s, "//") ||
	    strstr(s, "/../") || strstr(s, "/./") || !strcmp(slash, "/..") || !strcmp(slash, "/."))
		return false;
	d = (size_t)(slash - s);
	if (!memchr(s + 1, '/', d ? d - 1 : 0))
		return false;	/* "/x.sock" or "/run/x.sock": "/" or a top-level directory */
	for (i = 0; i < BM_ARRAY_SIZE(shared); i++)
		if (strlen(shared[i]) == d && !strncmp(s, shared[i], d))
			return false;
	/* nor anything below the kernel's and the system's own trees */
	return strncmp(s, "/proc/", 6) && strncmp(s, "/sys/", 5) && strncmp(s, "/dev/", 5) &&
	       strncmp(s, "/etc/", 5);
}

static int podspec_args(int argc, char **argv, struct podspec_args *a)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "namespace", required_argument, NULL, 'n' },
		{ "cluster-cidr", required_argument, NULL, 'c' },
		{ "agent-socket", required_argument, NULL, 's' },
		{ "socket-group", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t gid;
	int c, err;

	memset(a, 0, sizeof(*a));
	a->o.agent_socket = BM_AGENT_SOCKET;
	a->o.socket_gid = -1;
	a->o.cluster_cidrs = a->cidrs;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h')
			return fputs(podspec_usage, stdout), 0;
		if (c == 'j') {
			a->json = true;
			bm_log_set_json(true);
		} else if (c == 'n' && bm_k8s_dns_label(optarg)) {
			a->o.namespace = optarg;
		} else if (c == 'n') {
			return usage_error("podspec", "invalid --namespace (expected a DNS label: "
					   "1-63 of [a-z0-9-], starting and ending alphanumeric)");
		} else if (c == 'c') {
			err = add_cidr(a, optarg);
			if (err)
				return err;
		} else if (c == 's' && valid_socket(optarg)) {
			a->o.agent_socket = optarg;
		} else if (c == 's') {
			return usage_error("podspec", "invalid --agent-socket (expected an "
					   "absolute path in a directory of its own, not / or a "
					   "top-level one, nor one of other daemons' sockets)");
		} else if (c == 'g' && !bm_parse_u64(optarg, 0, 4294967294ULL, &gid)) {
			a->o.socket_gid = (long long)gid;
		} else {
			return usage_error("podspec", c == 'g' ?
					   "invalid --socket-group (expected a group id "
					   "0..4294967294)" : "unknown or incomplete option");
		}
	}
	if (optind + 1 < argc)
		return usage_error("podspec", "more than one REQUEST");
	a->input = optind < argc ? argv[optind] : NULL;
	return -1;
}

/* Every bad field, one line each (or one JSON object): nothing goes to stdout. */
static void report_fields(json_t *errs, bool json)
{
	json_t *e, *o;
	size_t i;
	char *t;

	if (json) {
		o = json_pack("{s:s, s:O}", "error", "invalid request", "fields", errs);
		t = o ? json_dumps(o, JSON_COMPACT) : NULL;
		fprintf(stderr, "%s\n", t ? t : "{\"error\":\"invalid request\"}");
		free(t);
		json_decref(o);
		return;
	}
	json_array_foreach(errs, i, e) {
		const char *field = json_string_value(json_object_get(e, "field"));

		bm_err("invalid request: %s%s%s", field && *field ? field : "",
		       field && *field ? ": " : "", json_string_value(json_object_get(e, "error")));
	}
}

static int write_docs(json_t *list, bool json)
{
	json_t *item;
	size_t i;
	int err = 0;

	if (json) {
		err = json_dumpf(list, stdout, JSON_INDENT(2)) ? -EIO : 0;
		fputc('\n', stdout);
	} else {
		json_array_foreach(json_object_get(list, "items"), i, item) {
			if (i)
				fputs("---\n", stdout);
			err = err ?: bm_yaml_write(stdout, item);
		}
	}
	return fflush(stdout) || err ? -EIO : 0;
}

int bm_cmd_podspec(int argc, char **argv)
{
	struct bm_run_request r;
	struct podspec_args a;
	json_t *errs = NULL, *list;
	size_t len = 0;
	char *body = NULL;
	FILE *f;
	int ret;

	ret = podspec_args(argc, argv, &a);
	if (ret >= 0)
		return ret;
	f = open_input("podspec", a.input);
	if (!f)
		return BM_EXIT_USAGE;
	ret = read_all(f, BM_REQ_MAX_BODY, &body, &len);
	if (f != stdin)
		fclose(f);
	if (ret == -EFBIG) {
		bm_err("invalid request: over the %d-byte limit", BM_REQ_MAX_BODY);
		return BM_EXIT_USAGE;
	}
	if (ret) {
		bm_err("cannot read %s: %s", a.input ? a.input : "stdin", strerror(-ret));
		return ret == -ENOMEM ? 1 : BM_EXIT_USAGE;
	}
	ret = bm_run_request_parse(body, len, &r, &errs);
	free(body);
	if (ret == -EINVAL) {
		report_fields(errs, a.json);
		json_decref(errs);
		return BM_EXIT_USAGE;
	}
	if (ret)
		return bm_err("failed to parse the request: %s", strerror(-ret)), 1;
	list = bm_podspec_build(&r, &a.o);
	ret = list ? write_docs(list, a.json) : -ENOMEM;
	json_decref(list);
	bm_run_request_free(&r);
	if (ret)
		bm_err("failed to write the manifests: %s", strerror(-ret));
	return ret ? 1 : 0;
}

static const char podstate_usage[] =
"Usage: burstmeter podstate [--json] [PODS.json|-]\n"
"Print an agent run's state from its pod objects, one line per change, so that\n"
"a client never reads raw pod phases. Input (a file, or stdin): the stream of\n"
"'kubectl get pod -w -o json', with or without --output-watch-events, or one\n"
"Pod or List. Lines are 'STATE REASON' (and ' exit_code=N' where a container's\n"
"exit decided it); --json lines also name the pod and the run and carry the\n"
"API's message. STATE: queued, running, succeeded, failed, timed_out,\n"
"oom_killed, evicted, or unknown (then REASON is the raw phase).\n"
"\n"
"  --json      JSON lines: pod, run, state, reason, exit_code, container, message, phase\n"
"  -h, --help  this help\n"
"\n"
"EXAMPLES\n"
"  kubectl get pod run-42 -w -o json | burstmeter podstate\n"
"  kubectl get pod -l burstmeter.io/tenant=acme -w -o json --output-watch-events | \\\n"
"      burstmeter podstate --json\n"
"  kubectl get pod run-42 -o json | burstmeter podstate\n"
"  burstmeter podstate --json recorded-watch.json\n";

static int print_state(const char *pod, const char *run, const struct bm_podstate *st, void *ctx)
{
	bool json = *(bool *)ctx;
	json_t *o;
	char *t;

	if (json) {
		o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s*, s:s*, s:s}", "pod", pod, "run", run,
			      "state", bm_run_state_name(st->state), "reason", st->reason,
			      "exit_code", st->exit_code >= 0 ? json_integer(st->exit_code)
							      : json_null(),
			      "container", st->container[0] ? st->container : NULL,
			      "message", st->message[0] ? st->message : NULL, "phase", st->phase);
		t = o ? json_dumps(o, JSON_COMPACT) : NULL;
		json_decref(o);
		if (!t)
			return -ENOMEM;
		printf("%s\n", t);
		free(t);
	} else {
		printf("%s %s", bm_run_state_name(st->state), st->reason);
		if (st->exit_code >= 0 && st->state != BM_RUN_SUCCEEDED)
			printf(" exit_code=%d", st->exit_code);
		putchar('\n');
	}
	/* a watch is live: each change goes out as it comes */
	return fflush(stdout) || ferror(stdout) ? -EIO : 0;
}

/* The next byte that is not white space, or EOF. */
static int skip_space(FILE *f)
{
	int c;

	do
		c = getc(f);
	while (c == ' ' || c == '\t' || c == '\n' || c == '\r');
	return c;
}

/*
 * One document of a pod stream into feed: the number of changes, or -errno
 * with err set (-EINVAL: bad input, -EPROTO: the watch's ERROR event; -EIO,
 * -ENOMEM and others: our own failure, already reported when -EIO).
 */
typedef int (*pod_feed_fn)(json_t *doc, void *ctx, char *err, size_t errlen);

/* Every document of f through feed: 0, BM_EXIT_USAGE (bad input), or 1. */
static int pod_stream(FILE *f, const char *name, pod_feed_fn feed, void *ctx)
{
	json_error_t jerr;
	unsigned int n;
	char err[256];
	json_t *doc;
	int c, rc = 0;

	/* kubectl writes one object after another: each is read alone, as it comes */
	for (n = 1; (c = skip_space(f)) != EOF; n++) {
		ungetc(c, f);
		doc = json_loadf(f, JSON_DISABLE_EOF_CHECK, &jerr);
		if (!doc) {
			bm_err("invalid input: object %u of %s: %s (line %d, column %d of it)", n,
			       name, jerr.text, jerr.line, jerr.column);
			rc = BM_EXIT_USAGE;
			break;
		}
		rc = feed(doc, ctx, err, sizeof(err));
		json_decref(doc);
		if (rc == -ENOMEM)
			bm_err("failed to read pods: %s", strerror(-rc));
		else if (rc == -EPROTO)
			bm_err("%s", err);
		else if (rc < 0 && rc != -EIO)
			bm_err("invalid input: object %u of %s: %s", n, name, err);
		if (rc < 0) {
			rc = rc == -EINVAL ? BM_EXIT_USAGE : 1;
			break;
		}
		rc = 0;
	}
	if (!rc && ferror(f)) {
		bm_err("cannot read %s: %s", name, strerror(EIO));
		rc = 1;
	} else if (!rc && n == 1) {
		bm_err("invalid input: no pod object in %s", name);
		rc = BM_EXIT_USAGE;
	}
	return rc;
}

struct podstate_ctx {
	struct bm_podwatch *w;
	bool json;
};

static int podstate_feed(json_t *doc, void *ctx, char *err, size_t errlen)
{
	struct podstate_ctx *c = ctx;
	int rc = bm_podwatch__feed(c->w, doc, print_state, &c->json, err, errlen);

	if (rc == -EIO)
		bm_err("failed to write the states: %s", strerror(EIO));
	return rc;
}

static int podstate_stream(FILE *f, const char *name, bool json)
{
	struct podstate_ctx c = { bm_podwatch__new(), json };
	int rc;

	if (!c.w)
		return bm_err("failed to read pods: %s", strerror(ENOMEM)), 1;
	rc = pod_stream(f, name, podstate_feed, &c);
	bm_podwatch__free(c.w);
	return rc;
}

int bm_cmd_podstate(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = NULL;
	bool json = false;
	FILE *f;
	int c, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h')
			return fputs(podstate_usage, stdout), 0;
		if (c != 'j')
			return usage_error("podstate", "unknown or incomplete option");
		json = true;
		bm_log_set_json(true);
	}
	if (optind + 1 < argc)
		return usage_error("podstate", "more than one input");
	if (optind < argc)
		path = argv[optind];
	f = open_input("podstate", path);
	if (!f)
		return BM_EXIT_USAGE;
	rc = podstate_stream(f, path && strcmp(path, "-") ? path : "stdin", json);
	if (f != stdin)
		fclose(f);
	return rc;
}

static const char podtenants_usage[] =
"Usage: burstmeter podtenants --out FILE [--label KEY] [--namespace] [INPUT|-]\n"
"       burstmeter podtenants --out FILE [--label KEY] [--namespace] -- COMMAND [ARG]...\n"
"\n"
"Keep the agent's pod_tenants file (\"<pod uid> <tenant>\" lines) from pod objects:\n"
"'kubectl get pod -w -o json', with or without --output-watch-events, or a Pod or\n"
"List. A pod's tenant is its label KEY (default burstmeter.io/tenant), else, with\n"
"--namespace, its namespace; a pod with neither is left out (the agent calls it\n"
"pod-<uid>), and so is one deleted. FILE is rewritten atomically (a temporary file\n"
"beside it, renamed over it) after each object that changed the map; the agent reads\n"
"it at each call. With -- COMMAND, the objects are COMMAND's output, and COMMAND is\n"
"run again 2 s after it ends (kubectl's watch ends at its server's timeout).\n"
"\n"
"  -o, --out FILE   the pod_tenants file the agent's config names\n"
"  -l, --label KEY  the pod label that names the tenant (\"\": none)\n"
"  -n, --namespace  a pod without the label: its namespace\n"
"  -h, --help       this help\n"
"\n"
"EXAMPLES\n"
"  kubectl get pods -A -w -o json --field-selector spec.nodeName=$NODE | \\\n"
"      burstmeter podtenants --out /run/burstmeter-tenants/pod_tenants --namespace\n"
"  burstmeter podtenants -o /run/burstmeter-tenants/pod_tenants -- \\\n"
"      kubectl get pods -A -w -o json --output-watch-events\n";

struct podtenants_ctx {
	struct bm_podtenants *t;
	struct bm_podtenants_opts o;
	const char *out;
};

static int podtenants_feed(json_t *doc, void *ctx, char *err, size_t errlen)
{
	struct podtenants_ctx *c = ctx;
	int rc = bm_podtenants__feed(c->t, doc, &c->o, err, errlen), werr;

	if (rc > 0 && (werr = bm_podtenants__write(c->t, c->out))) {
		bm_err("failed to write %s: %s", c->out, strerror(-werr));
		return -EIO;
	}
	return rc;
}

/* COMMAND's output through pod_stream, run again when it ends; returns only on our failure. */
static int podtenants_exec(struct podtenants_ctx *c, char **argv)
{
	posix_spawn_file_actions_t fa;
	int p[2], rc, status;
	pid_t pid;
	FILE *f;

	for (;;) {
		if (pipe2(p, O_CLOEXEC))
			return bm_err("failed to run %s: %s", argv[0], strerror(errno)), 1;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
		rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
		close(p[1]);
		if (rc) {
			close(p[0]);
			return bm_err("failed to run %s: %s", argv[0], strerror(rc)), 1;
		}
		f = fdopen(p[0], "r");
		rc = f ? pod_stream(f, argv[0], podtenants_feed, c) : 1;
		if (f)
			fclose(f);
		else
			close(p[0]);
		/* its output ended: it has, or is made to (bad output is its, not ours) */
		kill(pid, SIGTERM);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (rc == 1)
			return 1;	/* our own failure (the file): a restart would not help */
		bm_warn("%s ended (status %d): running it again in 2 s", argv[0], status);
		sleep(2);
	}
}

int bm_cmd_podtenants(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' }, { "label", required_argument, NULL, 'l' },
		{ "namespace", no_argument, NULL, 'n' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct podtenants_ctx c = { .o = { BM_PODTENANTS_LABEL, false } };
	const char *path = NULL;
	bool exec = false;
	int opt, rc, i;
	FILE *f;

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+ho:l:n", opts, NULL)) != -1) {
		if (opt == 'h')
			return fputs(podtenants_usage, stdout), 0;
		else if (opt == 'o')
			c.out = optarg;
		else if (opt == 'l')
			c.o.label = optarg;
		else if (opt == 'n')
			c.o.namespace_fallback = true;
		else
			return usage_error("podtenants", "unknown or incomplete option");
	}
	for (i = 1; i < optind; i++)
		exec |= !strcmp(argv[i], "--");
	if (!c.out || !*c.out)
		return usage_error("podtenants", "--out FILE is required");
	if (!c.o.label[0] && !c.o.namespace_fallback)
		return usage_error("podtenants", "no --label and no --namespace: no pod has a tenant");
	if (c.o.label[0] && !bm_k8s_label_key(c.o.label))
		return bm_err("invalid --label '%s': not a Kubernetes label key (see 'burstmeter "
			      "podtenants --help')", c.o.label), BM_EXIT_USAGE;
	if (exec && optind == argc)
		return usage_error("podtenants", "-- without a COMMAND");
	if (!exec && optind + 1 < argc)
		return usage_error("podtenants", "more than one input");
	if (!exec && optind < argc)
		path = argv[optind];
	c.t = bm_podtenants__new();
	if (!c.t)
		return bm_err("failed to read pods: %s", strerror(ENOMEM)), 1;
	/* the agent finds a file from the start, even before any pod has a tenant */
	if (access(c.out, F_OK) && (rc = bm_podtenants__write(c.t, c.out))) {
		bm_err("failed to write %s: %s", c.out, strerror(-rc));
		bm_podtenants__free(c.t);
		return 1;
	}
	if (exec) {
		rc = podtenants_exec(&c, argv + optind);
	} else {
		f = open_input("podtenants", path);
		rc = f ? pod_stream(f, path && strcmp(path, "-") ? path : "stdin", podtenants_feed,
				    &c) : BM_EXIT_USAGE;
		if (f && f != stdin)
			fclose(f);
	}
	bm_podtenants__free(c.t);
	return rc;
}

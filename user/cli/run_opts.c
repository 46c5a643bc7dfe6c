// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/common.h"
#include "cli/run_opts.h"

#define TIB (1024ULL * 1024 * 1024 * 1024)

static const char usage[] =
"Usage: burstmeter run [OPTIONS] -- COMMAND [ARG...]\n"
"Run COMMAND as one effect in its own cgroup, meter its CPU, memory, tasks\n"
"and network sends per window in the kernel, and report its outcome.\n"
"\n"
"  --id ID             tool-call id ([A-Za-z0-9._-], 1-64; default generated)\n"
"  --tenant NAME       tenant the effect belongs to (default: default)\n"
"  --intent TEXT       what the effect is meant to do (up to 4 KiB)\n"
"  --cpu CORES         CPU ceiling in cores: 0.5, 2, 1500m\n"
"  --memory SIZE       memory ceiling: 512M, 2G, 1Gi (1M-64T)\n"
"  --pids N            task ceiling (1-4194304)\n"
"  --io-read-bps SIZE  read ceiling per second on the disks behind its paths: 50M\n"
"  --io-write-bps SIZE write ceiling per second, the same way: 20M (4K-1T)\n"
"  --io-iops N         I/O operations per second, reads and writes each (1-1000000)\n"
"  --timeout SECONDS   wall-clock deadline: 30, 1.5, 500ms, 10m (exit 124)\n"
"  --window-ms N       metering window in ms (1-1000, default 10)\n"
"  --policy FILE       policy file (YAML)\n"
"  --outcome FILE      write the outcome JSON to FILE ('-' = stdout)\n"
"  --json              print the outcome JSON as the last line of stderr\n"
"  --hist              print the per-window histograms on stderr\n"
"  --standalone        meter it here even when an agent runs\n"
"  --socket PATH       the agent's socket (default $BURSTMETER_SOCKET, then\n"
"                      /run/burstmeter/api.sock); without an agent, run standalone\n"
"  --keep-meter DURATION  standalone: keep the meter loaded and pinned for\n"
"                      DURATION after the run (default $BURSTMETER_KEEP_METER),\n"
"                      so later runs start without loading one: 10m, 1h, 0 to drop\n"
"  --fresh-meter       standalone: load a meter of our own, reuse no pinned one\n"
BM_RUN_SANDBOX_USAGE
"  -q, --quiet         no summary line on stderr\n"
"  -v, --verbose       debug messages, libbpf's included\n"
"  -h, --help          this help\n"
"\n"
"Exit status: COMMAND's own; 124 deadline; 125 burstmeter failed or bad input;\n"
"126 not executable; 127 not found; 128+N killed by signal N.\n"
"\n"
"EXAMPLES\n"
"  burstmeter run -- make -j4\n"
"  burstmeter run --id tc-42 --tenant acme --intent 'run the tests' --outcome o.json -- pytest -x\n"
"  burstmeter run --memory 512M --pids 64 --timeout 600 -- ./build.sh\n"
"  burstmeter run --window-ms 50 --hist -- tar xf big.tar\n"
"  burstmeter run --network none --workspace . --user 1000 --drop-caps --clean-env -- ./generated.sh\n";

enum {
	OPT_ID = 256, OPT_TENANT, OPT_INTENT, OPT_CPU, OPT_MEMORY, OPT_PIDS, OPT_TIMEOUT,
	OPT_WINDOW, OPT_POLICY, OPT_OUTCOME, OPT_JSON, OPT_HIST, OPT_METER_HASH, OPT_NO_FAST_PATH,
	OPT_METER_ONLY, OPT_STANDALONE, OPT_SOCKET, OPT_IO_RBPS, OPT_IO_WBPS, OPT_IO_IOPS,
	OPT_KEEP_METER, OPT_FRESH_METER,
};

static const struct option options[] = {
	{ "id", required_argument, NULL, OPT_ID },
	{ "tenant", required_argument, NULL, OPT_TENANT },
	{ "intent", required_argument, NULL, OPT_INTENT },
	{ "cpu", required_argument, NULL, OPT_CPU },
	{ "memory", required_argument, NULL, OPT_MEMORY },
	{ "pids", required_argument, NULL, OPT_PIDS },
	{ "io-read-bps", required_argument, NULL, OPT_IO_RBPS },
	{ "io-write-bps", required_argument, NULL, OPT_IO_WBPS },
	{ "io-iops", required_argument, NULL, OPT_IO_IOPS },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "window-ms", required_argument, NULL, OPT_WINDOW },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "outcome", required_argument, NULL, OPT_OUTCOME },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "hist", no_argument, NULL, OPT_HIST },
	{ "meter-hash", no_argument, NULL, OPT_METER_HASH },
	{ "no-fast-path", no_argument, NULL, OPT_NO_FAST_PATH },
	{ "meter-only", no_argument, NULL, OPT_METER_ONLY },
	{ "standalone", no_argument, NULL, OPT_STANDALONE },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "keep-meter", required_argument, NULL, OPT_KEEP_METER },
	{ "fresh-meter", no_argument, NULL, OPT_FRESH_METER },
	BM_RUN_SANDBOX_OPTIONS,
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int bad(const char *flag, const char *value, const char *expected)
{
	bm_err("invalid %s '%s': expected %s (see 'burstmeter run --help')", flag, value, expected);
	return -EINVAL;
}

/* RFC 3629 UTF-8, no overlongs or surrogates: what JSON may carry. */
static bool valid_utf8(const unsigned char *s)
{
	while (*s) {
		int n = *s < 0x80 ? 0 : (*s & 0xE0) == 0xC0 ? 1 : (*s & 0xF0) == 0xE0 ? 2
			: (*s & 0xF8) == 0xF0 ? 3 : -1;
		unsigned int cp = n == 0 ? *s : n == 1 ? *s & 0x1F : n == 2 ? *s & 0x0F : *s & 0x07;
		int i;

		if (n < 0)
			return false;
		for (i = 1; i <= n; i++) {
			if ((s[i] & 0xC0) != 0x80)
				return false;
			cp = cp << 6 | (s[i] & 0x3F);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		s += n + 1;
	}
	return true;
}

/* The directory of the outcome file must exist and be writable before anything starts. */
static int check_outcome_path(const char *path)
{
	char dir[PATH_MAX];
	const char *slash;

	if (!strcmp(path, "-"))
		return 0;
	if (!*path || strlen(path) >= sizeof(dir) - 8)
		return bad("--outcome", path, "a file path or '-'");
	slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (access(dir, W_OK) < 0)
		return bad("--outcome", path, "a file in an existing, writable directory");
	return 0;
}

static void generate_id(struct bm_run_opts *o)
{
	unsigned char r[6] = { 0 };
	unsigned int i;

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		r[0] = (unsigned char)getpid();
	strcpy(o->id_buf, "run-");
	for (i = 0; i < sizeof(r); i++)
		sprintf(o->id_buf + 4 + 2 * i, "%02x", r[i]);
	o->id = o->id_buf;
}

static int parse_one(int c, const char *arg, struct bm_run_opts *o)
{
	uint64_t v;

	switch (c) {
	case OPT_ID:
		o->id = arg;
		return bm_valid_name(arg) ? 0 : bad("--id", arg, "[A-Za-z0-9._-], 1-64 characters, not starting with '.'");
	case OPT_TENANT:
		o->tenant = arg;
		return bm_valid_name(arg) ? 0 : bad("--tenant", arg, "[A-Za-z0-9._-], 1-64 characters, not starting with '.'");
	case OPT_INTENT:
		o->intent = arg;
		if (strlen(arg) > BM_INTENT_MAX)
			return bad("--intent", "...", "at most 4096 bytes");
		return valid_utf8((const unsigned char *)arg) ? 0 : bad("--intent", "...", "UTF-8 text");
	case OPT_CPU:
		return bm_parse_cores(arg, 1, 1024000, &o->limits.cpu_milli) ? bad("--cpu", arg, "cores in 0.001-1024, e.g. 0.5, 2, 1500m") : 0;
	case OPT_MEMORY:
		return bm_parse_size(arg, 1024 * 1024, 64 * TIB, &o->limits.memory_bytes) ? bad("--memory", arg, "a size in 1M-64T, e.g. 512M, 2G, 1Gi") : 0;
	case OPT_PIDS:
		return bm_parse_u64(arg, 1, 4194304, &o->limits.pids) ? bad("--pids", arg, "an integer in 1-4194304") : 0;
	case OPT_IO_RBPS:
	case OPT_IO_WBPS:
		return bm_parse_size(arg, 4096, 1024 * 1024 * 1024 * 1024ULL,
				     c == OPT_IO_RBPS ? &o->limits.io_read_bps : &o->limits.io_write_bps)
			       ? bad(c == OPT_IO_RBPS ? "--io-read-bps" : "--io-write-bps", arg,
				     "bytes per second in 4K-1T, e.g. 50M")
			       : 0;
	case OPT_IO_IOPS:
		return bm_parse_u64(arg, 1, 1000000, &o->limits.io_iops) ? bad("--io-iops", arg, "an integer in 1-1000000") : 0;
	case OPT_TIMEOUT:
		return bm_parse_duration_ns(arg, BM_NSEC_PER_MSEC, 7 * 86400 * BM_NSEC_PER_SEC, &o->limits.timeout_ns) ? bad("--timeout", arg, "seconds in 0.001-604800, e.g. 30, 1.5, 500ms, 10m") : 0;
	case OPT_WINDOW:
		if (bm_parse_u64(arg, 1, 1000, &v))
			return bad("--window-ms", arg, "an integer number of milliseconds in 1-1000");
		o->window_ns = v * BM_NSEC_PER_MSEC;
		return 0;
	case OPT_POLICY:
		o->policy = arg;
		return access(arg, R_OK) ? bad("--policy", arg, "a readable policy file") : 0;
	case OPT_OUTCOME:
		o->outcome = arg;
		return check_outcome_path(arg);
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_HIST:
		o->hist = true;
		return 0;
	case OPT_METER_HASH:
		o->meter_hash = true;
		return 0;
	case OPT_NO_FAST_PATH:
		o->no_fast_path = true;
		return 0;
	case OPT_METER_ONLY:
		o->meter_only = true;
		return 0;
	case OPT_STANDALONE:
		o->standalone = true;
		return 0;
	case OPT_KEEP_METER:
		o->keep_meter = true;
		if (bm_parse_duration_ns(arg, 0, 7 * 86400 * BM_NSEC_PER_SEC, &o->keep_meter_ns))
			return bad("--keep-meter", arg, "a duration in 0-604800 s: 10m, 1h, 0");
		return 0;
	case OPT_FRESH_METER:
		o->fresh_meter = true;
		return 0;
	case OPT_SOCKET:
		o->socket = arg;
		return arg[0] == '/' ? 0 : bad("--socket", arg, "the agent's socket, an absolute path");
	case 'q':
		o->quiet = true;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	default:
		if (c >= BM_RUN_OPT_NETWORK && c < BM_RUN_OPT__END)
			return bm_run_sandbox_opt(c, arg, &o->sb);
		return -EINVAL;
	}
}

int bm_run_parse_args(int argc, char **argv, struct bm_run_opts *o)
{
	const char *env;
	int c, err;

	memset(o, 0, sizeof(*o));
	o->sb.sb.network_policy = BM_NET_FULL;
	o->tenant = "default";
	o->window_ns = BM_WINDOW_NS_DEFAULT;
	optind = 0;	/* full reset: tests parse many vectors */
	env = getenv("BURSTMETER_KEEP_METER");
	if (env && *env) {
		if (bm_parse_duration_ns(env, 0, 7 * 86400 * BM_NSEC_PER_SEC, &o->keep_meter_ns)) {
			bm_err("invalid $BURSTMETER_KEEP_METER '%s': expected a duration in "
			       "0-604800 s, e.g. 10m, 1h, 0", env);
			return -EINVAL;
		}
		o->keep_meter = true;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+qvh", options, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage, stdout);
			return 0;
		}
		if (c == '?' || c == ':') {
			/* getopt_long sets optopt to a long option's code (>= 256), not a letter */
			if (optopt > 0 && optopt < 128 && isalnum(optopt))
				bm_err("unknown or incomplete option '-%c' (see 'burstmeter run --help')", optopt);
			else
				bm_err("unknown or incomplete option '%s' (see 'burstmeter run --help')", argv[optind - 1]);
			return -EINVAL;
		}
		err = parse_one(c, optarg, o);
		if (err)
			return err;
	}
	if (optind >= argc || !*argv[optind]) {
		bm_err("missing command: burstmeter run [OPTIONS] -- COMMAND [ARG...]");
		return -EINVAL;
	}
	o->argv = argv + optind;
	err = bm_run_sandbox_check(&o->sb);
	if (err)
		return err;
	if (!o->id)
		generate_id(o);
	return 1;
}

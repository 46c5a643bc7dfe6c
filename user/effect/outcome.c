// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/common.h"
#include "effect/expect.h"
#include "effect/outcome.h"

static const char *const reason_names[BM_REASON__MAX] = {
	[BM_REASON_COMPLETED] = "completed",
	[BM_REASON_FAILED] = "failed",
	[BM_REASON_SIGNALED] = "signaled",
	[BM_REASON_DEADLINE] = "deadline",
	[BM_REASON_MEMORY_CEILING] = "memory_ceiling",
	[BM_REASON_PIDS_CEILING] = "pids_ceiling",
	[BM_REASON_CPU_CEILING] = "cpu_ceiling",
	[BM_REASON_NET_CEILING] = "net_ceiling",
	[BM_REASON_CANCELLED] = "cancelled",
	[BM_REASON_METER_ERROR] = "meter_error",
	[BM_REASON_STORAGE_CEILING] = "storage_ceiling",
	[BM_REASON_IO_CEILING] = "io_ceiling",
};

const char *bm_reason_name(enum bm_reason r)
{
	return r < BM_REASON__MAX ? reason_names[r] : "unknown";
}

void bm_outcome_classify(struct bm_outcome *o, int wait_status, bool cancelled, int exec_errno)
{
	o->exit_code = -1;
	o->exit_signal = 0;
	if (exec_errno) {
		/* the shell's convention: 127 not found, 126 found but not runnable */
		o->exit_code = exec_errno == ENOENT || exec_errno == ENOTDIR ? 127 : 126;
		o->reason = BM_REASON_FAILED;
		o->by = "burstmeter";
		return;
	}
	if (WIFSIGNALED(wait_status)) {
		o->exit_signal = WTERMSIG(wait_status);
		o->reason = cancelled ? BM_REASON_CANCELLED : BM_REASON_SIGNALED;
		o->by = cancelled ? "signal" : "process";
		return;
	}
	o->exit_code = WEXITSTATUS(wait_status);
	o->reason = !o->exit_code ? BM_REASON_COMPLETED : cancelled ? BM_REASON_CANCELLED
								  : BM_REASON_FAILED;
	o->by = cancelled ? "signal" : "process";
}

static double mib(uint64_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0);
}

void bm_outcome_retry(struct bm_outcome *o)
{
	const struct bm_summary *s = o->sum;
	double wall_s = (double)o->wall_ns / 1e9;

	o->retry_eligible = true;
	o->retry_after_ms = 0;
	o->advice[0] = '\0';
	switch (o->reason) {
	case BM_REASON_COMPLETED:
	case BM_REASON_CANCELLED:
	case BM_REASON_SIGNALED:
		break;
	case BM_REASON_FAILED:
		/* refused before exec (its cwd, its ids): the same request meets the same refusal */
		if (o->exit_code == 125 && o->start_errno) {
			o->retry_eligible = false;
			snprintf(o->advice, sizeof(o->advice),
				 "it never started: its launch was refused (%s); give it a cwd and an "
				 "identity its uid may have", strerror(o->start_errno));
		} else if (o->exit_code == 126 || o->exit_code == 127) {
			o->retry_eligible = false;
			snprintf(o->advice, sizeof(o->advice), "'%s' %s; fix the command",
				 o->argv && o->argv[0] ? o->argv[0] : "",
				 o->exit_code == 127 ? "was not found" : "is not executable");
		}
		break;
	case BM_REASON_DEADLINE:
		o->retry_eligible = false;
		snprintf(o->advice, sizeof(o->advice),
			 "it ran %.1f s and did not finish; raise --timeout above %.0f s or split the work",
			 wall_s, (double)o->limits.timeout_ns / 1e9);
		break;
	case BM_REASON_MEMORY_CEILING:
		o->retry_eligible = false;
		snprintf(o->advice, sizeof(o->advice),
			 "memory reached %.0f MiB against a %.0f MiB ceiling; it needs more than %.0f MiB",
			 s ? mib(s->peak[BM_DIM_MEM]) : 0.0, mib(o->limits.memory_bytes),
			 mib(o->limits.memory_bytes));
		break;
	case BM_REASON_PIDS_CEILING:
		o->retry_eligible = false;
		snprintf(o->advice, sizeof(o->advice),
			 "it tried to run more than %llu tasks; raise --pids or reduce parallelism",
			 (unsigned long long)o->limits.pids);
		break;
	case BM_REASON_CPU_CEILING:
	case BM_REASON_NET_CEILING:
	case BM_REASON_IO_CEILING:
		o->retry_eligible = false;
		snprintf(o->advice, sizeof(o->advice), "it exceeded its %s ceiling; raise it or do less per call",
			 o->reason == BM_REASON_CPU_CEILING ? "CPU"
			 : o->reason == BM_REASON_NET_CEILING ? "network" : "I/O");
		break;
	case BM_REASON_STORAGE_CEILING:
		o->retry_eligible = false;
		snprintf(o->advice, sizeof(o->advice),
			 "it filled its %.0f MiB of ephemeral storage (%s); raise max_ephemeral_storage "
			 "above %.0f MiB or write less there", mib(o->limits.storage_bytes),
			 o->storage_where ? o->storage_where : "/tmp", mib(o->limits.storage_bytes));
		break;
	case BM_REASON_METER_ERROR:
		o->retry_after_ms = 1000;
		snprintf(o->advice, sizeof(o->advice), "burstmeter could not meter the effect; retry later");
		break;
	default:
		break;
	}
}

static json_t *num_or_null(double v, bool present)
{
	return present ? json_real(v) : json_null();
}

static json_t *hist_json(const struct bm_summary *s, int d)
{
	json_t *h = json_object(), *le = json_array(), *count = json_array();
	int b, last = 0;

	for (b = 0; b < BM_HIST_BUCKETS; b++)
		if (s->hist[d][b])
			last = b;
	for (b = 0; b <= last; b++) {
		double up = bm_window_bucket_edge(d, b, s->window_ns);

		/* bytes and tasks have whole bounds; the others are rates and fractions */
		json_array_append_new(le, d == BM_DIM_MEM || d == BM_DIM_PIDS ? json_integer((json_int_t)up)
									       : json_real(up));
		json_array_append_new(count, json_integer((json_int_t)s->hist[d][b]));
	}
	json_object_set_new(h, "le", le);
	json_object_set_new(h, "count", count);
	return h;
}

static json_t *peaks_json(const struct bm_summary *s)
{
	json_t *p = json_object();
	int i;

	for (i = 0; i < BM_DIM__MAX; i++) {
		enum bm_dim d = bm_dim_order[i];
		double v = s ? bm_window_display(d, (double)s->peak[d], s->window_ns) : 0;

		json_object_set_new(p, bm_window_dim_name(d),
				    d == BM_DIM_MEM || d == BM_DIM_PIDS ? json_integer((json_int_t)v)
									: json_real(v));
	}
	return p;
}

static json_t *summary_json(const struct bm_outcome *o, json_t *root)
{
	const struct bm_summary *s = o->sum;
	double span = s ? (double)s->windows * (double)s->window_ns : 0;
	json_t *avg, *tot, *hists;
	int d;

	json_object_set_new(root, "peak", peaks_json(s));
	avg = json_object();
	/* means over the windows, like the peaks: an average can never exceed its peak */
	json_object_set_new(avg, "cpu_cores", json_real(span ? (double)s->cpu_ns / span : 0));
	json_object_set_new(avg, "memory_bytes",
			    json_integer(s && s->windows ? (json_int_t)(s->wsum[BM_DIM_MEM] / s->windows) : 0));
	json_object_set_new(avg, "pids", json_real(s && s->windows ? (double)s->wsum[BM_DIM_PIDS] / s->windows : 0));
	json_object_set_new(avg, "net_tx_bytes_per_s", json_real(span ? (double)s->net_bytes * 1e9 / span : 0));
	for (d = BM_DIM_IO_READ; d <= BM_DIM_DIRTY; d++)
		json_object_set_new(avg, bm_window_dim_name(d),
				    json_real(span ? (double)s->total[d] * 1e9 / span : 0));
	json_object_set_new(root, "average", avg);

	tot = json_object();
	json_object_set_new(tot, "cpu_seconds", json_real(s ? (double)s->cpu_ns / 1e9 : 0));
	json_object_set_new(tot, "forks", json_integer(s ? (json_int_t)s->forks : 0));
	json_object_set_new(tot, "net_tx_bytes", json_integer(s ? (json_int_t)s->net_bytes : 0));
	json_object_set_new(tot, "runq_delay_seconds", json_real(s ? (double)s->runq_ns / 1e9 : 0));
	json_object_set_new(tot, "mem_stall_seconds", json_real(s ? (double)s->stall_ns / 1e9 : 0));
	json_object_set_new(tot, "io_read_bytes", json_integer(s ? (json_int_t)s->total[BM_DIM_IO_READ] : 0));
	json_object_set_new(tot, "io_write_bytes", json_integer(s ? (json_int_t)s->total[BM_DIM_IO_WRITE] : 0));
	json_object_set_new(tot, "io_ops", json_integer(s ? (json_int_t)s->total[BM_DIM_IO_OPS] : 0));
	json_object_set_new(tot, "dirtied_bytes", json_integer(s ? (json_int_t)s->total[BM_DIM_DIRTY] : 0));
	json_object_set_new(tot, "windows", json_integer(s ? (json_int_t)s->windows : 0));
	json_object_set_new(root, "totals", tot);

	hists = json_object();
	for (d = 0; s && d < BM_DIM__MAX; d++)
		json_object_set_new(hists, bm_window_dim_name(bm_dim_order[d]), hist_json(s, bm_dim_order[d]));
	json_object_set_new(root, "histograms", hists);
	return root;
}

static json_t *int_or_null(uint64_t v)
{
	return v ? json_integer((json_int_t)v) : json_null();
}

static json_t *limits_json(const struct bm_limits *l)
{
	json_t *j = json_object();

	json_object_set_new(j, "cpu_cores", num_or_null(l->cpu_milli / 1000.0, l->cpu_milli));
	json_object_set_new(j, "memory_bytes",
			    l->memory_bytes ? json_integer((json_int_t)l->memory_bytes) : json_null());
	json_object_set_new(j, "pids", l->pids ? json_integer((json_int_t)l->pids) : json_null());
	json_object_set_new(j, "timeout_seconds", num_or_null(l->timeout_ns / 1e9, l->timeout_ns));
	json_object_set_new(j, "io_read_bps", int_or_null(l->io_read_bps));
	json_object_set_new(j, "io_write_bps", int_or_null(l->io_write_bps));
	json_object_set_new(j, "io_iops", int_or_null(l->io_iops));
	json_object_set_new(j, "ephemeral_storage_bytes", int_or_null(l->storage_bytes));
	return j;
}

/* Which mechanism held each ceiling (a controller file, or the meter), and each part of the sandbox. */
static json_t *enforcement_json(const struct bm_outcome *o)
{
	static const char *const names[5] = { "cpu", "memory", "pids", "net", "io" };
	static const char *const io_names[BM_IO_CEIL__MAX] = { "io_read_bps", "io_write_bps", "io_iops" };
	json_t *j = json_object();
	int i;

	for (i = 0; i < 5; i++)
		if (o->ceiling_mech[i])
			json_object_set_new(j, names[i], json_string(o->ceiling_mech[i]));
	/* and the sandbox's: the network policy, the mounts, the identity, ... */
	if (j)
		(void)bm_sandbox_enf_json(&o->sbx, j);
	for (i = 0; i < BM_IO_CEIL__MAX; i++)
		if (o->io_mech[i])
			json_object_set_new(j, io_names[i], json_string(o->io_mech[i]));
	if (o->storage_mech)
		json_object_set_new(j, "ephemeral_storage", json_string(o->storage_mech));
	if (o->cpus[0])
		json_object_set_new(j, "cpus", json_string(o->cpus));
	return j;
}

static json_t *actions_json(const struct bm_outcome *o)
{
	json_t *a = json_array();
	unsigned int i;

	for (i = 0; i < o->n_actions; i++)
		json_array_append_new(a, json_pack("{s:f, s:s, s:s, s:f, s:f}", "at_ms", o->actions[i].at_ms,
						   "action", o->actions[i].action, "reason",
						   o->actions[i].reason, "observed", o->actions[i].observed,
						   "threshold", o->actions[i].threshold));
	return a;
}

static json_t *meter_json_base(const struct bm_outcome *o);

static json_t *count_or_null(int64_t v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

/* Who the OOM killer took, which limit it was, and the memory controller's counts. */
static json_t *oom_json(const struct bm_outcome *o)
{
	static const char *const ev[BM_MEMEV__MAX] = { "oom", "oom_kill", "high", "max" };
	json_t *victims = json_array(), *events = json_object();
	unsigned int i;

	for (i = 0; i < o->n_oom; i++) {
		const struct bm_oom_victim *v = &o->oom[i];

		json_array_append_new(victims, json_pack("{s:f, s:i, s:s, s:I, s:I, s:I, s:i}",
			"at_ms", v->at_ms, "pid", (int)v->pid, "command", v->comm,
			"rss_bytes", (json_int_t)v->rss_bytes, "anon_bytes", (json_int_t)v->anon_bytes,
			"total_vm_bytes", (json_int_t)v->total_vm_bytes, "oom_score_adj", v->oom_score_adj));
	}
	for (i = 0; i < BM_MEMEV__MAX; i++)
		json_object_set_new(events, ev[i], count_or_null(o->mem_events[i]));
	return json_pack("{s:o, s:I, s:o, s:o}", "victims", victims, "victims_total",
			 (json_int_t)o->oom_victims, "limit",
			 o->oom_limit ? json_string(o->oom_limit) : json_null(), "memory_events", events);
}

static json_t *storage_json(const struct bm_outcome *o)
{
	json_t *places = json_array();
	unsigned int i;

	for (i = 0; i < o->n_storage_places; i++)
		json_array_append_new(places, json_pack("{s:s, s:o}", "where", o->storage_places[i].where,
							"peak_bytes",
							count_or_null(o->storage_places[i].peak_bytes)));
	return json_pack("{s:o, s:o, s:o, s:o}", "where",
			 o->storage_where ? json_string(o->storage_where) : json_null(), "limit_bytes",
			 int_or_null(o->limits.storage_bytes), "peak_bytes",
			 count_or_null(o->storage_peak_bytes), "places", places);
}

static json_t *meter_json(const struct bm_outcome *o)
{
	json_t *m, *via;
	const uint64_t *v = o->sum ? o->sum->io_via : NULL;

	via = json_pack("{s:I, s:I, s:I}", "blkcg", (json_int_t)(v ? v[BM_IO_VIA_BLKCG] : 0),
			"v1_twin", (json_int_t)(v ? v[BM_IO_VIA_ALIAS] : 0), "submitter",
			(json_int_t)(v ? v[BM_IO_VIA_TASK] : 0));
	m = meter_json_base(o);
	if (m) {
		json_object_set_new(m, "io_attribution",
				    json_string(o->io_attribution ? o->io_attribution : "none"));
		json_object_set_new(m, "io_bios_by", via);
		json_object_set_new(m, "io_unattributed_bios",
				    json_integer((json_int_t)o->stats[BM_STAT_IO_UNKNOWN]));
	} else {
		json_decref(via);
	}
	return m;
}

static json_t *meter_json_base(const struct bm_outcome *o)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:s, s:I, s:o, s:o, s:o, s:f, s:o}",
			 "lost_records", (json_int_t)o->stats[BM_STAT_RB_DROPS],
			 "mm_map_full", (json_int_t)o->stats[BM_STAT_MM_FULL],
			 "task_storage_full", (json_int_t)o->stats[BM_STAT_TASK_FULL],
			 "late_contributions", (json_int_t)o->stats[BM_STAT_LATE],
			 "net_source", o->net_source ? o->net_source : "none",
			 "leftover_tasks_killed", (json_int_t)o->leftover_killed,
			 "psi_cpu_some_us", o->psi_cpu_us >= 0 ? json_integer(o->psi_cpu_us) : json_null(),
			 "psi_memory_some_us", o->psi_mem_us >= 0 ? json_integer(o->psi_mem_us) : json_null(),
			 "psi_io_some_us", o->psi_io_us >= 0 ? json_integer(o->psi_io_us) : json_null(),
			 "cgroup_cpu_seconds", (double)o->cgroup_cpu_us / 1e6,
			 "cgroup_memory_peak_bytes", o->cgroup_mem_peak > 0 ? json_integer(o->cgroup_mem_peak) : json_null());
}

void bm_limits_from_sandbox(struct bm_limits *l, const struct bm_sandbox *sb)
{
	l->cpu_milli = sb->cpu_limit_milli;
	l->memory_bytes = sb->memory_limit;
	l->pids = sb->pids_limit;
	l->timeout_ns = sb->timeout_ns;
	l->io_read_bps = sb->io_read_bps;
	l->io_write_bps = sb->io_write_bps;
	l->io_iops = sb->io_iops;
}

void bm_limits_to_sandbox(const struct bm_limits *l, struct bm_sandbox *sb)
{
	sb->cpu_limit_milli = l->cpu_milli;
	sb->memory_limit = l->memory_bytes;
	sb->pids_limit = l->pids;
	sb->timeout_ns = l->timeout_ns;
	sb->io_read_bps = l->io_read_bps;
	sb->io_write_bps = l->io_write_bps;
	sb->io_iops = l->io_iops;
}

json_t *bm_outcome_json(const struct bm_outcome *o)
{
	char started[40];
	json_t *root, *argv;
	unsigned int i;

	root = json_object();
	argv = json_array();
	if (!root || !argv) {
		json_decref(root);
		json_decref(argv);
		return NULL;
	}
	for (i = 0; o->argv && o->argv[i]; i++)
		json_array_append_new(argv, json_string(o->argv[i]));
	json_object_set_new(root, "schema", json_string(BM_OUTCOME_SCHEMA));
	json_object_set_new(root, "id", json_string(o->id));
	json_object_set_new(root, "tenant", json_string(o->tenant));
	json_object_set_new(root, "intent", json_string(o->intent ? o->intent : ""));
	json_object_set_new(root, "command", argv);
	json_object_set_new(root, "cgroup", o->cgroup ? json_string(o->cgroup) : json_null());
	json_object_set_new(root, "started_at", json_string(bm_iso8601(o->started_wall_ns, started, sizeof(started))));
	json_object_set_new(root, "wall_seconds", json_real((double)o->wall_ns / 1e9));
	json_object_set_new(root, "window_ms", json_real(o->sum ? o->sum->window_ns / 1e6 : 0));
	json_object_set_new(root, "limits", limits_json(&o->limits));
	if (o->sandbox)
		json_object_set_new(root, "sandbox", bm_sandbox_json(o->sandbox));
	json_object_set_new(root, "enforcement", enforcement_json(o));
	summary_json(o, root);
	json_object_set_new(root, "actions", actions_json(o));
	json_object_set_new(root, "throttled_seconds", json_real(o->throttled_s));
	json_object_set_new(root, "frozen_seconds", json_real(o->frozen_s));
	json_object_set_new(root, "exit", json_pack("{s:o, s:o}",
		"code", o->exit_code >= 0 ? json_integer(o->exit_code) : json_null(),
		"signal", o->exit_signal ? json_integer(o->exit_signal) : json_null()));
	json_object_set_new(root, "termination", json_pack("{s:s, s:s}", "reason",
		bm_reason_name(o->reason), "by", o->by ? o->by : "process"));
	json_object_set_new(root, "retry", json_pack("{s:b, s:I, s:s}", "eligible", o->retry_eligible,
		"after_ms", (json_int_t)o->retry_after_ms, "advice", o->advice));
	json_object_set_new(root, "storage", storage_json(o));
	json_object_set_new(root, "oom", oom_json(o));
	json_object_set_new(root, "meter", meter_json(o));
	if (o->pod_uid)
		json_object_set_new(root, "pod", json_pack("{s:s, s:s, s:s}", "uid", o->pod_uid,
				    "container", o->pod_container ? o->pod_container : "",
				    "qos", o->pod_qos ? o->pod_qos : ""));
	/* only where the request had them: observed from the peaks and totals just written */
	if (o->expect && o->expect->set)
		json_object_set_new(root, "expect", bm_expect_json(o->expect, root));
	if (o->traceparent && *o->traceparent)
		json_object_set_new(root, "trace", json_pack("{s:s}", "traceparent", o->traceparent));
	return root;
}

int bm_outcome_write(const json_t *j, const char *path)
{
	struct stat st;
	char tmp[PATH_MAX];
	int fd, err = 0, n;
	char *text;

	text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(9));
	if (!text)
		return -ENOMEM;
	if (!strcmp(path, "-")) {
		if (printf("%s\n", text) < 0 || fflush(stdout))
			err = -EIO;
		goto out;
	}
	/*
	 * What is there and no regular file (/dev/null, a FIFO, a terminal) is
	 * written in place: renamed over, it would become a file (as root,
	 * --outcome /dev/null made /dev/null one).
	 */
	if (!stat(path, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			err = -errno;
		else if (dprintf(fd, "%s\n", text) < 0)
			err = errno ? -errno : -EIO;
		if (fd >= 0 && close(fd) && !err)
			err = -errno;
		goto out;
	}
	n = snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		err = -ENAMETOOLONG;
		goto out;
	}
	fd = mkstemp(tmp);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (dprintf(fd, "%s\n", text) < 0 || fsync(fd) || fchmod(fd, 0644))
		err = errno ? -errno : -EIO;
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
out:
	free(text);
	return err;
}

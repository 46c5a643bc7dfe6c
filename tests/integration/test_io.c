// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The I/O dimensions end to end: `burstmeter run` ($BM_BIN) on bm-io, whose
 * block I/O is known (it writes what it did to a truth file), and the OOM
 * killer's victim named. The files live on a block device: $BM_IO_DIR
 * (the VM suite makes an ext2 on a ramdisk there), else /var/tmp, else
 * the test directory; a place on no block device is a broken setup, never
 * a skip. Every bound comes from the truth file or the workload's
 * arguments:
 *
 *   O_DIRECT bursts: every byte written is a bio of the effect's; the
 *     best window holds what the workload's own clock put in its best
 *     10 ms window (within 10 %; a write that straddles an edge may be in
 *     either: the truth is the range); peak over average as the truth's.
 *   buffered + fsync: the page cache dirtied is what was written; the
 *     fsync writes it back from the task itself, which the meter sees.
 *   buffered + syncfs: the flusher writes it back: the effect's with
 *     cgroup writeback, else counted unattributed (not the effect's).
 *   cold read: what was read came from the disk (its pages were dropped).
 *   a write ceiling: the rate held within 10 % of it, by io.max or
 *     blkio.throttle (enforcement says which), and the meter still sees
 *     the bytes the throttle released later; the same for a read ceiling
 *     on a cold read, an iops ceiling on 4 KiB O_DIRECT writes, and the
 *     request's sandbox.io_write_bps through the agent.
 *   OOM: a memory ceiling's OOM kill names the victim, its size, the limit.
 *   storage: an effect that fills its max_ephemeral_storage (its /tmp
 *     tmpfs) ends with storage_ceiling, its peak reported: launched by the
 *     agent, run standalone (--tmp-size), and run through the agent (attach);
 *     and one that fills its workspace, whose growth counts against it too.
 */
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "agent_fx.h"

static char io_dir[PATH_MAX];	/* a private directory on a block device */
static char truth[PATH_MAX + 16], data[PATH_MAX + 16], tool[PATH_MAX + 16];
static char *wl_dir;

/* Is dir on a block device (a real major number)? */
static bool on_disk(const char *dir)
{
	struct stat st;

	return !stat(dir, &st) && major(st.st_dev) != 0;
}

/* The I/O directory on a block device ($BM_IO_DIR, /var/tmp, or the test's own dir). */
static int io_dirs(void **state)
{
	const char *env = getenv("BM_IO_DIR"), *base = env && *env ? env : "/var/tmp";

	if (!on_disk(base))
		base = ((struct fx *)*state)->dir;
	snprintf(io_dir, sizeof(io_dir), "%s/bm-io.XXXXXX", base);
	if (!on_disk(base) || !mkdtemp(io_dir)) {
		print_error("no directory on a block device for the I/O tests (tried %s): set BM_IO_DIR\n",
			    base);
		return -1;
	}
	snprintf(truth, sizeof(truth), "%s/truth", io_dir);
	snprintf(data, sizeof(data), "%s/data", io_dir);
	return 0;
}

static void io_dirs_remove(void)
{
	if (tool[0])
		unlink(tool);
	tool[0] = '\0';
	unlink(truth);
	unlink(data);
	rmdir(io_dir);
}

static int io_setup(void **state)
{
	int err = setup(state);

	if (!err && io_dirs(state)) {
		teardown(state);
		return -1;
	}
	return err;
}

static int io_teardown(void **state)
{
	io_dirs_remove();
	return teardown(state);
}

/* "key value" from the truth file. */
static double truth_of(const char *key)
{
	char line[256], k[64];
	double v;
	FILE *f = fopen(truth, "re");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lf", k, &v) == 2 && !strcmp(k, key)) {
			fclose(f);
			return v;
		}
	fclose(f);
	fail_msg("truth file has no %s", key);
	return NAN;
}

/* Run in io_dir, so that the ceilings are for its disk (the effect's working directory's). */
static struct res *run_in_io_dir(struct fx *f, ...)
{
	char cwd[PATH_MAX];
	struct proc p;
	va_list ap;

	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(io_dir), 0);
	va_start(ap, f);
	p = vstart_bm(f, R_STD, ap);
	va_end(ap);
	assert_int_equal(chdir(cwd), 0);
	return finish_bm(f, &p);
}

/*
 * 256 MiB (32 under emulation: a ramdisk, and TCG's minutes) of O_DIRECT writes in
 * bursts of 100 ms, 1 s of quiet between them.
 */
static void test_io_dio_bursts(void **state)
{
	struct fx *f = *state;
	const char *mib = getenv("BM_VM") ? "32" : "256";
	double bytes, lo, hi, mpeak, mavg, W = 0.01, windows;
	struct res *r;

	r = run_in_io_dir(f, "--", wl("bm-io"), "dio", data, mib, "100", "1000", truth, NULL);
	check_completed(f, r);
	bytes = truth_of("bytes");
	lo = truth_of("peak_window_lo");
	hi = truth_of("peak_window_hi");
	windows = jnum(r->o, "totals.windows");
	mpeak = jnum(r->o, "peak.io_write_bytes_per_s") * W;
	mavg = jnum(r->o, "average.io_write_bytes_per_s") * W;
	integ_note("dio: %.0f bytes in %.0f windows; best window %.0f (truth %.0f..%.0f), mean %.0f",
		   jnum(r->o, "totals.io_write_bytes"), windows, mpeak, lo, hi, mavg);
	/* every byte, and no more than a few metadata blocks the file system adds */
	assert_between(jnum(r->o, "totals.io_write_bytes"), bytes, bytes * 1.01);
	assert_between(jnum(r->o, "totals.io_ops"), bytes / (256 * 1024), bytes / 4096);
	assert_between(mpeak, lo * 0.9, hi * 1.1);
	/* the mean over every window, as the truth's: and the bursts stand far above it */
	assert_between(mavg, bytes / windows * 0.9, bytes / windows * 1.1);
	assert_between(mpeak / mavg, lo / (bytes / windows) * 0.9, hi / (bytes / windows) * 1.1);
	assert_true(mpeak / mavg > 3);
	assert_true(jint(r->o, "meter.io_bios_by.blkcg") + jint(r->o, "meter.io_bios_by.submitter") +
		    jint(r->o, "meter.io_bios_by.v1_twin") == jint(r->o, "totals.io_ops"));
	assert_clean(f);
}

/* 64 MiB through the page cache, then fsync: dirtied, then written back by the task. */
static void test_io_buffered_fsync(void **state)
{
	struct fx *f = *state;
	struct res *r;
	double bytes;

	r = run_in_io_dir(f, "--", wl("bm-io"), "buffered", data, "64", truth, NULL);
	check_completed(f, r);
	bytes = truth_of("bytes");
	integ_note("buffered: dirtied %.0f, written %.0f of %.0f (%s)",
		   jnum(r->o, "totals.dirtied_bytes"), jnum(r->o, "totals.io_write_bytes"), bytes,
		   jstr(r->o, "meter.io_attribution"));
	assert_between(jnum(r->o, "totals.dirtied_bytes"), bytes, bytes * 1.05);
	/* the flusher may take some first: where it is not attributed, the fsync had less to do */
	assert_between(jnum(r->o, "totals.io_write_bytes"),
		       strcmp(jstr(r->o, "meter.io_attribution"), "blkcg") ? bytes * 0.5 : bytes * 0.98,
		       bytes * 1.05);
	assert_true(jnum(r->o, "peak.dirty_bytes_per_s") > 0);
	assert_clean(f);
}

/*
 * 32 MiB through the page cache, then syncfs(): the flusher (a kernel
 * thread) writes it back, not the task. With cgroup writeback (blkcg) its
 * bios are the effect's; elsewhere the kernel cannot tell whose they are,
 * and the meter counts them unattributed (meter.io_unattributed_bios, a
 * count of the node's meter: read before and after), never the effect's.
 */
static void test_io_flusher_writeback(void **state)
{
	struct fx *f = *state;
	double before, bytes, written, unattr;
	struct res *r;

	r = run_in_io_dir(f, "--", "true", NULL);
	check_completed(f, r);
	before = jnum(r->o, "meter.io_unattributed_bios");
	r = run_in_io_dir(f, "--", wl("bm-io"), "buffered", data, "32", truth, "syncfs", NULL);
	check_completed(f, r);
	bytes = truth_of("bytes");
	written = jnum(r->o, "totals.io_write_bytes");
	unattr = jnum(r->o, "meter.io_unattributed_bios") - before;
	integ_note("flusher: dirtied %.0f, the effect's writes %.0f of %.0f (%s), %.0f bios unattributed "
		   "meanwhile", jnum(r->o, "totals.dirtied_bytes"), written, bytes,
		   jstr(r->o, "meter.io_attribution"), unattr);
	assert_between(jnum(r->o, "totals.dirtied_bytes"), bytes, bytes * 1.05);
	if (!strcmp(jstr(r->o, "meter.io_attribution"), "blkcg")) {
		assert_between(written, bytes * 0.98, bytes * 1.05);
	} else {
		/*
		 * none of it the effect's; the flusher's bios counted unattributed
		 * (how many: their size is the kernel's, up to many MiB with large
		 * folios: 6 for the 32 MiB in one CI run, 93-132 in others)
		 */
		assert_true(written < bytes * 0.1);
		assert_true(unattr >= 1);
	}
	assert_clean(f);
}

/*
 * A ceiling held: o (an outcome) has it as asked in limits.KEY, a
 * controller's file named in enforcement.KEY, and the workload's own rate
 * within 10 % of it.
 */
static void assert_ceiling_held(json_t *o, const char *key, double ceiling, double rate)
{
	char path[64];

	snprintf(path, sizeof(path), "limits.%s", key);
	assert_int_equal(jint(o, path), (long long)ceiling);
	snprintf(path, sizeof(path), "enforcement.%s", key);
	assert_non_null(strstr(jstr(o, path), "cgroup v"));
	assert_between(rate, ceiling * 0.9, ceiling * 1.1);
}

/* mib MiB written and synced here: clean, for the effect to drop from the page cache and read. */
static void put_data(int mib)
{
	char buf[65536];
	int fd, i;

	memset(buf, 7, sizeof(buf));
	fd = open(data, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	for (i = 0; i < mib * 16; i++)
		assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
	assert_int_equal(fsync(fd), 0);
	close(fd);
}

/* 32 MiB written and synced here, its pages dropped in the effect, then read. */
static void test_io_cold_read(void **state)
{
	struct fx *f = *state;
	struct res *r;
	double bytes;

	put_data(32);
	r = run_in_io_dir(f, "--", wl("bm-io"), "read", data, truth, NULL);
	check_completed(f, r);
	bytes = truth_of("bytes");
	assert_int_equal((long long)bytes, 32LL << 20);
	integ_note("cold read: %.0f bytes read from the disk of %.0f", jnum(r->o, "totals.io_read_bytes"),
		   bytes);
	assert_between(jnum(r->o, "totals.io_read_bytes"), bytes * 0.98, bytes * 1.1);
	assert_true(jnum(r->o, "peak.io_read_bytes_per_s") > 0);
	assert_clean(f);
}

/*
 * The same cold read, 32 MiB (16 under emulation) under --io-read-bps 8M
 * (4M): the reader's own rate held within 10 % of it, by io.max or
 * blkio.throttle.read_bps_device (enforcement says which).
 */
static void test_io_read_ceiling(void **state)
{
	struct fx *f = *state;
	bool vm = getenv("BM_VM");
	double ceiling = (vm ? 4 : 8) * MIB, rate;
	struct res *r;

	put_data(vm ? 16 : 32);
	r = run_in_io_dir(f, "--io-read-bps", vm ? "4M" : "8M", "--", wl("bm-io"), "read", data, truth,
			  NULL);
	check_completed(f, r);
	rate = truth_of("bytes_per_s");
	integ_note("read ceiling %.0f: held at %.0f B/s by %s; the meter read %.0f of %.0f bytes",
		   ceiling, rate, jstr(r->o, "enforcement.io_read_bps"),
		   jnum(r->o, "totals.io_read_bytes"), truth_of("bytes"));
	assert_ceiling_held(r->o, "io_read_bps", ceiling, rate);
	assert_between(jnum(r->o, "totals.io_read_bytes"), truth_of("bytes") * 0.98,
		       truth_of("bytes") * 1.1);
	assert_clean(f);
}

/*
 * 3 MiB of 4 KiB O_DIRECT writes (768: one bio each) under --io-iops 200
 * (100 under emulation): the writer's own rate of writes held within 10 %
 * of it, and the meter counts every one.
 */
static void test_io_iops_ceiling(void **state)
{
	struct fx *f = *state;
	bool vm = getenv("BM_VM");
	double ceiling = vm ? 100 : 200, rate, writes, span, per;
	struct res *r;

	r = run_in_io_dir(f, "--io-iops", vm ? "100" : "200", "--", wl("bm-io"), "steady", data,
			  vm ? "2" : "3", truth, "4", NULL);
	check_completed(f, r);
	rate = truth_of("writes_per_s");
	writes = truth_of("writes");
	span = (truth_of("last_ns") - truth_of("first_ns")) / 1e9;
	/*
	 * The kernel counts I/Os, bios as the file system makes them: a 4 KiB
	 * write is one on a 4 KiB-block file system, four on the VM's ext2 of
	 * 1 KiB blocks. The meter counts the same bios.
	 */
	per = jnum(r->o, "totals.io_ops") / writes;
	integ_note("iops ceiling %.0f: %.0f writes held at %.1f/s (%.2f I/Os each: %.1f I/Os/s) by %s; "
		   "the meter counted %.0f ops", ceiling, writes, rate, per, rate * per,
		   jstr(r->o, "enforcement.io_iops"), jnum(r->o, "totals.io_ops"));
	assert_between(per, 1.0, 4.2);
	assert_ceiling_held(r->o, "io_iops", ceiling, rate * per);
	assert_between(jnum(r->o, "totals.io_ops") / span, ceiling * 0.9, ceiling * 1.15);
	assert_clean(f);
}

/* 48 MiB (24 under emulation) of O_DIRECT writes under --io-write-bps 16M (8M). */
static void test_io_write_ceiling(void **state)
{
	struct fx *f = *state;
	bool vm = getenv("BM_VM");
	double ceiling = (vm ? 8 : 16) * MIB, rate, bytes, span;
	char psi[PATH_MAX + 16];
	struct res *r;

	r = run_in_io_dir(f, "--io-write-bps", vm ? "8M" : "16M", "--", wl("bm-io"), "steady", data,
			  vm ? "24" : "48", truth, NULL);
	check_completed(f, r);
	bytes = truth_of("bytes");
	rate = truth_of("bytes_per_s");
	span = (truth_of("last_ns") - truth_of("first_ns")) / 1e9;
	integ_note("write ceiling %.0f: held at %.0f B/s by %s; the meter saw %.0f bytes (%s)", ceiling,
		   rate, jstr(r->o, "enforcement.io_write_bps"), jnum(r->o, "totals.io_write_bytes"),
		   jstr(r->o, "meter.io_attribution"));
	assert_ceiling_held(r->o, "io_write_bps", ceiling, rate);
	/* the meter's rate over the same span: what the throttle let through, when it did */
	assert_between(jnum(r->o, "totals.io_write_bytes"), bytes, bytes * 1.01);
	assert_between(jnum(r->o, "totals.io_write_bytes") / span, ceiling * 0.9, ceiling * 1.15);
	/*
	 * PSI io, where the effect's cgroup has it: the throttled writer waits
	 * on its bios (iowait) most of its span, so its some-stall is a good
	 * part of it
	 */
	snprintf(psi, sizeof(psi), "%s/io.pressure", cg_parent);
	if (access(psi, F_OK)) {
		assert_true(json_is_null(jget(r->o, "meter.psi_io_some_us")));
	} else {
		integ_note("write ceiling: psi io some %.0f us over a span of %.2f s",
			   jnum(r->o, "meter.psi_io_some_us"), span);
		assert_true(jnum(r->o, "meter.psi_io_some_us") > span * 1e6 * 0.5);
	}
	assert_clean(f);
}

/*
 * The ladder's I/O rung: a policy whose io level is 128 MiB/s (16 under
 * emulation) with a throttle step, and a writer of 512 MiB (64; over the
 * first 64 MiB of its file again and again) that would go at the disk's
 * speed. Truth: the ladder throttles (io.max or
 * blkio.throttle at the level, the disks found without any I/O ceiling), so
 * the writer's own rate stays within 1.5 times the level, where
 * unthrottled it runs at the disk's hundreds of MB/s.
 */
static void test_io_ladder_throttles(void **state)
{
	struct fx *f = *state;
	bool vm = getenv("BM_VM");
	double level = (vm ? 16 : 128) * MIB, rate;
	char pol[PATH_MAX + 16], line[128];
	struct res *r;
	json_t *a;
	FILE *fp;

	snprintf(pol, sizeof(pol), "%s/policy.yaml", io_dir);
	fp = fopen(pol, "we");
	assert_non_null(fp);
	fprintf(fp, "defaults:\n  io: { soft: %s, hold_ms: 0, steps: [throttle] }\n", vm ? "16M" : "128M");
	assert_int_equal(fclose(fp), 0);
	r = run_in_io_dir(f, "--policy", pol, "--", wl("bm-io"), "steady", data,
				      vm ? "64" : "512", truth, NULL);
	unlink(pol);
	check_completed(f, r);
	rate = truth_of("bytes_per_s");
	a = json_array_get(jget(r->o, "actions"), 0);
	snprintf(line, sizeof(line), "%s", a ? json_string_value(json_object_get(a, "action")) : "none");
	integ_note("io rung: first action %s (%s), writer at %.0f B/s against a level of %.0f; "
		   "throttled %.2f s", line, a ? json_string_value(json_object_get(a, "reason")) : "-",
		   rate, level, jnum(r->o, "throttled_seconds"));
	assert_string_equal(line, "throttle");
	assert_string_equal(json_string_value(json_object_get(a, "reason")), "io_ceiling");
	assert_true(jnum(r->o, "throttled_seconds") > 0);
	/* held at the level, but for the windows before the ladder looked */
	assert_true(rate < 1.5 * level);
	assert_clean(f);
}

/* 256 MiB touched under a 64 MiB ceiling: the memory controller's OOM killer takes it. */
static void test_io_oom_victim(void **state)
{
	struct fx *f = *state;
	struct res *r;
	json_t *v;

	r = run_bm(f, R_STD, "--memory", "64M", "--", wl("bm-memtouch"), "256", "100", NULL);
	assert_non_null(r->o);
	integ_note("oom: %s", json_dumps(jget(r->o, "oom"), JSON_COMPACT));
	assert_string_equal(jstr(r->o, "termination.reason"), "memory_ceiling");
	assert_true(jint(r->o, "oom.victims_total") >= 1);
	v = json_array_get(jget(r->o, "oom.victims"), 0);
	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(v, "command")), "bm-memtouch");
	assert_true(json_integer_value(json_object_get(v, "pid")) > 1);
	/* it held what the ceiling allowed (its anonymous pages) and its binary: resident, not mapped */
	assert_between((double)json_integer_value(json_object_get(v, "rss_bytes")) / MIB, 16, 72);
	assert_true(json_integer_value(json_object_get(v, "total_vm_bytes")) >= 256LL << 20);
	assert_string_equal(jstr(r->o, "oom.limit"), "memory_ceiling");
	assert_true(jint(r->o, "oom.memory_events.oom_kill") >= 1);
	assert_clean(f);
}

static int agent_setup(void **state)
{
	int err = agent_fx_setup(state, "io", "bmit-io");

	if (!err && io_dirs(state)) {
		agent_fx_teardown(state);
		return -1;
	}
	return err;
}

static int agent_teardown(void **state)
{
	io_dirs_remove();
	return agent_fx_teardown(state);
}

/*
 * bm-io copied to the I/O directory (on a disk): a private /tmp hides the
 * host's, and a workload under it (a build in /tmp) with it.
 */
static const char *io_tool(void)
{
	char cmd[3 * PATH_MAX + 64];

	snprintf(tool, sizeof(tool), "%s/bm-io", io_dir);
	assert_true(strncmp(io_dir, "/tmp/", 5) != 0);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0755 '%s' '%s'", wl("bm-io"), tool, tool,
		 io_dir);
	assert_int_equal(system(cmd), 0);
	return tool;
}

/*
 * An outcome (o: the outcome object) of an effect that filled limit bytes
 * of /tmp: storage_ceiling, where, the peak (full, less the truth file
 * beside it), the advice, and ended at once rather than left to wait 10 s
 * for room.
 */
static void assert_tmp_full(json_t *o, long long limit)
{
	double peak = jnum(o, "storage.peak_bytes");

	integ_note("storage: %s after %.2f s, where %s, peak %.0f of %.0f; advice: %s",
		   jstr(o, "termination.reason"), jnum(o, "wall_seconds"), jstr(o, "storage.where"),
		   peak, jnum(o, "limits.ephemeral_storage_bytes"), jstr(o, "retry.advice"));
	assert_string_equal(jstr(o, "termination.reason"), "storage_ceiling");
	assert_int_equal(jint(o, "limits.ephemeral_storage_bytes"), limit);
	assert_string_equal(jstr(o, "storage.where"), "/tmp");
	assert_between(peak, (double)limit - MIB, (double)limit);
	assert_false(json_is_true(jget(o, "retry.eligible")));
	assert_non_null(strstr(jstr(o, "retry.advice"), "max_ephemeral_storage"));
	assert_true(jnum(o, "wall_seconds") < 5);
	assert_non_null(strstr(jstr(o, "enforcement.ephemeral_storage"), "tmpfs"));
}

/*
 * 64 MiB into /tmp under max_ephemeral_storage 16Mi: the tmpfs refuses
 * the rest (ENOSPC), the writer waits for room, and the agent, which
 * looks at the tmpfs every 20 ms, ends the effect with storage_ceiling.
 */
static void test_io_storage_ceiling(void **state)
{
	json_t *req, *e = NULL;

	agent_start_cfg("", "max_running: 4\nadmit_cpu_pressure: 100\nadmit_mem_available: 0\n");
	req = launch_req("fill", "bm-io", "fill", "/tmp", "64", "/tmp/truth", NULL);
	json_array_set_new(json_object_get(req, "argv"), 0, json_string(io_tool()));
	json_object_set_new(req, "sandbox", json_pack("{s:s}", "max_ephemeral_storage", "16Mi"));
	assert_int_equal(call("POST", "/v1/effects", req, &e), 201);
	json_decref(e);
	e = wait_final("fill", 30000);
	assert_string_equal(jstr(e, "state"), "killed");
	assert_tmp_full(jget(e, "outcome"), 16LL << 20);
	json_decref(e);
	agent_fx_finish(state);
}

/* The same with `run --standalone --tmp-size 8M`: run's supervisor bounds its /tmp as the agent's does. */
static void test_io_storage_run(void **state)
{
	struct fx *f = *state;
	struct res *r;

	r = run_bm(f, R_STD, "--standalone", "--tmp-size", "8M", "--", io_tool(), "fill", "/tmp", "64",
		   "/tmp/truth", NULL);
	assert_non_null(r->o);
	assert_tmp_full(r->o, 8LL << 20);
	/* killed: 128 + SIGKILL, as a shell says */
	assert_int_equal(jint(r->o, "exit.signal"), SIGKILL);
	assert_int_equal(r->status, 128 + SIGKILL);
	assert_clean(f);
}

/* And through the agent (`run --socket`: an attach, its /tmp made by run): the agent bounds it. */
static void test_io_storage_attach(void **state)
{
	struct fx *f = *state;
	struct res *r;
	json_t *e;

	agent_start_cfg("", "max_running: 4\nadmit_cpu_pressure: 100\nadmit_mem_available: 0\n");
	r = run_bm(f, R_STD, "--socket", ag.sock, "--tmp-size", "8M", "--", io_tool(), "fill", "/tmp",
		   "64", "/tmp/truth", NULL);
	assert_non_null(r->o);
	assert_tmp_full(r->o, 8LL << 20);
	assert_int_equal(r->status, 128 + SIGKILL);
	e = wait_final_as(token, f->id, 5000);
	assert_string_equal(jstr(e, "state"), "killed");
	assert_string_equal(jstr(e, "outcome.termination.reason"), "storage_ceiling");
	json_decref(e);
	agent_fx_finish(state);
}

/*
 * Its workspace counts too: `run --workspace WS --tmp-size 16M` and a
 * writer of 64 MiB into WS at 32 MiB/s. The supervisor walks WS (du) every
 * 100 ms or so: it ends the effect with storage_ceiling, where WS, once
 * what WS grew by and /tmp hold 16 MiB together, past it by no more than
 * what 32 MiB/s writes between two walks (and the tick after).
 */
static void test_io_storage_workspace(void **state)
{
	struct fx *f = *state;
	char ws[PATH_MAX + 16], fill[PATH_MAX + 32], tr[PATH_MAX + 32];
	double peak, limit = 16 * MIB;
	struct stat st;
	struct res *r;
	json_t *p;

	snprintf(ws, sizeof(ws), "%s/ws", io_dir);
	snprintf(fill, sizeof(fill), "%s/fill", ws);
	snprintf(tr, sizeof(tr), "%s/truth", ws);
	assert_int_equal(mkdir(ws, 0755), 0);
	r = run_bm(f, R_STD, "--standalone", "--tmp-size", "16M", "--workspace", ws, "--", io_tool(),
		   "fill", ws, "64", tr, "32", NULL);
	assert_non_null(r->o);
	peak = jnum(r->o, "storage.peak_bytes");
	assert_int_equal(stat(fill, &st), 0);
	integ_note("workspace: %s after %.2f s, where %s, peak %.0f of %.0f (places %s); %lld bytes "
		   "left in the workspace", jstr(r->o, "termination.reason"), jnum(r->o, "wall_seconds"),
		   jstr(r->o, "storage.where"), peak, limit,
		   json_dumps(jget(r->o, "storage.places"), JSON_COMPACT), (long long)st.st_size);
	unlink(fill);
	unlink(tr);
	rmdir(ws);
	assert_string_equal(jstr(r->o, "termination.reason"), "storage_ceiling");
	assert_string_equal(jstr(r->o, "storage.where"), ws);
	assert_between(peak, limit, limit + 8 * MIB);
	/* each place: /tmp (held almost nothing) and the workspace (held the rest) */
	assert_int_equal(json_array_size(jget(r->o, "storage.places")), 2);
	p = json_array_get(jget(r->o, "storage.places"), 0);
	assert_string_equal(json_string_value(json_object_get(p, "where")), "/tmp");
	assert_true(json_integer_value(json_object_get(p, "peak_bytes")) < MIB);
	p = json_array_get(jget(r->o, "storage.places"), 1);
	assert_string_equal(json_string_value(json_object_get(p, "where")), ws);
	assert_between((double)json_integer_value(json_object_get(p, "peak_bytes")), limit - MIB,
		       limit + 8 * MIB);
	/* stopped well before its 64 MiB (2 s at its pace) */
	assert_true(st.st_size <= (off_t)(limit + 8 * MIB));
	assert_true(jnum(r->o, "wall_seconds") < 1.5);
	assert_non_null(strstr(jstr(r->o, "enforcement.ephemeral_storage"), "workspace"));
	assert_int_equal(r->status, 128 + SIGKILL);
	assert_clean(f);
}

/*
 * The request's sandbox.io_write_bps, through the agent: 48 MiB (24 under
 * emulation) of O_DIRECT writes in its working directory under 16Mi (8Mi),
 * held within 10 % by the mechanism the outcome's enforcement names.
 */
static void test_io_agent_write_ceiling(void **state)
{
	bool vm = getenv("BM_VM");
	double ceiling = (vm ? 8 : 16) * MIB, rate;
	json_t *req, *e = NULL;

	agent_start_cfg("", "max_running: 4\nadmit_cpu_pressure: 100\nadmit_mem_available: 0\n");
	req = launch_req("wceil", "bm-io", "steady", data, vm ? "24" : "48", truth, NULL);
	json_array_set_new(json_object_get(req, "argv"), 0, json_string(io_tool()));
	/* the effect runs as its tenant's uid: it writes its data and truth here */
	assert_int_equal(chmod(io_dir, 0777), 0);
	json_object_set_new(req, "cwd", json_string(io_dir));
	json_object_set_new(req, "sandbox", json_pack("{s:s}", "io_write_bps", vm ? "8Mi" : "16Mi"));
	assert_int_equal(call("POST", "/v1/effects", req, &e), 201);
	json_decref(e);
	e = wait_final("wceil", 60000);
	rate = truth_of("bytes_per_s");
	integ_note("agent write ceiling %.0f: %s, held at %.0f B/s by %s", ceiling, jstr(e, "state"),
		   rate, jstr(e, "outcome.enforcement.io_write_bps"));
	assert_string_equal(jstr(e, "state"), "succeeded");
	assert_ceiling_held(jget(e, "outcome"), "io_write_bps", ceiling, rate);
	assert_between(jnum(e, "outcome.totals.io_write_bytes"), truth_of("bytes"),
		       truth_of("bytes") * 1.01);
	json_decref(e);
	agent_fx_finish(state);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_io_dio_bursts, io_setup, io_teardown),
		cmocka_unit_test_setup_teardown(test_io_buffered_fsync, io_setup, io_teardown),
		cmocka_unit_test_setup_teardown(test_io_flusher_writeback, io_setup, io_teardown),
		cmocka_unit_test_setup_teardown(test_io_cold_read, io_setup, io_teardown),
		cmocka_unit_test_setup_teardown(test_io_write_ceiling, io_setup, io_teardown),
		cmocka_unit_test_setup_teardown(test_io_read_ceiling, io_setup, io_teardown),
		cmocka_unit_test_setup_teardown(test_io_iops_ceiling, io_setup, io_teardown),
		cmocka_unit_test_setup_teardown(test_io_agent_write_ceiling, agent_setup, agent_teardown),
		cmocka_unit_test_setup_teardown(test_io_ladder_throttles, io_setup, io_teardown),
		cmocka_unit_test_setup_teardown(test_io_oom_victim, io_setup, io_teardown),
		cmocka_unit_test_setup_teardown(test_io_storage_ceiling, agent_setup, agent_teardown),
		cmocka_unit_test_setup_teardown(test_io_storage_run, io_setup, io_teardown),
		cmocka_unit_test_setup_teardown(test_io_storage_attach, agent_setup, agent_teardown),
		cmocka_unit_test_setup_teardown(test_io_storage_workspace, io_setup, io_teardown),
	};
	size_t n;
	int rc = runner_init("test_io");

	if (rc)
		return rc;
	/* the runs start in io_dir: the binary and the workloads by absolute paths */
	bm_bin = realpath(bm_bin, NULL);
	wl_dir = realpath(getenv("BM_WORKLOADS") && *getenv("BM_WORKLOADS") ? getenv("BM_WORKLOADS")
									 : "build/workloads", NULL);
	if (!bm_bin || !wl_dir || setenv("BM_WORKLOADS", wl_dir, 1)) {
		fprintf(stderr, "test_io: cannot resolve the binary and the workloads: %s\n",
			strerror(errno));
		return 1;
	}
	n = integ_filter(tests, sizeof(tests) / sizeof(tests[0]));
	return _cmocka_run_group_tests("io", tests, n, NULL, NULL);
}

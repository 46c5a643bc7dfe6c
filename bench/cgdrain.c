// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-cgdrain [-n] N HIERARCHY...: the kernel's own floor for a drain. N
 * processes, each alone in a cgroup of its own in every HIERARCHY ("unified"
 * for v2, or a v1 controller's name: cpu, memory, pids, blkio), made under
 * this process's own cgroup in each; then all are killed at once (cgroup.kill
 * of the v2 one, as the agent does), reaped, and their cgroups removed (rmdir
 * retried while the kernel says EBUSY), as an agent must when N effects end
 * together. -n: each also in a PID and a mount namespace of its own, its
 * first process (an init) with its own /proc, as an effect's sandbox is. Prints
 * "made S  drained S": the seconds to make them, and from the kill to the
 * last rmdir. No metering, no store, no JSON: what is left is the kernel's.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_H 8

static char base[MAX_H][PATH_MAX / 2];
static int nh;
static pid_t me;		/* the names are ours: the children name their cgroups with it */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* This process's cgroup directory in hierarchy h (from /proc/self/cgroup), or -1. */
static int own_dir(const char *h, char *out, size_t len)
{
	char line[PATH_MAX / 4], *path, *ctrls;
	FILE *f = fopen("/proc/self/cgroup", "r");
	int found = -1;
	struct stat st;
	bool v2 = !strcmp(h, "unified");
	const char *root = v2 ? (stat("/sys/fs/cgroup/unified", &st) ? "/sys/fs/cgroup"
								  : "/sys/fs/cgroup/unified")
			      : NULL;

	while (f && found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		ctrls = strchr(line, ':');
		path = ctrls ? strchr(ctrls + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		ctrls++;
		if (v2 && !*ctrls) {
			snprintf(out, len, "%s%s", root, path);
			found = 0;
		} else if (!v2) {
			char *tok, *save;

			for (tok = strtok_r(ctrls, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
				if (!strcmp(tok, h)) {
					snprintf(out, len, "/sys/fs/cgroup/%s%s", h, path);
					found = 0;
				}
		}
	}
	if (f)
		fclose(f);
	return found;
}

static int join(const char *dir, pid_t pid)
{
	char path[PATH_MAX + 32];
	FILE *f;
	int err;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	err = fprintf(f, "%d\n", pid) < 0;
	return fclose(f) || err ? -1 : 0;
}

static void name(char *buf, size_t len, int h, int i)
{
	snprintf(buf, len, "%.2000s/bm-cgdrain-%d-%d", base[h], (int)me, i);
}

int main(int argc, char **argv)
{
	char dir[PATH_MAX];
	double t0, t1, t2;
	pid_t *pids;
	int n, i, h, left, bad = 0;
	bool ns = false;

	if (argc > 1 && !strcmp(argv[1], "-n")) {
		ns = true;
		argv++;
		argc--;
	}
	if (argc < 3 || (n = atoi(argv[1])) <= 0 || argc - 2 > MAX_H || strcmp(argv[2], "unified")) {
		fprintf(stderr, "usage: bm-cgdrain [-n] N unified [cpu|memory|pids|blkio]...\n");
		return 2;
	}
	for (h = 0; h < argc - 2; h++, nh++)
		if (own_dir(argv[h + 2], base[h], sizeof(base[h]))) {
			fprintf(stderr, "bm-cgdrain: no %s hierarchy for this process\n", argv[h + 2]);
			return 1;
		}
	me = getpid();
	pids = calloc(n, sizeof(*pids));
	if (!pids)
		return 1;
	t0 = now_s();
	for (i = 0; i < n && !bad; i++) {
		for (h = 0; h < nh && !bad; h++) {
			name(dir, sizeof(dir), h, i);
			bad = mkdir(dir, 0755) && errno != EEXIST;
		}
		pids[i] = bad ? -1 : fork();
		if (!pids[i]) {
			for (h = 0; h < nh; h++) {
				name(dir, sizeof(dir), h, i);
				if (join(dir, getpid()))
					_exit(1);
			}
			if (ns) {
				/* the namespaces' first process, as bm-init is, with a /proc of its own */
				if (unshare(CLONE_NEWNS | CLONE_NEWPID) ||
				    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
					_exit(1);
				if (!fork()) {
					if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
						_exit(1);
					pause();
					_exit(0);
				}
			}
			pause();
			_exit(0);
		}
		bad = bad || pids[i] < 0;
	}
	if (bad)
		fprintf(stderr, "bm-cgdrain: stopped at %d of %d: %s\n", i, n, strerror(errno));
	n = i;
	/* every child in its cgroups before the clock starts */
	for (i = 0; i < n; i++)
		for (h = 0; h < nh; h++) {
			char procs[PATH_MAX + 32], buf[32];
			FILE *f;
			size_t got = 0;

			name(dir, sizeof(dir), h, i);
			snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
			while (pids[i] > 0 && !got && (f = fopen(procs, "r"))) {
				got = fread(buf, 1, sizeof(buf), f);
				fclose(f);
				if (got)
					break;
				/* a child that could not join has exited: counted, not waited for */
				if (waitpid(pids[i], NULL, WNOHANG) == pids[i]) {
					fprintf(stderr, "bm-cgdrain: child %d could not join %s\n", i, dir);
					pids[i] = -1;
					bad = 1;
				}
				usleep(1000);
			}
		}
	t1 = now_s();
	/* hierarchy 0 is the v2 one: its cgroup.kill ends every process in it, an init's too */
	for (i = 0; i < n; i++) {
		char kill_file[PATH_MAX + 32];
		FILE *f;

		name(dir, sizeof(dir), 0, i);
		snprintf(kill_file, sizeof(kill_file), "%s/cgroup.kill", dir);
		f = fopen(kill_file, "w");
		if (!f || fputs("1", f) < 0)
			kill(pids[i], SIGKILL);
		if (f)
			fclose(f);
	}
	for (i = 0; i < n; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
	/* the rmdirs, round after round while the kernel is still tearing some down */
	for (left = n * nh; left;) {
		left = 0;
		for (i = 0; i < n; i++)
			for (h = 0; h < nh; h++) {
				name(dir, sizeof(dir), h, i);
				if (rmdir(dir) && errno == EBUSY)
					left++;
			}
		if (left)
			usleep(1000);
	}
	t2 = now_s();
	printf("made %.3f  drained %.3f  (%d processes%s, %d hierarchies)\n", t1 - t0, t2 - t1, n,
	       ns ? " in PID and mount namespaces" : "", nh);
	free(pids);
	return bad;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "base/common.h"

static enum bm_log_level log_level = BM_LOG_INFO;
static bool log_json;

void bm_log_set_level(enum bm_log_level level)
{
	log_level = level;
}

enum bm_log_level bm_log_get_level(void)
{
	return log_level;
}

void bm_log_set_json(bool json)
{
	log_json = json;
}

static void json_escape_to(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
}

void bm_blank_controls(char *s, char with)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = with;
}

static void vlog(enum bm_log_level level, const char *fmt, va_list ap)
{
	char msg[1024];
	size_t n;

	if (level > log_level)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = '\0';
	/* one message, one line: a value echoed back cannot forge a second one */
	bm_blank_controls(msg, '?');
	if (log_json && level == BM_LOG_ERROR) {
		fputs("{\"error\": \"", stderr);
		json_escape_to(stderr, msg);
		fputs("\"}\n", stderr);
		return;
	}
	fprintf(stderr, "burstmeter: %s\n", msg);
}

void bm_log(enum bm_log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(level, fmt, ap);
	va_end(ap);
}

int bm_err_errno(int err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	err = err < 0 ? err : -err;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	bm_log(BM_LOG_ERROR, "%s: %s", msg, strerror(-err));
	return err;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * BM_NSEC_PER_SEC + ts.tv_nsec;
}

uint64_t bm_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t bm_wall_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

void bm_timerfd_at(int fd, uint64_t at_ns)
{
	struct itimerspec its = { 0 };

	if (at_ns != UINT64_MAX) {
		/* 0 would disarm: a time already past fires at once */
		at_ns = at_ns ? at_ns : 1;
		its.it_value.tv_sec = (time_t)(at_ns / BM_NSEC_PER_SEC);
		its.it_value.tv_nsec = (long)(at_ns % BM_NSEC_PER_SEC);
	}
	timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
}

char *bm_iso8601(uint64_t wall_ns, char *buf, size_t len)
{
	time_t sec = wall_ns / BM_NSEC_PER_SEC;
	struct tm tm;
	char base[24];

	gmtime_r(&sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03uZ", base, (unsigned)(wall_ns % BM_NSEC_PER_SEC / BM_NSEC_PER_MSEC));
	return buf;
}

int bm_read_file(int dirfd, const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd, err = 0;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		err = -errno;
	else
		buf[n] = '\0';
	close(fd);
	return err ? err : (int)n;
}

int bm_reread_file(int *fd, const char *path, char *buf, size_t len)
{
	struct stat now, kept;
	ssize_t n;

	if (*fd >= 0 && (stat(path, &now) || fstat(*fd, &kept) || now.st_ino != kept.st_ino ||
			 now.st_dev != kept.st_dev)) {
		close(*fd);
		*fd = -1;
	}
	if (*fd < 0 && (*fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = pread(*fd, buf, len - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

int bm_write_file(int dirfd, const char *path, const char *s)
{
	size_t len = strlen(s);
	ssize_t n;
	int fd, err = 0;

	fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, s, len);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	close(fd);
	return err;
}

uint64_t bm_pid_start(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (bm_read_file(AT_FDCWD, path, buf, sizeof(buf)) < 0 || !(p = strrchr(buf, ')')))
		return 0;
	/* after "(comm)", which may hold spaces and parentheses: the space before field i */
	for (i = 3; i <= 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (p)
		sscanf(p + 1, "%llu", &start);
	return start;
}

void bm_fault(const char *point)
{
	static const char *want;
	static bool read;

	if (!read) {
		want = getenv("BURSTMETER_FAULT");
		read = true;
	}
	if (want && !strcmp(want, point))
		(void)raise(SIGKILL);
}

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Logging, clocks and small helpers shared by the library and the front ends. */
#ifndef BM_COMMON_H
#define BM_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define BM_NSEC_PER_SEC 1000000000ULL
#define BM_NSEC_PER_MSEC 1000000ULL
#define BM_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/*
 * Exit statuses (docs/DESIGN.md), as timeout(1) has them. Bad input, for
 * every command as for run: one line naming it, and 125, which is also
 * burstmeter's own failure in run (the command's status cannot be 125's).
 */
#define BM_EXIT_DEADLINE 124
#define BM_EXIT_USAGE 125
#define BM_EXIT_INTERNAL 125
#define BM_EXIT_NOEXEC 126
#define BM_EXIT_NOTFOUND 127

enum bm_log_level { BM_LOG_ERROR, BM_LOG_WARN, BM_LOG_INFO, BM_LOG_DEBUG };

/* Messages go to stderr as "burstmeter: ..."; debug only with bm_log_set_level(BM_LOG_DEBUG). */
void bm_log(enum bm_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bm_log_set_level(enum bm_log_level level);
enum bm_log_level bm_log_get_level(void);
/* When set, errors are printed as {"error": "..."} so scripts never parse prose. */
void bm_log_set_json(bool json);

/* s on one line, safe on a terminal: each control byte (below 0x20, and DEL) becomes with. */
void bm_blank_controls(char *s, char with);

/*
 * Log "<message>: <strerror(err)>" as an error and return err as -errno
 * (err may be either sign). The caller captures errno in the argument,
 * before anything can change it: return bm_err_errno(-errno, "failed to x").
 */
int bm_err_errno(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define bm_err(...) bm_log(BM_LOG_ERROR, __VA_ARGS__)
#define bm_warn(...) bm_log(BM_LOG_WARN, __VA_ARGS__)
#define bm_info(...) bm_log(BM_LOG_INFO, __VA_ARGS__)
#define bm_dbg(...) bm_log(BM_LOG_DEBUG, __VA_ARGS__)

/* CLOCK_MONOTONIC in ns: the time base of bpf_ktime_get_ns(). */
uint64_t bm_now_ns(void);
/* CLOCK_REALTIME in ns. */
uint64_t bm_wall_ns(void);
/*
 * Arm a CLOCK_MONOTONIC timerfd to fire at at_ns (bm_now_ns() time; one
 * already past fires at once) or, with UINT64_MAX, disarm it.
 */
void bm_timerfd_at(int fd, uint64_t at_ns);
/* Format CLOCK_REALTIME ns as 2026-11-30T10:00:00.000Z into buf (>= 32 bytes). */
char *bm_iso8601(uint64_t wall_ns, char *buf, size_t len);

/*
 * A point a test may kill us at: if $BURSTMETER_FAULT names it, SIGKILL,
 * there and then (tests/integration/test_faults.c). Costs a string compare.
 */
void bm_fault(const char *point);

/* The start time of pid (/proc/PID/stat field 22, clock ticks since boot), 0 if it is gone. */
uint64_t bm_pid_start(pid_t pid);

/* Read a small file into buf (NUL-terminated). Returns bytes read or -errno. */
int bm_read_file(int dirfd, const char *path, char *buf, size_t len);
/*
 * The same from a file kept open in *fd (-1: opened now, and kept), read
 * again from its start as procfs files are (an open of /proc/pressure/cpu
 * costs ~60 us, a stat and a pread ~5); opened again when path names
 * another file now (a stand-in replaced). Returns bytes or -errno.
 */
int bm_reread_file(int *fd, const char *path, char *buf, size_t len);
/* Write a string to a file (cgroupfs knobs). Returns 0 or -errno. */
int bm_write_file(int dirfd, const char *path, const char *s);

#endif /* BM_COMMON_H */

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-pingpong SECONDS: the neighbour whose latency the bench guards. A
 * request/response loop over TCP on 127.0.0.1 (64 bytes each way, one at a
 * time, with a 1 ms think time between requests, as an interactive service
 * would see), for SECONDS. Prints "p50_us p99_us max_us n" on stdout.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MSG 64
#define MAX_SAMPLES 200000

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int full(int fd, char *buf, int out)
{
	ssize_t n, done = 0;

	while (done < MSG) {
		n = out ? write(fd, buf + done, MSG - done) : read(fd, buf + done, MSG - done);
		if (n <= 0)
			return -1;
		done += n;
	}
	return 0;
}

static void *echo(void *arg)
{
	int fd = accept(*(int *)arg, NULL, NULL), one = 1;
	char buf[MSG];

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (fd >= 0 && !full(fd, buf, 0) && !full(fd, buf, 1))
		;
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timespec think = { 0, 1000000 };
	socklen_t len = sizeof(sin);
	uint64_t *lat, end, t0;
	int lfd, fd, one = 1;
	char buf[MSG] = { 0 };
	size_t n = 0;
	pthread_t th;
	double secs;

	if (argc != 2 || (secs = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: bm-pingpong SECONDS\n");
		return 2;
	}
	lat = malloc(MAX_SAMPLES * sizeof(*lat));
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (!lat || lfd < 0 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(lfd, 1) || getsockname(lfd, (struct sockaddr *)&sin, &len) ||
	    pthread_create(&th, NULL, echo, &lfd))
		return perror("bm-pingpong"), 1;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		return perror("bm-pingpong: connect"), 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	end = now_ns() + (uint64_t)(secs * 1e9);
	while (now_ns() < end && n < MAX_SAMPLES) {
		t0 = now_ns();
		if (full(fd, buf, 1) || full(fd, buf, 0))
			return perror("bm-pingpong: round trip"), 1;
		lat[n++] = now_ns() - t0;
		nanosleep(&think, NULL);
	}
	close(fd);
	pthread_join(th, NULL);
	qsort(lat, n, sizeof(*lat), cmp);
	printf("%.1f %.1f %.1f %zu\n", lat[n / 2] / 1e3, lat[n * 99 / 100] / 1e3, lat[n - 1] / 1e3, n);
	return 0;
}

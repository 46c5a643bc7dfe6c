// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli/client.h"
#include "base/common.h"

#define MAX_RESPONSE (64u << 20)

struct rbuf {
	char *p;
	size_t len, cap;
};

static int connect_to(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int send_request(int fd, const char *method, const char *path, const char *text, size_t blen)
{
	char head[1024];
	int n, err;

	n = snprintf(head, sizeof(head),
		     "%s %s HTTP/1.1\r\nHost: burstmeter\r\nConnection: close\r\n"
		     "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", method, path, blen);
	if (n < 0 || (size_t)n >= sizeof(head))
		return -ENAMETOOLONG;
	err = send_all(fd, head, (size_t)n);
	if (!err && blen)
		err = send_all(fd, text, blen);
	return err;
}

/* Read more into b; 0 at EOF, >0 bytes read, -errno (-ETIMEDOUT; -ECANCELED once stop_fd is readable). */
static ssize_t read_more(int fd, struct rbuf *b, int timeout_ms, int stop_fd)
{
	struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN }, { .fd = stop_fd, .events = POLLIN } };
	ssize_t n;

	if (b->cap - b->len < 65536) {
		size_t cap = b->cap ? b->cap * 2 : 131072;
		char *p = cap > MAX_RESPONSE ? NULL : realloc(b->p, cap);

		if (!p)
			return -EFBIG;
		b->p = p;
		b->cap = cap;
	}
	n = poll(pfd, stop_fd >= 0 ? 2 : 1, timeout_ms);
	if (n == 0)
		return -ETIMEDOUT;
	if (n > 0 && (pfd[1].revents & POLLIN))
		return -ECANCELED;
	n = read(fd, b->p + b->len, b->cap - b->len - 1);
	if (n < 0)
		return errno == EINTR ? 1 : -errno;
	b->len += (size_t)n;
	b->p[b->len] = '\0';
	return n;
}

/* Undo chunked transfer coding in place; returns the decoded length. */
static size_t dechunk(char *p, size_t len)
{
	size_t in = 0, out = 0, n;
	char *end;

	while (in < len) {
		n = strtoul(p + in, &end, 16);
		if (end == p + in || !(end = strstr(end, "\r\n")) || !n)
			break;
		in = (size_t)(end - p) + 2;
		if (n > len - in)	/* not in + n: a size near SIZE_MAX wraps it */
			n = len - in;
		memmove(p + out, p + in, n);
		out += n;
		in += n + 2;
	}
	p[out] = '\0';
	return out;
}

/* The status of a "HTTP/1.x NNN" head: 100..599, else -EPROTO (never a number read as -errno). */
static int status_of(const char *head)
{
	int st;

	if (sscanf(head, "HTTP/1.%*u %3d", &st) != 1 || st < 100 || st > 599)
		return -EPROTO;
	return st;
}

static int call_raw(const char *socket_path, const char *method, const char *path, const char *body,
		    size_t len, json_t **out, int timeout_ms, unsigned int *retry_after_s);

int bm_client_call(const char *socket_path, const char *method, const char *path, const json_t *body,
		   json_t **out, int timeout_ms)
{
	return bm_client_call_retry(socket_path, method, path, body, out, timeout_ms, NULL);
}

int bm_client_call_retry(const char *socket_path, const char *method, const char *path, const json_t *body,
			 json_t **out, int timeout_ms, unsigned int *retry_after_s)
{
	char *text = body ? json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	int st = call_raw(socket_path, method, path, text, text ? strlen(text) : 0, out, timeout_ms,
			  retry_after_s);

	free(text);
	return st;
}

/* The whole response on fd: its status, the JSON body into *out, Retry-After (if asked). */
static int read_response(int fd, json_t **out, int timeout_ms, unsigned int *retry_after_s)
{
	struct rbuf b = { 0 };
	int status;
	char *hdr_end, *content, *ra;
	ssize_t n;

	*out = NULL;
	if (retry_after_s)
		*retry_after_s = 0;
	while ((n = read_more(fd, &b, timeout_ms, -1)) > 0)
		;
	if (n < 0) {
		free(b.p);
		return (int)n;
	}
	status = b.p ? status_of(b.p) : -EPROTO;
	if (status > 0 && (hdr_end = strstr(b.p, "\r\n\r\n"))) {
		content = hdr_end + 4;
		*hdr_end = '\0';
		ra = strcasestr(b.p, "\r\nRetry-After:");
		if (ra && retry_after_s)
			*retry_after_s = (unsigned int)strtoul(ra + 14, NULL, 10);
		if (strcasestr(b.p, "Transfer-Encoding: chunked"))
			dechunk(content, strlen(content));
		*out = json_loads(content, 0, NULL);
	}
	free(b.p);
	return status;
}

int bm_client_read_response(int fd, json_t **out, int timeout_ms)
{
	return read_response(fd, out, timeout_ms, NULL);
}

static int call_raw(const char *socket_path, const char *method, const char *path, const char *body,
		    size_t len, json_t **out, int timeout_ms, unsigned int *retry_after_s)
{
	int fd, st;

	*out = NULL;
	fd = connect_to(socket_path);
	if (fd < 0)
		return fd;
	st = send_request(fd, method, path, body, len);
	if (!st)
		st = read_response(fd, out, timeout_ms, retry_after_s);
	close(fd);
	return st;
}

int bm_client_call_raw(const char *socket_path, const char *method, const char *path, const char *body,
		       size_t len, json_t **out, int timeout_ms)
{
	return call_raw(socket_path, method, path, body, len, out, timeout_ms, NULL);
}

/* Move the complete chunks at raw[*off..len) into dec; returns false at the last (0) chunk. */
static bool take_chunks(const char *raw, size_t len, size_t *off, struct rbuf *dec)
{
	const char *p, *eol;
	unsigned long n;
	char *end;

	for (;;) {
		p = raw + *off;
		eol = memmem(p, len - *off, "\r\n", 2);
		if (!eol)
			return true;
		/* strtoul() would skip blanks: past eol, into what has not all arrived */
		if (!isxdigit((unsigned char)*p))
			return false;
		n = strtoul(p, &end, 16);
		/* a chunk larger than any response can be never comes whole: the stream ends here */
		if (!n || n > MAX_RESPONSE)
			return false;
		if ((size_t)(eol + 2 - raw) + n + 2 > len)
			return true;
		if (dec->len + n + 1 > dec->cap) {
			size_t cap = (dec->len + n + 1) * 2;
			char *q = realloc(dec->p, cap);

			if (!q)
				return false;
			dec->p = q;
			dec->cap = cap;
		}
		memcpy(dec->p + dec->len, eol + 2, n);
		dec->len += n;
		dec->p[dec->len] = '\0';
		*off = (size_t)(eol + 2 - raw) + n + 2;
	}
}

/* Hand every complete line of dec to fn and drop it; returns fn's stop. */
static int take_lines(struct rbuf *dec, int (*fn)(json_t *line, void *ctx), void *ctx)
{
	char *nl;
	int stop = 0;

	while (!stop && dec->len && (nl = memchr(dec->p, '\n', dec->len))) {
		json_t *line;
		size_t n = (size_t)(nl - dec->p) + 1;

		*nl = '\0';
		line = json_loads(dec->p, 0, NULL);
		memmove(dec->p, nl + 1, dec->len - n);
		dec->len -= n;
		if (line)
			stop = fn(line, ctx);
		json_decref(line);
	}
	return stop;
}

/* The stream on fd, line by line to fn, until it ends, fn stops it, or stop_fd is readable. */
static int read_stream(int fd, int stop_fd, int (*fn)(json_t *line, void *ctx), void *ctx)
{
	struct rbuf raw = { 0 }, dec = { 0 };
	size_t off = 0;
	int status = -EPROTO, stop = 0;
	bool chunked = false, more = true, head = false;
	char *hdr_end;
	ssize_t n = 0;

	while (!stop && more && (n = read_more(fd, &raw, -1, stop_fd)) > 0) {
		if (!head) {
			hdr_end = strstr(raw.p, "\r\n\r\n");
			if (!hdr_end)
				continue;
			*hdr_end = '\0';
			status = status_of(raw.p);
			chunked = strcasestr(raw.p, "Transfer-Encoding: chunked");
			off = (size_t)(hdr_end - raw.p) + 4;
			head = true;
		}
		if (chunked) {
			more = take_chunks(raw.p, raw.len, &off, &dec);
			/* what was decoded is gone from raw: a long stream does not grow it */
			memmove(raw.p, raw.p + off, raw.len - off);
			raw.len -= off;
			off = 0;
		} else if (raw.len > off) {
			char *q = realloc(dec.p, dec.len + raw.len - off + 1);

			if (!q)
				break;
			dec.p = q;
			memcpy(dec.p + dec.len, raw.p + off, raw.len - off);
			dec.len += raw.len - off;
			dec.cap = dec.len + 1;
			off = raw.len;
		}
		stop = take_lines(&dec, fn, ctx);
	}
	free(raw.p);
	free(dec.p);
	return n < 0 ? (int)n : status;
}

int bm_client_read_stream(int fd, int (*fn)(json_t *line, void *ctx), void *ctx)
{
	return read_stream(fd, -1, fn, ctx);
}

int bm_client_follow(const char *socket_path, const char *path, int stop_fd, int (*fn)(json_t *line, void *ctx),
		     void *ctx)
{
	int fd, st;

	fd = connect_to(socket_path);
	if (fd < 0)
		return fd;
	st = send_request(fd, "GET", path, NULL, 0);
	if (!st)
		st = read_stream(fd, stop_fd, fn, ctx);
	close(fd);
	return st;
}

int bm_client_stream(const char *socket_path, const char *path, int (*fn)(json_t *line, void *ctx), void *ctx)
{
	return bm_client_follow(socket_path, path, -1, fn, ctx);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for the client's HTTP reader (user/cli/client.c): what
 * the agent's socket sends back, chunked or not, fed through a
 * SOCK_SEQPACKET socketpair so that each message is one read() of the
 * reader. The first byte sets the size of those pieces (1..256 bytes), the
 * rest is the response. Both readers get it: bm_client_read_response() (a whole
 * reply) and bm_client_read_stream() (NDJSON lines). Besides memory errors
 * it checks that the stream's lines do not depend on how the bytes were cut
 * into reads: in pieces they are the lines of the response in one piece.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/client.h"
#include "fuzz.h"

#define MAX_LINES 256

struct lines {
	char *v[MAX_LINES];
	unsigned int n;
};

static int on_line(json_t *line, void *ctx)
{
	struct lines *l = ctx;
	char *s = json_dumps(line, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);

	CHECK(s, "a line that does not dump");
	if (l->n == MAX_LINES) {
		free(s);
		return 1;
	}
	l->v[l->n++] = s;
	return 0;
}

static void lines_free(struct lines *l)
{
	while (l->n)
		free(l->v[--l->n]);
}

/*
 * The reading end of a socketpair with the response queued on it, piece bytes per
 * message (so per read()), and the writing end closed. A socket's default buffer holds
 * some 270 small messages: pieces grow so that there are at most MAX_PIECES.
 */
#define MAX_PIECES 200

static int feed(const uint8_t *data, size_t size, size_t piece)
{
	size_t off, n;
	int sv[2];

	if (piece < (size + MAX_PIECES - 1) / MAX_PIECES)
		piece = (size + MAX_PIECES - 1) / MAX_PIECES;
	CHECK(!socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), "socketpair: %m");
	for (off = 0; off < size; off += n) {
		n = size - off < piece ? size - off : piece;
		CHECK(send(sv[1], data + off, n, MSG_DONTWAIT) == (ssize_t)n, "send: %m");
	}
	close(sv[1]);
	return sv[0];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lines whole = { 0 }, cut = { 0 };
	int fd, st, st_cut;
	size_t piece;
	json_t *out;
	unsigned int i;

	if (!size)
		return 0;
	piece = (size_t)data[0] + 1;
	data++, size--;

	fd = feed(data, size, size);
	st = bm_client_read_response(fd, &out, 10000);
	close(fd);
	/* an HTTP status, or -EPROTO: never a number that callers take for another -errno */
	CHECK(st == -EPROTO || (st >= 100 && st <= 599), "response: status %d", st);
	if (out) {
		char *s = json_dumps(out, JSON_ENCODE_ANY);

		CHECK(s, "a response body that does not dump");
		free(s);
		json_decref(out);
	}

	fd = feed(data, size, size);
	st = bm_client_read_stream(fd, on_line, &whole);
	close(fd);
	fd = feed(data, size, piece);
	st_cut = bm_client_read_stream(fd, on_line, &cut);
	close(fd);
	CHECK(st == -EPROTO || (st >= 100 && st <= 599), "stream: status %d", st);
	CHECK(st == st_cut, "stream: status %d in one piece, %d in pieces of %zu", st, st_cut,
	      piece);
	CHECK(whole.n == cut.n, "stream: %u lines in one piece, %u in pieces of %zu", whole.n,
	      cut.n, piece);
	for (i = 0; i < whole.n; i++)
		CHECK(!strcmp(whole.v[i], cut.v[i]),
		      "stream: line %u is %s in one piece, %s in pieces", i, whole.v[i], cut.v[i]);
	lines_free(&whole);
	lines_free(&cut);
	return 0;
}

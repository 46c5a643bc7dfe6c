// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-probe PORT ADDR...: for each address (IPv4 or IPv6, loopback only: the
 * tests listen there), a TCP connect to ADDR:PORT and a UDP datagram to
 * ADDR:PORT, each printed as "tcp ADDR ok" or "tcp ADDR E<name>" (likewise
 * udp). Truth: what the effect's network policy lets out. Exit 0 when every
 * address was probed, 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wl.h"

static const char *name(int err)
{
	switch (err) {
	case 0: return "ok";
	case EPERM: return "EPERM";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ENETUNREACH: return "ENETUNREACH";
	case EACCES: return "EACCES";
	default: return strerror(err);
	}
}

static int probe(int type, const char *addr, unsigned int port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int fd, err = 0;

	if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons(port);
		len = sizeof(*a4);
	} else if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons(port);
		len = sizeof(*a6);
	} else {
		return -1;
	}
	fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		err = errno;
	else if (type == SOCK_STREAM && connect(fd, (struct sockaddr *)&ss, len) < 0)
		err = errno;
	else if (type == SOCK_DGRAM && sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, len) < 0)
		err = errno;
	if (fd >= 0)
		close(fd);
	printf("%s %s %s\n", type == SOCK_STREAM ? "tcp" : "udp", addr, name(err));
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t port;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3 || !wl_parse_u64(argv[1], 1, 65535, &port))
		return wl_usage("bm-probe", "PORT ADDR...");
	for (i = 2; i < argc; i++)
		if (probe(SOCK_STREAM, argv[i], (unsigned int)port) || probe(SOCK_DGRAM, argv[i], (unsigned int)port))
			return wl_usage("bm-probe", "PORT ADDR...  (numeric IPv4 or IPv6 addresses)");
	return 0;
}

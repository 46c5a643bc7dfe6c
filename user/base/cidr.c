// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "base/cidr.h"
#include "base/parse.h"

int bm_cidr_parse(const char *s, struct bm_cidr *out)
{
	const char *slash = s ? strchr(s, '/') : NULL;
	char addr[INET6_ADDRSTRLEN];
	unsigned int i, bits, max;
	bool host = false;
	uint64_t prefix;
	uint8_t mask;
	int err;

	memset(out, 0, sizeof(*out));
	if (!slash || slash == s || (size_t)(slash - s) >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, s, slash - s);
	addr[slash - s] = '\0';
	out->family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(out->family, addr, out->addr) != 1)
		return -EINVAL;
	max = out->family == AF_INET ? 32 : 128;
	err = bm_parse_u64(slash + 1, 0, max, &prefix);
	if (err)
		return err;
	out->prefix = (uint8_t)prefix;
	for (i = 0; i < max / 8; i++) {
		bits = prefix > i * 8 ? (unsigned int)prefix - i * 8 : 0;
		mask = bits >= 8 ? 0xff : (uint8_t)(0xff00 >> bits);
		host |= (out->addr[i] & ~mask) != 0;
		out->addr[i] &= mask;
	}
	return host ? -EDOM : 0;
}

int bm_cidr_format(const struct bm_cidr *c, char *buf, size_t size)
{
	char addr[INET6_ADDRSTRLEN];
	int n;

	if ((c->family != AF_INET && c->family != AF_INET6) ||
	    c->prefix > (c->family == AF_INET ? 32 : 128))
		return -EINVAL;
	if (!inet_ntop(c->family, c->addr, addr, sizeof(addr)))
		return -errno;
	n = snprintf(buf, size, "%s/%u", addr, c->prefix);
	return n < 0 || (size_t)n >= size ? -ENOSPC : 0;
}

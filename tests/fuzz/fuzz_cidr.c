// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for user/base/cidr.c (allowed_egress_cidrs, run's
 * --allow-cidr). An accepted CIDR has no host bits and a prefix in range,
 * its address is one inet_pton() reads, and its bm_cidr_format() text
 * parses back to the same network and the same text; a CIDR refused for its
 * host bits (-EDOM) suggests a network that is accepted.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/cidr.h"
#include "fuzz.h"

static bool same(const struct bm_cidr *a, const struct bm_cidr *b)
{
	return a->family == b->family && a->prefix == b->prefix &&
	       !memcmp(a->addr, b->addr, sizeof(a->addr));
}

static void check_network(const char *s, const struct bm_cidr *c)
{
	unsigned int max = c->family == AF_INET ? 32 : 128, i;
	char text[BM_CIDR_STRLEN], again[BM_CIDR_STRLEN];
	struct bm_cidr back;
	int err;

	CHECK(c->family == AF_INET || c->family == AF_INET6, "'%s': family %d", s, c->family);
	CHECK(c->prefix <= max, "'%s': prefix %u", s, c->prefix);
	for (i = c->prefix; i < max; i++)
		CHECK(!(c->addr[i / 8] & (0x80 >> (i % 8))), "'%s': host bit %u set", s, i);
	for (i = max / 8; i < sizeof(c->addr); i++)
		CHECK(!c->addr[i], "'%s': byte %u past the address set", s, i);
	err = bm_cidr_format(c, text, sizeof(text));
	CHECK(!err, "'%s' does not format: %d", s, err);
	err = bm_cidr_parse(text, &back);
	CHECK(!err && same(c, &back), "'%s' formats as '%s', which parses to %d", s, text, err);
	CHECK(!bm_cidr_format(&back, again, sizeof(again)) && !strcmp(text, again),
	      "'%s' formats as '%s', then '%s'", s, text, again);
	/* too small a buffer is -ENOSPC, never an overflow */
	CHECK(bm_cidr_format(c, again, strlen(text)) == -ENOSPC, "'%s': no -ENOSPC", s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_cstr(data, size), addr[INET6_ADDRSTRLEN];
	unsigned char buf[16];
	const char *slash;
	struct bm_cidr c;
	int err;

	err = bm_cidr_parse(s, &c);
	CHECK(!err || err == -EINVAL || err == -ERANGE || err == -EDOM, "'%s': error %d", s, err);
	if (!err || err == -EDOM) {
		slash = strchr(s, '/');
		CHECK(slash && (size_t)(slash - s) < sizeof(addr),
		      "'%s' accepted without an address", s);
		memcpy(addr, s, slash - s);
		addr[slash - s] = '\0';
		CHECK(inet_pton(c.family, addr, buf) == 1, "'%s': inet_pton refuses '%s'", s, addr);
		check_network(s, &c);
	}
	if (err == -ERANGE)
		CHECK(c.family == AF_INET || c.family == AF_INET6, "'%s': -ERANGE without a family",
		      s);
	free(s);
	return 0;
}

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Networks written as CIDRs: "10.0.0.0/8", "2001:db8::/32". */
#ifndef BM_CIDR_H
#define BM_CIDR_H

#include <stddef.h>
#include <stdint.h>

struct bm_cidr {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t addr[16];	/* network byte order, host bits zero */
	uint8_t prefix;
};

#define BM_CIDR_STRLEN 64

/*
 * Parse s. Returns 0, -EINVAL (malformed), -ERANGE (prefix over 32/128) or
 * -EDOM (host bits set: *out then holds the network, host bits cleared, to
 * suggest instead).
 */
int bm_cidr_parse(const char *s, struct bm_cidr *out);
/* Normalised text ("2001:db8::/32") into buf; returns 0 or -EINVAL/-ENOSPC. */
int bm_cidr_format(const struct bm_cidr *c, char *buf, size_t size);

#endif /* BM_CIDR_H */

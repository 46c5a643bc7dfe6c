/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef BM_METER_BTFSCAN_H
#define BM_METER_BTFSCAN_H

#include <stdbool.h>

/* A type the loader asks the kernel's BTF for, by name and kind (BTF_KIND_*). */
struct bm_btf_want {
	const char *name;
	int kind;
	bool found;
};

/* Mark the wants of this kind and name found (for a walk of a parsed BTF too). */
void bm_btf_want_mark(struct bm_btf_want *w, int n, int kind, const char *name);

/*
 * Mark which of w[0..n) the raw BTF at path has, in one pass over its
 * types, without building libbpf's index of them (which libbpf's own load
 * builds again a moment later): read or mapped, walked, compared by kind
 * then name. 0, or -errno: -ENOENT no such file, -EINVAL not BTF of this
 * host's byte order or cut short, -EOPNOTSUPP a kind newer than this code.
 */
int bm_btf_scan(const char *path, struct bm_btf_want *w, int n);

#endif

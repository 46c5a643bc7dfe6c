/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a directory tree holds on its file system, as du(1) counts it: the
 * blocks allocated (st_blocks) to everything under it, on its own device
 * only, never through a symlink. For a workspace bound into an effect,
 * whose growth its storage ceiling bounds.
 */
#ifndef BM_DU_H
#define BM_DU_H

#include <stdint.h>

/*
 * The bytes allocated under path into *bytes; a file of n links counts
 * 1/n of its blocks (all n inside: once). At most max_entries are looked
 * at (the rest are not counted: a walk is bounded). Returns 0, -errno if
 * path cannot be opened as a directory, or -E2BIG when the walk stopped
 * at max_entries (*bytes then holds what it saw).
 */
int bm_du(const char *path, uint64_t max_entries, uint64_t *bytes);

#endif /* BM_DU_H */

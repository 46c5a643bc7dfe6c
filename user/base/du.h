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

struct bm_du_watch;

/*
 * bm_du() of path, again and again, on a thread of its own: a walk can take
 * long (a tree of a million files) or never end (a stat on a FUSE mount its
 * owner stopped answering), and the caller's loop must not wait for either.
 * Each walk starts no sooner than min_gap_ns, nor than ten times as long as
 * the last one took, after it. NULL + errno if no thread could be made.
 */
struct bm_du_watch *bm_du_watch_start(const char *path, uint64_t max_entries, uint64_t min_gap_ns);
/* What the last whole walk found (*bytes), and how many walks are done: 0 none yet. */
uint64_t bm_du_watch_read(struct bm_du_watch *w, uint64_t *bytes);
/* No more walks; one still in the kernel ends on its own and frees what it holds. NULL is fine. */
void bm_du_watch_stop(struct bm_du_watch *w);

#endif /* BM_DU_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * YAML documents through libcyaml (policies, the agent's config), with
 * errors that name FILE:LINE:COLUMN. libcyaml locates a bad key only at
 * its enclosing mapping and a bad value not at all once it loaded, so the
 * node is found again with libyaml's events.
 */
#ifndef BM_YAMLDOC_H
#define BM_YAMLDOC_H

#include <cyaml/cyaml.h>
#include <stddef.h>

/*
 * Load text with schema (aliases refused). Returns 0 with *data set (NULL
 * for an empty document: check it), or -EINVAL with err set to one line
 * "NAME:LINE:COL: what is wrong".
 */
int bm_yaml_load(const char *text, size_t len, const char *name, const cyaml_schema_value_t *schema,
		 void **data, char *err, size_t errlen);
void bm_yaml_free(const cyaml_schema_value_t *schema, void *data);

/*
 * Fill err with "NAME:LINE:COL: <fmt>" for the node at path (mapping keys,
 * or "#N" for the Nth item of a sequence; 0:0 if it is not there).
 * Returns -EINVAL, for the caller to return.
 */
int bm_yaml_fail(const char *text, size_t len, const char *name, const char *const *path, int depth,
		 char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 8, 9)));

/* Read a whole file of at most max bytes into *text (malloc'd, NUL-terminated). Returns 0, -EFBIG, -errno. */
int bm_yaml_read(const char *path, size_t max, char **text, size_t *len);

#endif /* BM_YAMLDOC_H */

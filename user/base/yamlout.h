/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * JSON values written as YAML block documents, the way `kubectl get -o
 * yaml` lays them out (a sequence's items at its key's indent), so that a
 * manifest reads as one the operator has seen before. Deterministic: the
 * object's key order, two spaces per level. A string is plain only where
 * no YAML 1.1 or 1.2 reader can take it for anything but that string
 * ("2" is quoted: it is a quantity, not a number); every other string is
 * double-quoted with escapes.
 */
#ifndef BM_YAMLOUT_H
#define BM_YAMLOUT_H

#include <jansson.h>
#include <stdio.h>

/* Write v (an object or an array) as one document. Returns 0, -EINVAL (a scalar), -EIO. */
int bm_yaml_write(FILE *f, json_t *v);

#endif /* BM_YAMLOUT_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An effect's name on the node: its cgroup's directory, and the files the
 * agent keeps of it, are "burstmeter.<tenant>@<id>". Tenants and ids are
 * names ([A-Za-z0-9._-]), so no '@' is in either and no two effects share
 * a name (with a dot between them, tenant "team" with id "a.x" and tenant
 * "team.a" with id "x" did).
 */
#ifndef BM_EFFECT_NAME_H
#define BM_EFFECT_NAME_H

#include <stddef.h>

#define BM_EFFECT_PREFIX "burstmeter."
#define BM_EFFECT_NAME_MAX (sizeof(BM_EFFECT_PREFIX) + 2 * 64 + 1)

/* "burstmeter.<tenant>@<id>" into buf. Returns 0, -EINVAL (not names) or -ENAMETOOLONG. */
int bm_effect_name(const char *tenant, const char *id, char *buf, size_t len);
/*
 * The tenant and id of name: 0, or 1 for a name an older burstmeter made
 * ("burstmeter.<tenant>.<id>", split at its first dot, which may be wrong),
 * or -EINVAL if it is no effect's. tenant and id hold BM_NAME_MAX + 1.
 */
int bm_effect_name_split(const char *name, char *tenant, char *id);

#endif /* BM_EFFECT_NAME_H */

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/parse.h"
#include "effect/name.h"

int bm_effect_name(const char *tenant, const char *id, char *buf, size_t len)
{
	int n;

	if (!bm_valid_name(tenant) || !bm_valid_name(id))
		return -EINVAL;
	n = snprintf(buf, len, BM_EFFECT_PREFIX "%s@%s", tenant, id);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int bm_effect_name_split(const char *name, char *tenant, char *id)
{
	size_t pl = strlen(BM_EFFECT_PREFIX);
	const char *rest = name + pl, *sep;
	int legacy;

	if (strncmp(name, BM_EFFECT_PREFIX, pl))
		return -EINVAL;
	sep = strchr(rest, '@');
	legacy = !sep;
	if (legacy)
		sep = strchr(rest, '.');
	if (!sep || sep - rest > BM_NAME_MAX || strlen(sep + 1) > BM_NAME_MAX)
		return -EINVAL;
	snprintf(tenant, BM_NAME_MAX + 1, "%.*s", (int)(sep - rest), rest);
	snprintf(id, BM_NAME_MAX + 1, "%s", sep + 1);
	if (!bm_valid_name(tenant) || !bm_valid_name(id))
		return -EINVAL;
	return legacy;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "effect/trace.h"

static bool lower_hex(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool all_zero(const char *s, size_t n)
{
	return strspn(s, "0") >= n;
}

int bm_traceparent_check(const char *s, const char **why)
{
	size_t len = strlen(s);

	*why = NULL;
	if (len < BM_TRACEPARENT_LEN)
		*why = "too short: expected 00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>";
	else if (s[2] != '-' || s[35] != '-' || s[52] != '-')
		*why = "expected 00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>";
	else if (!lower_hex(s, 2) || !lower_hex(s + 3, 32) || !lower_hex(s + 36, 16) ||
		 !lower_hex(s + 53, 2))
		*why = "the fields must be lowercase hex digits";
	else if (!strncmp(s, "ff", 2))
		*why = "version ff is not allowed";
	else if (all_zero(s + 3, 32))
		*why = "the trace-id must not be all zeros";
	else if (all_zero(s + 36, 16))
		*why = "the parent-id must not be all zeros";
	else if (!strncmp(s, "00", 2) && len != BM_TRACEPARENT_LEN)
		*why = "version 00 is exactly 55 characters";
	else if (len > BM_TRACEPARENT_MAX)
		*why = "longer than 255 characters";
	/* a later version may add fields, each after a '-' */
	else if (len > BM_TRACEPARENT_LEN && s[BM_TRACEPARENT_LEN] != '-')
		*why = "expected '-' after the flags";
	else if (strspn(s, "0123456789abcdef-") != len)
		*why = "only lowercase hex digits and '-' are allowed";
	return *why ? -EINVAL : 0;
}

char **bm_trace_env(char *const *envp, const char *tp)
{
	static const char key[] = BM_TRACE_ENV "=";
	size_t n = 0, i, j = 0, len = strlen(tp);
	char **v, *kv;

	while (envp && envp[n])
		n++;
	/* the array, one more entry and its NULL, then the string */
	v = malloc((n + 2) * sizeof(*v) + sizeof(key) + len);
	if (!v)
		return NULL;
	kv = (char *)(v + n + 2);
	memcpy(kv, key, sizeof(key) - 1);
	memcpy(kv + sizeof(key) - 1, tp, len + 1);
	for (i = 0; i < n; i++)
		if (strncmp(envp[i], key, sizeof(key) - 1))
			v[j++] = envp[i];
	v[j++] = kv;
	v[j] = NULL;
	return v;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stddef.h>
#include <string.h>

#include "base/k8sname.h"

#define LOWER_DIGIT "abcdefghijklmnopqrstuvwxyz0123456789"
#define ALNUM LOWER_DIGIT "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

/* n bytes of s: of inner, with the first and last of edge. */
static bool span(const char *s, size_t n, const char *edge, const char *inner)
{
	size_t i;

	if (!n || !strchr(edge, s[0]) || !strchr(edge, s[n - 1]))
		return false;
	for (i = 0; i < n; i++)
		if (!s[i] || !strchr(inner, s[i]))
			return false;
	return true;
}

bool bm_k8s_dns_label(const char *s)
{
	size_t n = strlen(s);

	return n <= BM_K8S_LABEL_MAX && span(s, n, LOWER_DIGIT, LOWER_DIGIT "-");
}

static bool subdomain(const char *s, size_t n)
{
	const char *dot;

	if (n > BM_K8S_SUBDOMAIN_MAX)
		return false;
	for (;;) {
		dot = memchr(s, '.', n);
		if (!span(s, dot ? (size_t)(dot - s) : n, LOWER_DIGIT, LOWER_DIGIT "-"))
			return false;
		if (!dot)
			return true;
		n -= (size_t)(dot + 1 - s);
		s = dot + 1;
	}
}

bool bm_k8s_dns_subdomain(const char *s)
{
	return subdomain(s, strlen(s));
}

bool bm_k8s_label_value(const char *s)
{
	size_t n = strlen(s);

	return !n || (n <= BM_K8S_LABEL_MAX && span(s, n, ALNUM, ALNUM "-_."));
}

bool bm_k8s_label_key(const char *s)
{
	const char *slash = strchr(s, '/');
	const char *name = slash ? slash + 1 : s;

	if (slash && !subdomain(s, (size_t)(slash - s)))
		return false;
	return *name && bm_k8s_label_value(name);
}

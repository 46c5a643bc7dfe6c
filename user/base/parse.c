// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>

#include "base/common.h"
#include "base/parse.h"

/*
 * "123" or "123.456" times scale, exactly: the integer part with overflow
 * checks, at most 9 fraction digits (rounded down). *end is left at the
 * first character after the number. Returns 0, -EINVAL or -ERANGE.
 */
static int parse_decimal(const char *s, uint64_t scale, uint64_t *out, const char **end)
{
	uint64_t ip = 0, frac = 0, div = 1;
	const char *p = s;
	int digits = 0;

	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (ip > (UINT64_MAX - (*p - '0')) / 10)
			return -ERANGE;
		ip = ip * 10 + (*p - '0');
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (digits++ >= 9)
				continue;
			frac = frac * 10 + (*p - '0');
			div *= 10;
		}
	}
	if (scale && ip > UINT64_MAX / scale)
		return -ERANGE;
	ip *= scale;
	frac = (uint64_t)((unsigned __int128)frac * scale / div);
	if (ip > UINT64_MAX - frac)
		return -ERANGE;
	*out = ip + frac;
	*end = p;
	return 0;
}

static int in_range(uint64_t v, uint64_t min, uint64_t max, uint64_t *out)
{
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int bm_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *end;
	uint64_t v;
	int err;

	if (!s || strchr(s, '.'))
		return -EINVAL;
	err = parse_decimal(s, 1, &v, &end);
	if (err)
		return err;
	if (*end)
		return -EINVAL;
	return in_range(v, min, max, out);
}

struct unit {
	const char *name;
	uint64_t scale;
};

/* Match the whole remainder of the string against a unit table. */
static const struct unit *find_unit(const struct unit *units, const char *suffix)
{
	for (; units->name; units++)
		if (!strcmp(units->name, suffix))
			return units;
	return NULL;
}

static int parse_with_units(const char *s, const struct unit *units, uint64_t min, uint64_t max,
			    uint64_t *out)
{
	const struct unit *u;
	const char *end;
	uint64_t v;
	int err;

	if (!s)
		return -EINVAL;
	/* parse once to find the suffix, then again at the unit's scale */
	err = parse_decimal(s, 1, &v, &end);
	if (err)
		return err;
	u = find_unit(units, end);
	if (!u)
		return -EINVAL;
	err = parse_decimal(s, u->scale, &v, &end);
	if (err)
		return err;
	return in_range(v, min, max, out);
}

#define KIB 1024ULL
static const struct unit size_units[] = {
	{ "", 1 }, { "B", 1 },
	{ "K", KIB }, { "Ki", KIB }, { "KB", KIB }, { "KiB", KIB }, { "k", KIB },
	{ "M", KIB * KIB }, { "Mi", KIB * KIB }, { "MB", KIB * KIB }, { "MiB", KIB * KIB },
	{ "G", KIB * KIB * KIB }, { "Gi", KIB * KIB * KIB }, { "GB", KIB * KIB * KIB },
	{ "GiB", KIB * KIB * KIB },
	{ "T", KIB * KIB * KIB * KIB }, { "Ti", KIB * KIB * KIB * KIB },
	{ "TB", KIB * KIB * KIB * KIB }, { "TiB", KIB * KIB * KIB * KIB },
	{ NULL, 0 },
};

int bm_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return parse_with_units(s, size_units, min, max, out);
}

static const struct unit duration_units[] = {
	{ "", 1000000000ULL }, { "s", 1000000000ULL }, { "ms", 1000000ULL },
	{ "us", 1000ULL }, { "m", 60000000000ULL }, { "h", 3600000000000ULL },
	{ NULL, 0 },
};

int bm_parse_duration_ns(const char *s, uint64_t min_ns, uint64_t max_ns, uint64_t *out)
{
	return parse_with_units(s, duration_units, min_ns, max_ns, out);
}

static const struct unit core_units[] = {
	{ "", 1000 }, { "m", 1 },
	{ NULL, 0 },
};

int bm_parse_cores(const char *s, uint64_t min_milli, uint64_t max_milli, uint64_t *out)
{
	return parse_with_units(s, core_units, min_milli, max_milli, out);
}

static const struct unit milli_units[] = {
	{ "", 1000 },
	{ NULL, 0 },
};

int bm_parse_milli(const char *s, uint64_t min_milli, uint64_t max_milli, uint64_t *out)
{
	return parse_with_units(s, milli_units, min_milli, max_milli, out);
}

bool bm_valid_name(const char *s)
{
	size_t n;

	if (!s || !*s || *s == '.')
		return false;
	n = strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-");
	return n == strlen(s) && n <= BM_NAME_MAX;
}

static const struct unit k8s_suffixes[] = {
	{ "", 1 }, { "Ki", 1ULL << 10 }, { "Mi", 1ULL << 20 }, { "Gi", 1ULL << 30 },
	{ "Ti", 1ULL << 40 }, { "Pi", 1ULL << 50 }, { "Ei", 1ULL << 60 },
	{ NULL, 0 },
};
/* the decimal suffixes as powers of ten (m = 10^-3) */
static const struct {
	const char *name;
	int exp10;
} k8s_decimal[] = {
	{ "m", -3 }, { "k", 3 }, { "M", 6 }, { "G", 9 }, { "T", 12 }, { "P", 15 }, { "E", 18 },
};

#define K8S_DIGITS_MAX 30	/* significant digits kept exact (10^30 < 2^128 / 2^64) */
#define U128_MAX (~(unsigned __int128)0)

/* An exponent's "[+-]digits", the whole rest of the string: 0 or -EINVAL/-ERANGE. */
static int k8s_exponent(const char *p, int *exp)
{
	int sign = 1, v = 0;

	if (*p == '+' || *p == '-')
		sign = *p++ == '-' ? -1 : 1;
	if (*p < '0' || *p > '9')
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++)
		if ((v = v * 10 + (*p - '0')) > 1000)
			return -ERANGE;
	if (*p)
		return -EINVAL;
	*exp = sign * v;
	return 0;
}

int bm_parse_k8s_quantity(const char *s, uint64_t scale, uint64_t min, uint64_t max,
			  uint64_t *out)
{
	unsigned __int128 v = 0, mul = scale;
	bool dot = false, any = false, rest = false;
	int exp10 = 0, digits = 0, err, e;
	const struct unit *u;
	const char *p = s;
	size_t i;

	if (!s)
		return -EINVAL;
	if (*p == '+')
		p++;
	/* the digits as one integer v, times 10^exp10: "1.25" is 125e-2 */
	for (; (*p >= '0' && *p <= '9') || (*p == '.' && !dot); p++) {
		if (*p == '.') {
			dot = true;
			continue;
		}
		any = true;
		if (digits == K8S_DIGITS_MAX) {
			if (!dot)
				return -ERANGE;		/* 10^30 or more */
			rest |= *p != '0';		/* a fraction digit past those kept */
			continue;
		}
		v = v * 10 + (*p - '0');
		digits += v != 0;
		exp10 -= dot;
	}
	if (!any)
		return -EINVAL;
	u = find_unit(k8s_suffixes, p);
	for (i = 0; !u && i < BM_ARRAY_SIZE(k8s_decimal); i++)
		if (!strcmp(p, k8s_decimal[i].name))
			break;
	if (u) {
		mul *= u->scale;
	} else if (i < BM_ARRAY_SIZE(k8s_decimal)) {
		exp10 += k8s_decimal[i].exp10;
	} else if (*p == 'e' || *p == 'E') {
		err = k8s_exponent(p + 1, &e);
		if (err)
			return err;
		exp10 += e;
	} else {
		return -EINVAL;
	}
	if (v && mul > U128_MAX / v)
		return -ERANGE;
	v *= mul;
	for (; v && exp10 > 0; exp10--) {
		if (v > U128_MAX / 10)
			return -ERANGE;
		v *= 10;
	}
	/* divided down, rounded up: any digit dropped makes it one more */
	for (; v && exp10 < 0; exp10++) {
		rest |= v % 10 != 0;
		v /= 10;
	}
	v += rest;
	if (v > UINT64_MAX)
		return -ERANGE;
	return in_range((uint64_t)v, min, max, out);
}

int bm_parse_k8s_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return bm_parse_k8s_quantity(s, 1, min, max, out);
}

int bm_parse_k8s_cpu(const char *s, uint64_t min_milli, uint64_t max_milli, uint64_t *out)
{
	return bm_parse_k8s_quantity(s, 1000, min_milli, max_milli, out);
}

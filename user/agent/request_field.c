// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/request_field.h"

int bm_req_quote_len(const char *s, int max)
{
	int n = (int)strnlen(s, (size_t)max + 1);

	if (n <= max)
		return n;
	n = max;	/* s[n], the first byte left out: back up to the start of its character */
	while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

void bm_req_error(struct bm_req_errs *e, const char *field, const char *fmt, ...)
{
	char msg[512], *p;
	json_t *o, *s;
	va_list ap;

	/* counted even when not listed: the count, not the list, decides validity */
	if (++e->n > BM_REQ_MAX_ERRORS)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* json_string() refuses invalid UTF-8, and jansson's error text may cut a character */
	s = json_string(msg);
	for (p = msg; !s && *p; p++)
		*p = (unsigned char)*p >= 0x80 ? '?' : *p;
	o = json_pack("{s:s, s:o}", "field", field, "error", s ? s : json_string(msg));
	if (!o || json_array_append_new(e->arr, o))
		e->oom = true;
}

const char *bm_req_string(struct bm_req_errs *e, const char *field, json_t *v, size_t max)
{
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);

	if (!s) {
		bm_req_error(e, field, "must be a string");
		return NULL;
	}
	/* JSON_ALLOW_NUL lets "\u0000" through so that the error can name the field */
	if (strlen(s) != len) {
		bm_req_error(e, field, "must not contain a NUL character (\\u0000)");
		return NULL;
	}
	if (len > max) {
		bm_req_error(e, field, "%zu bytes long, at most %zu", len, max);
		return NULL;
	}
	return s;
}

void bm_req_unknown_keys(struct bm_req_errs *e, const char *prefix, json_t *obj,
			 const char *const *known)
{
	char field[BM_REQ_FIELD_MAX];
	const char *const *k;
	const char *key;
	size_t key_len;
	json_t *v;

	json_object_keylen_foreach(obj, key, key_len, v) {
		for (k = known; *k; k++)
			if (key_len == strlen(*k) && !strcmp(key, *k))
				break;
		if (*k)
			continue;
		snprintf(field, sizeof(field), "%s%.*s", prefix, bm_req_quote_len(key, BM_REQ_QUOTE_MAX),
			 key);
		bm_req_error(e, field, "unknown field");
	}
}

/* An optional integer member in [min, max]; def when absent or bad. */

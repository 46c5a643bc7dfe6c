// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
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

long long bm_req_int(struct bm_req_errs *e, json_t *obj, const char *key, long long min,
		     long long max, long long def)
{
	json_t *v = json_object_get(obj, key);
	long long n;

	if (!v)
		return def;
	n = json_integer_value(v);	/* 0 if not an integer */
	if (!json_is_integer(v) || n < min || n > max) {
		bm_req_error(e, key, "must be an integer %lld..%lld", min, max);
		return def;
	}
	return n;
}

json_t *bm_req_load(struct bm_req_errs *e, const char *body, size_t len, size_t max)
{
	json_error_t jerr;
	json_t *root;

	if (!body || !len) {
		bm_req_error(e, "", "empty request body");
		return NULL;
	}
	if (len > max) {
		bm_req_error(e, "", "request body of %zu bytes is over the %zu-byte limit", len, max);
		return NULL;
	}
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!root) {
		bm_req_error(e, "", "invalid JSON: %s at line %d, column %d", jerr.text,
			     jerr.line, jerr.column);
		return NULL;
	}
	if (!json_is_object(root)) {
		bm_req_error(e, "", "the request must be a JSON object");
		json_decref(root);
		return NULL;
	}
	return root;
}

int bm_req_done(struct bm_req_errs *e, json_t **errs)
{
	unsigned int n;
	int err;

	if (e->n > BM_REQ_MAX_ERRORS) {
		n = e->n - BM_REQ_MAX_ERRORS;
		e->n = BM_REQ_MAX_ERRORS - 1;	/* let this one summary through */
		bm_req_error(e, "", "%u more errors not listed", n);
	}
	err = e->oom ? -ENOMEM : e->n ? -EINVAL : 0;
	if (err == -EINVAL && errs)
		*errs = e->arr;
	else
		json_decref(e->arr);
	e->arr = NULL;
	return err;
}

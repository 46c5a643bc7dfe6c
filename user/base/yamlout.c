// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "base/common.h"
#include "base/yamlout.h"

static bool empty(json_t *v)
{
	return json_is_object(v) ? !json_object_size(v) : json_is_array(v) && !json_array_size(v);
}

/*
 * Plain is safe for [A-Za-z_/][A-Za-z0-9_./-]* less the words YAML 1.1
 * reads as booleans or null: no digit first (a number), no ':', '#', ','
 * or brackets (structure), no leading '.', '-' or '~'.
 */
static bool plain_ok(const char *s, size_t n)
{
	static const char *const words[] = { "y", "n", "yes", "no", "on", "off", "true", "false",
					     "null" };
	size_t i;

	if (!n || !strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_/", s[0]) ||
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./-") != n)
		return false;
	for (i = 0; i < BM_ARRAY_SIZE(words); i++)
		if (!strcasecmp(s, words[i]))
			return false;
	return true;
}

/*
 * Double-quoted: '"' and '\' escaped, control bytes as \xXX, and the
 * characters YAML 1.1 takes for line breaks (NEL, LS, PS) as \N, \L, \P.
 * Other UTF-8 as it is (jansson's strings are valid UTF-8).
 */
static void quoted(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i;

	fputc('"', f);
	for (i = 0; i < n; i++) {
		if (p[i] == '"' || p[i] == '\\')
			fprintf(f, "\\%c", p[i]);
		else if (p[i] == '\n')
			fputs("\\n", f);
		else if (p[i] == '\t')
			fputs("\\t", f);
		else if (p[i] < 0x20 || p[i] == 0x7f)
			fprintf(f, "\\x%02x", p[i]);
		else if (p[i] == 0xc2 && i + 1 < n && p[i + 1] == 0x85)
			fputs("\\N", f), i++;
		else if (p[i] == 0xe2 && i + 2 < n && p[i + 1] == 0x80 &&
			 (p[i + 2] == 0xa8 || p[i + 2] == 0xa9))
			fputs(p[i + 2] == 0xa8 ? "\\L" : "\\P", f), i += 2;
		else if (p[i] == 0xef && i + 2 < n && p[i + 1] == 0xbb && p[i + 2] == 0xbf)
			fputs("\\uFEFF", f), i += 2;
		else
			fputc(p[i], f);
	}
	fputc('"', f);
}

static void string(FILE *f, const char *s, size_t n)
{
	if (plain_ok(s, n) && strlen(s) == n)
		fwrite(s, 1, n, f);
	else
		quoted(f, s, n);
}

/* A scalar, or the {} / [] of an empty collection; then the line's end. */
static void scalar(FILE *f, json_t *v)
{
	char *t;

	if (json_is_string(v)) {
		string(f, json_string_value(v), json_string_length(v));
	} else if (json_is_object(v)) {
		fputs("{}", f);
	} else if (json_is_array(v)) {
		fputs("[]", f);
	} else {
		/* numbers, true, false, null: JSON's spelling is YAML's */
		t = json_dumps(v, JSON_ENCODE_ANY);
		fputs(t ? t : "null", f);
		free(t);
	}
	fputc('\n', f);
}

static void seq(FILE *f, json_t *a, int indent);

/* inline: the first key goes on the current line (after "- "). */
static void map(FILE *f, json_t *o, int indent, bool inline_first)
{
	const char *key;
	size_t klen;
	json_t *v;

	json_object_keylen_foreach(o, key, klen, v) {
		if (!inline_first)
			fprintf(f, "%*s", indent, "");
		inline_first = false;
		string(f, key, klen);
		fputc(':', f);
		if (json_is_object(v) && !empty(v)) {
			fputc('\n', f);
			map(f, v, indent + 2, false);
		} else if (json_is_array(v) && !empty(v)) {
			fputc('\n', f);
			seq(f, v, indent);
		} else {
			fputc(' ', f);
			scalar(f, v);
		}
	}
}

static void seq(FILE *f, json_t *a, int indent)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v) {
		fprintf(f, "%*s-", indent, "");
		if (json_is_object(v) && !empty(v)) {
			fputc(' ', f);
			map(f, v, indent + 2, true);
		} else if (json_is_array(v) && !empty(v)) {
			fputc('\n', f);
			seq(f, v, indent + 2);
		} else {
			fputc(' ', f);
			scalar(f, v);
		}
	}
}

int bm_yaml_write(FILE *f, json_t *v)
{
	if (json_is_object(v) && !empty(v))
		map(f, v, 0, false);
	else if (json_is_array(v) && !empty(v))
		seq(f, v, 0);
	else if (json_is_object(v) || json_is_array(v))
		scalar(f, v);
	else
		return -EINVAL;
	return ferror(f) ? -EIO : 0;
}

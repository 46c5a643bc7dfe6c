/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the libFuzzer targets share: a check that aborts with a message, and C strings of input. */
#ifndef BM_FUZZ_H
#define BM_FUZZ_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A broken property is a crash: libFuzzer keeps the input that broke it. */
#define CHECK(cond, ...)                                   \
	do {                                               \
		if (!(cond)) {                             \
			fprintf(stderr, "%s: ", __FILE__); \
			fprintf(stderr, __VA_ARGS__);      \
			fputc('\n', stderr);               \
			abort();                           \
		}                                          \
	} while (0)

/* data as a malloc'd C string: up to its first NUL byte (the callers read C strings). */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
	size_t n = strnlen((const char *)data, size);
	char *s = malloc(n + 1);

	CHECK(s, "out of memory");
	memcpy(s, data, n);
	s[n] = '\0';
	return s;
}

/* An error message is one line, and safe on a terminal: no control character in it. */
static inline bool fuzz_one_line(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/*
 * A refusal's list of errors (bm_request_parse() and the parsers on its field helpers): a
 * non-empty array of {"field", "error"} strings, capped at max + 1 (the last one counting
 * the rest), that dumps as JSON (json_dumps() fails on invalid UTF-8: every message must
 * be sendable).
 */
static inline void fuzz_check_field_errors(json_t *errs, size_t max)
{
	char *text;
	json_t *e;
	size_t i;

	CHECK(json_is_array(errs) && json_array_size(errs) > 0, "refused without errors");
	CHECK(json_array_size(errs) <= max + 1, "error list not capped");
	json_array_foreach(errs, i, e) {
		CHECK(json_object_size(e) == 2 && json_is_string(json_object_get(e, "field")) &&
			      json_is_string(json_object_get(e, "error")),
		      "malformed error entry %zu", i);
	}
	text = json_dumps(errs, JSON_COMPACT);
	CHECK(text, "error list does not dump");
	free(text);
}

#endif /* BM_FUZZ_H */

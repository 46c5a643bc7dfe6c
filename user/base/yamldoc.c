// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/yamldoc.h"

/* libcyaml reports through its log: keep the first error and the innermost line/column. */
struct log_ctx {
	char msg[256];
	unsigned int line, col;
};

static void on_log(cyaml_log_t level, void *ctx, const char *fmt, va_list ap)
{
	struct log_ctx *lc = ctx;
	char buf[256];
	unsigned int line, col;
	char *p;

	if (level < CYAML_LOG_ERROR)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	p = strstr(buf, "(line: ");
	if (p && sscanf(p, "(line: %u, column: %u)", &line, &col) == 2) {
		if (!lc->line) {
			lc->line = line;
			lc->col = col;
		}
		return;
	}
	if (!lc->msg[0]) {
		p = strncmp(buf, "Load: ", 6) ? buf : buf + 6;
		snprintf(lc->msg, sizeof(lc->msg), "%s", p);
	}
}

/*
 * Where a value sits in the text: follow path (mapping keys, or "#N" for
 * the Nth item of a sequence) through libyaml's events. 1-based line and
 * column of the node; 0 and 0 if it is not there.
 */
struct frame {
	bool map, want_key;
	int idx;
	char key[64];
};

static bool at_path(const struct frame *f, int depth, const char *const *path, int want)
{
	char item[16];
	int i;

	if (depth != want)
		return false;
	for (i = 0; i < depth; i++) {
		snprintf(item, sizeof(item), "#%d", f[i].idx);
		if (strcmp(f[i].map ? f[i].key : item, path[i]))
			return false;
	}
	return true;
}

/* A value node ended: its parent now wants a key (mapping) or its next item (sequence). */
static void value_done(struct frame *f, int depth)
{
	if (!depth)
		return;
	if (f[depth - 1].map)
		f[depth - 1].want_key = true;
	else
		f[depth - 1].idx++;
}

static void locate(const char *text, size_t len, const char *const *path, int want,
		   const char *key, unsigned int *line, unsigned int *col)
{
	struct frame f[16];
	yaml_parser_t parser;
	yaml_event_t ev;
	int depth = 0;
	bool done = false;

	*line = *col = 0;
	if (!yaml_parser_initialize(&parser))
		return;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	while (!done && yaml_parser_parse(&parser, &ev)) {
		bool start = ev.type == YAML_SCALAR_EVENT || ev.type == YAML_MAPPING_START_EVENT ||
			     ev.type == YAML_SEQUENCE_START_EVENT;

		if (ev.type == YAML_STREAM_END_EVENT) {
			done = true;
		} else if (start && depth && f[depth - 1].map && f[depth - 1].want_key) {
			if (ev.type == YAML_SCALAR_EVENT)
				snprintf(f[depth - 1].key, sizeof(f[0].key), "%s", ev.data.scalar.value);
			f[depth - 1].want_key = false;
			/* looking for a key by name: the first one that has it */
			if (key && ev.type == YAML_SCALAR_EVENT && !strcmp((char *)ev.data.scalar.value, key)) {
				*line = ev.start_mark.line + 1;
				*col = ev.start_mark.column + 1;
				done = true;
			}
		} else if (start) {
			if (!key && at_path(f, depth, path, want)) {
				*line = ev.start_mark.line + 1;
				*col = ev.start_mark.column + 1;
				done = true;
			} else if (ev.type == YAML_SCALAR_EVENT) {
				value_done(f, depth);
			} else if (depth < 16) {
				f[depth].map = ev.type == YAML_MAPPING_START_EVENT;
				f[depth].want_key = true;
				f[depth].idx = 0;
				f[depth].key[0] = '\0';
				depth++;
			}
		} else if ((ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) && depth) {
			depth--;
			value_done(f, depth);
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
}

/* Messages quote values, which may hold a newline or a terminal escape: one line, printable. */
static void one_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int bm_yaml_load(const char *text, size_t len, const char *name, const cyaml_schema_value_t *schema,
		 void **data, char *err, size_t errlen)
{
	struct log_ctx lc = { 0 };
	const cyaml_config_t cfg = {
		.log_fn = on_log, .log_ctx = &lc, .mem_fn = cyaml_mem,
		.log_level = CYAML_LOG_ERROR, .flags = CYAML_CFG_NO_ALIAS,
	};
	cyaml_err_t cerr;

	*data = NULL;
	cerr = cyaml_load_data((const uint8_t *)text, len, &cfg, schema, (cyaml_data_t **)data, NULL);
	if (cerr == CYAML_OK)
		return 0;
	/* libcyaml places an unknown key at its mapping; find the key itself */
	if (!strncmp(lc.msg, "Unexpected key: ", 16))
		locate(text, len, NULL, 0, lc.msg + 16, &lc.line, &lc.col);
	snprintf(err, errlen, "%s:%u:%u: %s", name, lc.line, lc.col,
		 lc.msg[0] ? lc.msg : cyaml_strerror(cerr));
	one_line(err);
	return -EINVAL;
}

void bm_yaml_free(const cyaml_schema_value_t *schema, void *data)
{
	const cyaml_config_t cfg = { .mem_fn = cyaml_mem, .log_level = CYAML_LOG_ERROR };

	if (data)
		cyaml_free(&cfg, schema, data, 0);
}

int bm_yaml_fail(const char *text, size_t len, const char *name, const char *const *path, int depth,
		 char *err, size_t errlen, const char *fmt, ...)
{
	unsigned int line, col;
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	locate(text, len, path, depth, NULL, &line, &col);
	snprintf(err, errlen, "%s:%u:%u: %s", name, line, col, what);
	one_line(err);
	return -EINVAL;
}

int bm_yaml_read(const char *path, size_t max, char **text, size_t *len)
{
	FILE *f = fopen(path, "re");
	int err = 0;
	char *buf;
	size_t n;

	if (!f)
		return -errno;
	buf = malloc(max + 2);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, max + 1, f);
	if (ferror(f))
		err = -EIO;
	else if (n > max)
		err = -EFBIG;
	fclose(f);
	if (err) {
		free(buf);
		return err;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return 0;
}

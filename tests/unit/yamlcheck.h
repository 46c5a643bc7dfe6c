/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * For the tests of YAML we write (test_yamlout, test_podspec): read it
 * back with libyaml into JSON, resolving plain scalars as a YAML 1.1
 * reader would (true/false/yes/no/on/off, null/~, integers), so that a
 * string written plain where it should have been quoted comes back as
 * something else and fails the comparison. Quoted scalars stay strings.
 */
#ifndef BM_TEST_YAMLCHECK_H
#define BM_TEST_YAMLCHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

static json_t *yc_scalar(const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length, d;
	static const char *const yes[] = { "true", "yes", "on", "y" };
	static const char *const no[] = { "false", "no", "off", "n" };
	unsigned int i;

	if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_stringn(s, n);
	for (i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i]))
			return json_true();
		if (!strcasecmp(s, no[i]))
			return json_false();
	}
	if (!n || !strcmp(s, "~") || !strcasecmp(s, "null"))
		return json_null();
	d = s[0] == '-';
	if (n > d && strspn(s + d, "0123456789") == n - d)
		return json_integer(strtoll(s, NULL, 10));
	return json_stringn(s, n);
}

static json_t *yc_node(yaml_parser_t *p, yaml_event_t *ev);

/* The events of a collection, up to its end; NULL on a parse error. */
static json_t *yc_collection(yaml_parser_t *p, bool mapping)
{
	json_t *c = mapping ? json_object() : json_array(), *k, *v;
	yaml_event_t ev;

	for (;;) {
		if (!yaml_parser_parse(p, &ev))
			goto fail;
		if (ev.type == (mapping ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT)) {
			yaml_event_delete(&ev);
			return c;
		}
		k = yc_node(p, &ev);
		yaml_event_delete(&ev);
		if (!k)
			goto fail;
		if (!mapping) {
			json_array_append_new(c, k);
			continue;
		}
		if (!json_is_string(k) || !yaml_parser_parse(p, &ev)) {
			json_decref(k);
			goto fail;
		}
		v = yc_node(p, &ev);
		yaml_event_delete(&ev);
		if (!v || json_object_get(c, json_string_value(k))) {
			json_decref(k);
			json_decref(v);
			goto fail;	/* a duplicate key is an error here */
		}
		json_object_set_new(c, json_string_value(k), v);
		json_decref(k);
	}
fail:
	json_decref(c);
	return NULL;
}

static json_t *yc_node(yaml_parser_t *p, yaml_event_t *ev)
{
	if (ev->type == YAML_SCALAR_EVENT)
		return yc_scalar(ev);
	if (ev->type == YAML_MAPPING_START_EVENT || ev->type == YAML_SEQUENCE_START_EVENT)
		return yc_collection(p, ev->type == YAML_MAPPING_START_EVENT);
	return NULL;	/* aliases and the rest: not in what we write */
}

/* The documents of text as a JSON array, or NULL if libyaml refuses it. */
static json_t *yc_load(const char *text, size_t len)
{
	json_t *docs = json_array(), *d;
	yaml_parser_t p;
	yaml_event_t ev;
	bool ok = false;

	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	while (yaml_parser_parse(&p, &ev)) {
		yaml_event_type_t t = ev.type;

		if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT ||
		    t == YAML_SCALAR_EVENT) {
			d = yc_node(&p, &ev);
			if (!d) {
				yaml_event_delete(&ev);
				break;
			}
			json_array_append_new(docs, d);
		}
		yaml_event_delete(&ev);
		if (t == YAML_STREAM_END_EVENT) {
			ok = true;
			break;
		}
	}
	yaml_parser_delete(&p);
	if (!ok) {
		json_decref(docs);
		return NULL;
	}
	return docs;
}

#endif /* BM_TEST_YAMLCHECK_H */

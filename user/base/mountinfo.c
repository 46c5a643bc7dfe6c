// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/mountinfo.h"

/* Undo mountinfo's octal escapes (\040 is a space) in place. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

bool bm_has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while (n && (p = strstr(p, word))) {
		if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
			return true;
		p += n;
	}
	return false;
}

bool bm_cg_root_is_top(const char *root)
{
	if (!strcmp(root, "/"))
		return true;
	if (!*root)
		return false;
	for (; *root; root += 3)
		if (strncmp(root, "/..", 3) || (root[3] && root[3] != '/'))
			return false;
	return true;
}

/* Is path at or below mount point mnt? */
static bool below(const char *path, const char *mnt)
{
	size_t n = strlen(mnt);

	if (!strcmp(mnt, "/"))
		return true;
	return !strncmp(path, mnt, n) && (path[n] == '/' || path[n] == '\0');
}

/* A mount at mnt hides what was mounted at or below it before. */
static void hide(struct bm_cg_mounts *t, const char *mnt)
{
	unsigned int i, k = 0;

	for (i = 0; i < t->n; i++)
		if (!below(t->m[i].mnt, mnt))
			t->m[k++] = t->m[i];
	t->n = k;
}

int bm_cg_mounts_read(const char *file, struct bm_cg_mounts *t)
{
	char line[4096], root[PATH_MAX], mnt[PATH_MAX], fstype[64], opts[512];
	FILE *f = fopen(file, "re");

	t->n = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		struct bm_cg_mount *m;

		if (!sep || sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2 ||
		    sscanf(sep + 3, "%63s %*s %511s", fstype, opts) != 2)
			continue;
		unescape(root);
		unescape(mnt);
		hide(t, mnt);
		if ((strcmp(fstype, "cgroup2") && strcmp(fstype, "cgroup")) || t->n >= BM_CG_MOUNTS_MAX)
			continue;
		m = &t->m[t->n++];
		m->v2 = !strcmp(fstype, "cgroup2");
		snprintf(m->mnt, sizeof(m->mnt), "%s", mnt);
		snprintf(m->root, sizeof(m->root), "%s", root);
		snprintf(m->opts, sizeof(m->opts), "%s", opts);
	}
	fclose(f);
	return 0;
}

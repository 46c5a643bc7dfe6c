// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/btf.h>

#include "meter/btfscan.h"

/* The bytes a type of this kind has after its struct btf_type, or -1 for a kind we do not know. */
static long trailer(uint32_t info)
{
	uint32_t vlen = BTF_INFO_VLEN(info);

	switch (BTF_INFO_KIND(info)) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return 4;
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return 0;
	case BTF_KIND_ARRAY:
		return sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return (long)vlen * sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return (long)vlen * sizeof(struct btf_enum);
	case BTF_KIND_FUNC_PROTO:
		return (long)vlen * sizeof(struct btf_param);
	case BTF_KIND_DATASEC:
		return (long)vlen * sizeof(struct btf_var_secinfo);
	case BTF_KIND_ENUM64:
		return (long)vlen * sizeof(struct btf_enum64);
	default:
		return -1;
	}
}

void bm_btf_want_mark(struct bm_btf_want *w, int n, int kind, const char *name)
{
	int k;

	for (k = 0; k < n; k++)
		if (!w[k].found && w[k].kind == kind && !strcmp(name, w[k].name))
			w[k].found = true;
}

static int scan(const uint8_t *p, size_t len, struct bm_btf_want *w, int n)
{
	const struct btf_header *h = (const void *)p;
	const uint8_t *types, *end;
	const char *strs;
	size_t str_len;
	long extra;

	if (len < sizeof(*h) || h->magic != BTF_MAGIC || h->hdr_len < sizeof(*h) ||
	    (uint64_t)h->hdr_len + h->type_off + h->type_len > len ||
	    (uint64_t)h->hdr_len + h->str_off + h->str_len > len || !h->str_len)
		return -EINVAL;
	types = p + h->hdr_len + h->type_off;
	end = types + h->type_len;
	strs = (const char *)p + h->hdr_len + h->str_off;
	str_len = h->str_len;
	if (strs[str_len - 1])
		return -EINVAL;
	while (types < end) {
		const struct btf_type *t = (const void *)types;

		if ((size_t)(end - types) < sizeof(*t))
			return -EINVAL;
		extra = trailer(t->info);
		if (extra < 0)
			return -EOPNOTSUPP;
		if ((size_t)(end - types) < sizeof(*t) + (size_t)extra)
			return -EINVAL;
		types += sizeof(*t) + (size_t)extra;
		if (t->name_off && t->name_off < str_len)
			bm_btf_want_mark(w, n, (int)BTF_INFO_KIND(t->info), strs + t->name_off);
	}
	return 0;
}

int bm_btf_scan(const char *path, struct bm_btf_want *w, int n)
{
	struct stat st;
	uint8_t *p;
	size_t got = 0;
	ssize_t r = 0;
	int fd, err, k;

	for (k = 0; k < n; k++)
		w[k].found = false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		close(fd);
		return err;
	}
	if (st.st_size <= 0) {
		close(fd);
		return -EINVAL;
	}
	/* mapped where the kernel allows it (6.16+), else read: sysfs gives a page a read */
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p != MAP_FAILED) {
		close(fd);
		err = scan(p, (size_t)st.st_size, w, n);
		munmap(p, (size_t)st.st_size);
		return err;
	}
	p = malloc((size_t)st.st_size);
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		r = read(fd, p + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	err = r < 0 ? -errno : scan(p, got, w, n);
	free(p);
	close(fd);
	return err;
}

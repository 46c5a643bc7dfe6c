// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

#include "agent/watch.h"
#include "base/common.h"

void ag_watch(struct bm_agent *a, int fd, struct ag_tag *t, enum ag_kind kind, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = t };

	t->kind = kind;
	t->ptr = ptr;
	if (fd >= 0 && epoll_ctl(a->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		bm_warn("failed to watch fd %d: %s", fd, strerror(errno));
}

void ag_unwatch(struct bm_agent *a, int fd)
{
	if (fd >= 0)
		(void)epoll_ctl(a->epfd, EPOLL_CTL_DEL, fd, NULL);
}

int ag_watch_fd(struct bm_agent *a, int fd, struct ag_tag *t, void (*fn)(void *ptr), void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = t };

	t->kind = AG_HOOK;
	t->ptr = ptr;
	t->fn = fn;
	return epoll_ctl(a->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

void ag_watch_effect(struct bm_agent *a, struct ag_effect *e)
{
	ag_watch(a, e->shim.pidfd, &e->t_shim, AG_EFF_SHIM, e);
}

void ag_emit(struct bm_agent *a, struct ag_effect *e, json_t *line)
{
	if (line && e->readers && a->hooks.line)
		a->hooks.line(a->hooks.ctx, e, line);
	json_decref(line);
}

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Tools that keep hitting the same wall: until when each tenant's next submissions wait. */
#ifndef BM_AGENT_BACKOFF_H
#define BM_AGENT_BACKOFF_H

#include <stdint.h>

#include "agent/state.h"

/* When tenant's tool may be submitted again (bm_now_ns() time; 0: it may now). */
uint64_t ag_backoff_until(const struct bm_agent *a, const char *tenant, const char *tool);
/* tenant's tool waits until until_ns. Returns 0 or -ENOMEM (it then does not wait). */
int ag_backoff_set(struct bm_agent *a, const char *tenant, const char *tool, uint64_t until_ns);
void ag_backoff_free(struct bm_agent *a);

#endif /* BM_AGENT_BACKOFF_H */

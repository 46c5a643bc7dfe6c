// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bm-shim: the image the agent's spawner execs for every shim it readies
 * (spawner.h). Its own small image, so that a shim shares no memory with
 * the spawner and starts in a fraction of the agent binary's time; the
 * agent looks for it beside itself, and execs itself instead if it is not
 * there.
 */
#include "agent/spawner.h"

int main(void)
{
	bm_spawner__ready_main(BM_SHIM_READY_FD);
}

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Agent runs as Kubernetes pods: `podspec` prints a run's Pod and
 * NetworkPolicy from its execution request, `podstate` a run's state from
 * its pod objects. Each returns the exit status: 0 ok, 1 runtime failure,
 * 125 bad usage or input (one line per bad field or flag).
 */
#ifndef BM_POD_CMDS_H
#define BM_POD_CMDS_H

int bm_cmd_podspec(int argc, char **argv);
int bm_cmd_podstate(int argc, char **argv);
/* pod objects -> the agent's pod_tenants file, rewritten atomically as it changes */
int bm_cmd_podtenants(int argc, char **argv);

#endif /* BM_POD_CMDS_H */

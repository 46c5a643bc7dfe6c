/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * burstmeter's version: `burstmeter --version`, the MCP server's
 * serverInfo, and the image's tag (tools/image.sh reads --version;
 * deploy/kubernetes/kustomization.yaml's newTag must match, which
 * tests/deploy/test_kubernetes.sh checks). Defined here only.
 */
#ifndef BM_VERSION_H
#define BM_VERSION_H

#define BM_VERSION "0.1.0"

#endif /* BM_VERSION_H */

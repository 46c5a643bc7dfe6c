/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The names the Kubernetes API server accepts, checked before a manifest
 * is printed, so that `kubectl apply` never refuses what we wrote
 * (apimachinery's validation: IsDNS1123Label, IsDNS1123Subdomain,
 * IsValidLabelValue, IsQualifiedName).
 */
#ifndef BM_K8SNAME_H
#define BM_K8SNAME_H

#include <stdbool.h>

#define BM_K8S_LABEL_MAX 63		/* a DNS label, a label value, a label key's name */
#define BM_K8S_SUBDOMAIN_MAX 253

/* [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63: a namespace's name. */
bool bm_k8s_dns_label(const char *s);
/* DNS labels joined by '.', at most 253: a pod's or a NetworkPolicy's name. */
bool bm_k8s_dns_subdomain(const char *s);
/* Empty, or at most 63 of [A-Za-z0-9._-] starting and ending with a letter or digit. */
bool bm_k8s_label_value(const char *s);
/* [prefix/]name: prefix a DNS subdomain, name a non-empty label value. */
bool bm_k8s_label_key(const char *s);

#endif /* BM_K8SNAME_H */

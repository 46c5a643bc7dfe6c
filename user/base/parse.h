/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one place numbers, sizes, durations and names from the command line,
 * config files and API requests are parsed. Each checks the whole string,
 * the sign and the range; each returns 0 or -EINVAL/-ERANGE.
 */
#ifndef BM_PARSE_H
#define BM_PARSE_H

#include <stdbool.h>
#include <stdint.h>

#define BM_NAME_MAX 64

/* Decimal integer in [min, max]; no sign, no spaces, no suffix. */
int bm_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/*
 * Size in bytes: "4096", "512K", "512M", "2G", "1T" (powers of 1024, as
 * Kubernetes' Ki/Mi/Gi and cgroupfs read them); "Ki", "Mi", "Gi", "Ti" and a
 * trailing "B" are accepted; decimals allowed ("1.5G"). Result in [min, max].
 */
int bm_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Duration: plain seconds ("1.5") or with a unit: "250ms", "2s", "1m", "1h"; ns in [min, max]. */
int bm_parse_duration_ns(const char *s, uint64_t min_ns, uint64_t max_ns, uint64_t *out);

/* CPU cores as a decimal ("0.5", "2", "1.25"), or Kubernetes millicores ("500m"); out in millicores. */
int bm_parse_cores(const char *s, uint64_t min_milli, uint64_t max_milli, uint64_t *out);

/* A plain decimal ("0.5", "12", "2.125"), no unit, in thousandths: out in [min, max]. */
int bm_parse_milli(const char *s, uint64_t min_milli, uint64_t max_milli, uint64_t *out);

/*
 * A Kubernetes quantity, exactly as the API server reads one
 * (resource.Quantity): a decimal number ("2", "1.5", ".5", "2."), then
 * nothing, a binary suffix (Ki Mi Gi Ti Pi Ei: powers of 1024), a decimal
 * one (m k M G T P E: powers of 1000, m a thousandth) or an exponent
 * ("1e9", "5E-3"). So "2G" is 2000000000 and "2Gi" 2147483648. out is the
 * quantity times scale, rounded up where it is not whole (as the API server
 * rounds a pod's bytes and millicores up), in [min, max]. No sign but '+'.
 */
int bm_parse_k8s_quantity(const char *s, uint64_t scale, uint64_t min, uint64_t max,
			  uint64_t *out);
/* A Kubernetes quantity of bytes (scale 1): "2Gi", "2G", "1e9", "512Mi". */
int bm_parse_k8s_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* A Kubernetes quantity of CPU in millicores (scale 1000): "500m", "2", "1.5", "1e-3". */
int bm_parse_k8s_cpu(const char *s, uint64_t min_milli, uint64_t max_milli, uint64_t *out);

/* An id or tenant: [A-Za-z0-9._-]{1,64}, not starting with '.' ("." and ".." are paths). */
bool bm_valid_name(const char *s);

#endif /* BM_PARSE_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * W3C Trace Context: the traceparent a caller hands an effect (a header or
 * a request field), kept with it, written in its outcome and passed to its
 * command as TRACEPARENT, so that the command's own spans join the trace.
 *
 *   version "-" trace-id "-" parent-id "-" trace-flags
 *   00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
 */
#ifndef BM_TRACE_H
#define BM_TRACE_H

#define BM_TRACEPARENT_LEN 55	/* version 00: exactly this long */
#define BM_TRACEPARENT_MAX 255	/* a later version may carry more after a '-' */
#define BM_TRACE_ENV "TRACEPARENT"

/*
 * Check s as a traceparent: lowercase hex fields of 2, 32, 16 and 2 digits,
 * version not ff, trace-id and parent-id not all zeros; version 00 exactly
 * BM_TRACEPARENT_LEN bytes, a later one at most BM_TRACEPARENT_MAX with
 * anything more after a '-' (the spec's rule for versions it does not know).
 * Returns 0, or -EINVAL with *why (a static string) saying what is wrong.
 */
int bm_traceparent_check(const char *s, const char **why);

/*
 * envp (NULL-terminated) with "TRACEPARENT=tp" in place of any TRACEPARENT
 * it has: a new array in one allocation (free() it once), its strings
 * envp's but the one. NULL and errno ENOMEM.
 */
char **bm_trace_env(char *const *envp, const char *tp);

#endif /* BM_TRACE_H */

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Terminal histograms in the style of runqlat: log2 rows, counts, bars. */
#ifndef BM_HISTFMT_H
#define BM_HISTFMT_H

#include <stdint.h>
#include <stdio.h>

#include "bm_abi.h"

/* Format a value of dimension d (display units) compactly: "1.50", "300M", "12.5M/s", "4.1". */
char *bm_fmt_value(enum bm_dim d, double v, char *buf, size_t len);

/* Print the histogram of dimension d (raw window values) with a header line. */
void bm_hist_print(FILE *f, enum bm_dim d, const uint64_t hist[BM_HIST_BUCKETS], uint64_t window_ns);

#endif /* BM_HISTFMT_H */

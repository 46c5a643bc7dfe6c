// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>

#include "meter/window.h"
#include "views/histfmt.h"

#define BAR_WIDTH 40

static const char *const units[BM_DIM__MAX] = {
	[BM_DIM_CPU] = "cores", [BM_DIM_MEM] = "bytes", [BM_DIM_PIDS] = "tasks",
	[BM_DIM_NET] = "bytes/s", [BM_DIM_RUNQ] = "ms waited",
};

static char *fmt_si(double v, const char *suffix, char *buf, size_t len)
{
	static const char prefix[] = " KMGTPE";
	int i = 0;

	while (v >= 1024 && i < 6) {
		v /= 1024;
		i++;
	}
	if (!i)
		snprintf(buf, len, "%.0f%s", v, suffix);
	else
		snprintf(buf, len, v < 10 ? "%.1f%c%s" : "%.0f%c%s", v, prefix[i], suffix);
	return buf;
}

char *bm_fmt_value(enum bm_dim d, double v, char *buf, size_t len)
{
	switch (d) {
	case BM_DIM_MEM:
		return fmt_si(v, "", buf, len);
	case BM_DIM_NET:
	case BM_DIM_IO_READ:
	case BM_DIM_IO_WRITE:
	case BM_DIM_DIRTY:
		return fmt_si(v, "/s", buf, len);
	case BM_DIM_PIDS:
		snprintf(buf, len, "%.0f", v);
		return buf;
	default:
		snprintf(buf, len, v == 0 ? "0" : v < 0.01 ? "%.4f" : "%.2f", v);
		return buf;
	}
}

static void bar(FILE *f, uint64_t n, uint64_t max)
{
	int w = max ? (int)((n * BAR_WIDTH + max - 1) / max) : 0, i;

	fputc('|', f);
	for (i = 0; i < BAR_WIDTH; i++)
		fputc(i < w ? '*' : ' ', f);
	fputc('|', f);
}

static void row(FILE *f, enum bm_dim d, int b, uint64_t n, uint64_t max, uint64_t window_ns)
{
	char lo[32], hi[32];

	if (!b) {
		fprintf(f, "%26s : %-8llu ", "0", (unsigned long long)n);
	} else {
		/* bucket 1 starts at the smallest non-zero value, the others where the last ended */
		bm_fmt_value(d, b > 1 ? bm_window_bucket_edge(d, b - 1, window_ns)
				      : bm_window_bucket_edge(d, 1, window_ns) / 2, lo, sizeof(lo));
		bm_fmt_value(d, bm_window_bucket_edge(d, b, window_ns), hi, sizeof(hi));
		fprintf(f, "%11s -> %-11s : %-8llu ", lo, hi, (unsigned long long)n);
	}
	bar(f, n, max);
	fputc('\n', f);
}

void bm_hist_print(FILE *f, enum bm_dim d, const uint64_t hist[BM_HIST_BUCKETS], uint64_t window_ns)
{
	uint64_t max = 0;
	int b, first = -1, last = -1;

	for (b = 0; b < BM_HIST_BUCKETS; b++) {
		if (hist[b] > max)
			max = hist[b];
		if (!hist[b] || !b)
			continue;
		if (first < 0)
			first = b;
		last = b;
	}
	fprintf(f, "%s per %.0f ms window\n", bm_window_dim_name(d), window_ns / 1e6);
	fprintf(f, "%26s : %-8s distribution\n", units[d], "windows");
	/* the zero row, then the non-empty range: 64 log2 rows from 1 ns would bury the shape */
	if (hist[0] || first < 0)
		row(f, d, 0, hist[0], max, window_ns);
	for (b = first; first > 0 && b <= last; b++)
		row(f, d, b, hist[b], max, window_ns);
}

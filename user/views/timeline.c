// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The timeline picture, for people reading a post-mortem: a burst one window
 * wide stays visible however long the effect ran (columns keep their maximum,
 * never an average), ticks are round in the unit limits are set in, and the
 * document needs nothing but itself (no fonts, scripts or links) so it
 * survives being attached to a ticket. No libm: the Makefile does not link it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "meter/window.h"
#include "views/timeline.h"

#define SVG_W 1000
#define X0 78.0			/* plot left: room for "1.5G/s" tick labels */
#define PW 896.0		/* plot width, and so the most columns a panel draws */
#define HDR 56.0		/* title and subtitle */
#define LANE_H 15.0		/* one row of action labels */
#define MAX_LANES 6		/* more rows than this and the labels dwarf the data */
#define HEAD_H 20.0		/* panel name band */
#define PH 100.0		/* plot height */
#define GAP 12.0
#define PANEL_H (HEAD_H + PH + GAP)
#define FOOT 44.0		/* time tick labels and axis name */
#define LABEL_CP 56		/* longest action label, in characters */
#define CH_W 6.2		/* rough advance of an 11px sans-serif character */
#define CEIL_RED "#d62728"

/* The order a reader scans: what it used, what it held, what it spawned, what it sent, waits. */
static const enum bm_dim order[BM_DIM__MAX] = { BM_DIM_CPU, BM_DIM_MEM, BM_DIM_PIDS, BM_DIM_NET,
						BM_DIM_RUNQ, BM_DIM_IO_READ, BM_DIM_IO_WRITE,
						BM_DIM_IO_OPS, BM_DIM_DIRTY };

static const struct {
	const char *name, *unit, *color;
} look[BM_DIM__MAX] = {
	[BM_DIM_CPU] = { "CPU", "cores", "#2f6db5" },
	[BM_DIM_MEM] = { "memory", "resident bytes", "#7a4fb0" },
	[BM_DIM_PIDS] = { "tasks", "live", "#2e8b57" },
	[BM_DIM_NET] = { "send rate", "bytes/s", "#d07a1f" },
	[BM_DIM_RUNQ] = { "run-queue wait", "ms per window", "#178f8f" },
	[BM_DIM_IO_READ] = { "disk read", "bytes/s", "#8a6d1f" },
	[BM_DIM_IO_WRITE] = { "disk write", "bytes/s", "#b03a48" },
	[BM_DIM_IO_OPS] = { "disk operations", "bios/s", "#5a6b7d" },
	[BM_DIM_DIRTY] = { "page cache dirtied", "bytes/s", "#9b5f8f" },
};

struct mark_pos {
	double at_ms, x, a, b;	/* line at x; label spans [a, b] */
	const char *label;
	int lane;
	bool end;		/* label to the left of its line (right edge) */
};

struct axis {
	double top, step;
	int unit;		/* NET labels: 1024^unit for every tick; -1 per tick */
};

struct geom {
	double win_ms, tmax_ms, tstep_s, data_x1, ptop, bottom;
};

/* Length of the UTF-8 character at s; 0 if malformed, overlong or not allowed in XML. */
static size_t utf8_char(const unsigned char *s)
{
	uint32_t c = s[0];
	size_t n, i;

	if (c < 0x80)
		return 1;
	if (c < 0xc2 || c > 0xf4)
		return 0;
	n = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
	c &= 0x3f >> n;			/* the lead byte's payload bits */
	for (i = 1; i <= n; i++) {	/* stops at the NUL: it is no continuation byte */
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((n == 2 && c < 0x800) || (n == 3 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff) || c == 0xfffe || c == 0xffff)
		return 0;
	return n + 1;
}

/*
 * Write s as XML character data, at most max characters (then an ellipsis).
 * Titles and labels come from users: bytes that are not UTF-8 become U+FFFD
 * and control characters spaces, so no input makes the document invalid.
 */
static void xml_text(FILE *f, const char *s, size_t max)
{
	static const char special[] = "&<>\"'", *const entity[] = {
		"&amp;", "&lt;", "&gt;", "&quot;", "&apos;",
	};
	size_t n, k;

	for (n = 0; s && *s; n++, s += k ? k : 1) {
		const char *e = strchr(special, *s);

		k = utf8_char((const unsigned char *)s);
		if (n == max)
			fputs("\xe2\x80\xa6", f);	/* an ellipsis, and the rest is cut */
		else if (e)
			fputs(entity[e - special], f);
		else if (!k)
			fputs("\xef\xbf\xbd", f);
		else if ((unsigned char)*s < 0x20 || *s == 0x7f)
			fputc(' ', f);
		else
			fwrite(s, 1, k, f);
		if (n == max)
			return;
	}
}

/* Smallest of {1, 2, 2.5 (if quarter), 5} x 10^k that is >= raw > 0. */
static double nice_dec(double raw, bool quarter)
{
	double p = 1, m;

	while (p * 10 <= raw)
		p *= 10;
	while (p > raw)
		p /= 10;
	m = raw / p;
	return p * (m <= 1 ? 1 : m <= 2 ? 2 : quarter && m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10);
}

/* Largest power of 1024 up to v (1 for bytes, capped at exa), and its exponent. */
static double unit_of(double v, int *exp)
{
	double u = 1;

	for (*exp = 0; v >= u * 1024 && *exp < 6; ++*exp)
		u *= 1024;
	return u;
}

/*
 * A y scale that leaves headroom over max and steps by round amounts:
 * memory by powers of two (limits are set as 512M, 1.5G), tasks by whole
 * numbers, everything else by 1-2-2.5-5.
 */
/* Dimensions in bytes per second, labelled with binary prefixes. */
static bool bytes_rate(enum bm_dim d)
{
	return d == BM_DIM_NET || d == BM_DIM_IO_READ || d == BM_DIM_IO_WRITE || d == BM_DIM_DIRTY;
}

static struct axis axis_make(enum bm_dim d, double max)
{
	static const double fallback[BM_DIM__MAX] = { [BM_DIM_CPU] = 1, [BM_DIM_MEM] = 1 << 20,
		[BM_DIM_PIDS] = 4, [BM_DIM_NET] = 1 << 20, [BM_DIM_RUNQ] = 1,
		[BM_DIM_IO_READ] = 1 << 20, [BM_DIM_IO_WRITE] = 1 << 20, [BM_DIM_IO_OPS] = 100,
		[BM_DIM_DIRTY] = 1 << 20 };
	struct axis ax = { .unit = -1 };
	double want = max > 0 ? max * 1.08 : fallback[d], raw = want / 4, u, q;
	long k;

	if (d == BM_DIM_MEM) {
		for (ax.step = 1; ax.step < raw; ax.step *= 2)
			;
	} else if (bytes_rate(d)) {
		/* decimal steps of the top's unit, every label in it: 0, 0.5G/s, 1G/s */
		u = unit_of(want, &ax.unit);
		ax.step = nice_dec(raw / u, true) * u;
	} else {
		ax.step = nice_dec(raw, d != BM_DIM_PIDS);
		if (d == BM_DIM_PIDS && ax.step < 1)
			ax.step = 1;
	}
	q = want / ax.step;
	k = (long)q;
	ax.top = (k < q ? k + 1 : k) * ax.step;
	return ax;
}

/* v of dimension d for a label: "2.5", "512M", "1.5G", "50M/s", "12 ms". */
static void fmt_val(char *buf, size_t len, enum bm_dim d, double v, int unit, int prec)
{
	static const char *const prefix[] = { "", "K", "M", "G", "T", "P", "E" };
	const char *sfx = d == BM_DIM_RUNQ ? " ms" : bytes_rate(d) || d == BM_DIM_IO_OPS ? "/s" : "";
	int i = 0;

	if (d == BM_DIM_MEM || bytes_rate(d)) {
		if (unit < 0)
			unit_of(v, &unit);
		for (; i < unit; i++)
			v /= 1024;
	}
	/* "%g" would turn 1500 tasks into 1.5e+03 */
	if (v == 0)
		snprintf(buf, len, "0");
	else if (v >= 100)
		snprintf(buf, len, "%.0f%s%s", v, prefix[i], sfx);
	else
		snprintf(buf, len, "%.*g%s%s", prec, v, prefix[i], sfx);
}

static double x_of(const struct geom *g, double ms)
{
	return X0 + ms / g->tmax_ms * PW;
}

static double y_of(const struct axis *ax, double ptop, double v)
{
	return ptop + HEAD_H + PH - (v < ax->top ? v : ax->top) / ax->top * PH;
}

/* Largest value of windows [lo, hi) of dimension d: a one-window spike survives. */
static double col_max(const struct bm_series *s, enum bm_dim d, size_t lo, size_t hi)
{
	double m = 0;

	for (; lo < hi; lo++)
		if (bm_series_clean(s->v[d][lo]) > m)
			m = bm_series_clean(s->v[d][lo]);
	return m;
}

/*
 * The values as one closed step area: a column per window, or per pixel
 * when there are more windows than pixels. Equal neighbours share a step,
 * so the path stays near two commands per pixel column at most.
 */
static void panel_path(FILE *f, const struct bm_series *s, enum bm_dim d, const struct axis *ax,
		       double ptop, const struct geom *g)
{
	double base = ptop + HEAD_H + PH, w = g->data_x1 - X0;
	size_t cols = (size_t)w > 0 ? (size_t)w : 1, c;
	long prev = (long)(base * 10 + 0.5), cur;

	if (s->n < cols)
		cols = s->n;
	fprintf(f, "<path id=\"data-%s\" d=\"M%.1f,%.1f", bm_window_dim_short(d), X0, base);
	for (c = 0; c < cols; c++) {
		double y = y_of(ax, ptop, col_max(s, d, c * s->n / cols, (c + 1) * s->n / cols));

		cur = (long)(y * 10 + 0.5);
		if (cur != prev)
			fprintf(f, " H%.1f V%.1f", X0 + w * c / cols, y);
		prev = cur;
	}
	fprintf(f, " H%.1f V%.1f Z\" fill=\"%s\" fill-opacity=\"0.22\" stroke=\"%s\" "
		"stroke-width=\"1.3\" stroke-linejoin=\"round\"/>\n", g->data_x1, base,
		look[d].color, look[d].color);
}

/* Name, peak, frame, y ticks with their grid, and the time grid. */
static void panel_frame(FILE *f, enum bm_dim d, const struct axis *ax, double peak, double ptop,
			const struct geom *g)
{
	double py = ptop + HEAD_H, v, ms;
	char buf[48];
	int k;

	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" font-weight=\"bold\" "
		"fill=\"#222\">%s <tspan font-weight=\"normal\" fill=\"#777\">%s</tspan></text>\n",
		X0, ptop + 14, look[d].name, look[d].unit);
	fmt_val(buf, sizeof(buf), d, peak, -1, 3);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#555\">peak %s</text>\n",
		X0 + PW, ptop + 14, buf);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fbfbfc\" "
		"stroke=\"#c8c8cc\"/>\n", X0, py, PW, PH);
	for (k = 1; (ms = k * g->tstep_s * 1000) < g->tmax_ms * (1 - 1e-9); k++)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#e6e6ea\"/>\n", x_of(g, ms), py, x_of(g, ms), py + PH);
	for (k = 0; (v = k * ax->step) <= ax->top * (1 + 1e-9); k++) {
		double y = y_of(ax, ptop, v);

		if (v > 0 && v < ax->top * (1 - 1e-9))
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				"stroke=\"#e6e6ea\"/>\n", X0, y, X0 + PW, y);
		fmt_val(buf, sizeof(buf), d, v, ax->unit, 4);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"10\" "
			"fill=\"#555\">%s</text>\n", X0 - 6, y + 3.5, buf);
	}
}

/* One dimension: frame, values, and the ceiling over them as a dashed red line. */
static void panel(FILE *f, const struct bm_timeline *t, enum bm_dim d, double ptop,
		  const struct geom *g)
{
	double peak = col_max(t->s, d, 0, t->s->n), ceil = bm_series_clean(t->ceiling[d]), y;
	struct axis ax = axis_make(d, peak > ceil ? peak : ceil);
	char buf[48];

	panel_frame(f, d, &ax, peak, ptop, g);
	panel_path(f, t->s, d, &ax, ptop, g);
	if (!ceil)
		return;
	y = y_of(&ax, ptop, ceil);
	fmt_val(buf, sizeof(buf), d, ceil, -1, 3);
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
		"stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/>\n", X0, y, X0 + PW, y, CEIL_RED);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"%s\">ceiling %s</text>\n",
		X0 + 5, y - 4, CEIL_RED, buf);
}

static int mark_cmp(const void *a, const void *b)
{
	const struct mark_pos *x = a, *y = b;

	return (x->at_ms > y->at_ms) - (x->at_ms < y->at_ms);
}

/* A lane where the label overlaps no label and no line, and its line crosses no label below. */
static bool lane_fits(const struct mark_pos *m, int k, const double end[], const double line[])
{
	int j;

	if (m->a <= end[k] + 6)
		return false;
	/* lines of earlier marks run down through rows below theirs */
	for (j = 0; j < MAX_LANES; j++)
		if ((j < k && line[j] >= m->a - 2) || (j > k && m->x <= end[j] + 2))
			return false;
	return true;
}

/*
 * Stagger the action labels into rows, top row first, in time order. When
 * no row is free (a storm of actions) the label goes where its row ended
 * earliest: overlap is then the honest picture of "many actions at once".
 */
static int marks_place(struct mark_pos *m, size_t n, const struct geom *g)
{
	double end[MAX_LANES], line[MAX_LANES];
	int k, best, lanes = 0;
	size_t i;

	for (k = 0; k < MAX_LANES; k++)
		end[k] = line[k] = -1e9;
	for (i = 0; i < n; i++) {
		/* bytes, not characters: wider for non-ASCII, as those glyphs tend to be */
		size_t len = strlen(m[i].label);
		double w = (double)(len < LABEL_CP ? len : LABEL_CP + 1) * CH_W;

		m[i].x = x_of(g, m[i].at_ms);
		m[i].end = m[i].x + 4 + w > SVG_W - 4;
		m[i].a = m[i].end ? m[i].x - 4 - w : m[i].x + 4;
		m[i].b = m[i].end ? m[i].x - 4 : m[i].x + 4 + w;
		for (best = 0, k = 0; k < MAX_LANES; k++) {
			if (lane_fits(&m[i], k, end, line))
				break;
			if (end[k] < end[best])
				best = k;
		}
		m[i].lane = k < MAX_LANES ? k : best;
		end[m[i].lane] = m[i].b;
		line[m[i].lane] = m[i].x;
		if (m[i].lane + 1 > lanes)
			lanes = m[i].lane + 1;
	}
	return lanes;
}

static void marks_draw(FILE *f, const struct mark_pos *m, size_t n, const struct geom *g)
{
	size_t i;
	int d;

	for (i = 0; i < n; i++) {
		double y = HDR + (m[i].lane + 1) * LANE_H, top = y - 11;

		/* broken at the panel names, which a line through them would strike out */
		for (d = 0; d < BM_DIM__MAX; d++, top = g->ptop + d * PANEL_H + HEAD_H)
			fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				"stroke=\"#333\" stroke-opacity=\"0.75\"/>\n", m[i].x, top, m[i].x,
				g->ptop + d * PANEL_H + HEAD_H + PH);
		fprintf(f, "<text class=\"mark\" x=\"%.1f\" y=\"%.1f\"%s fill=\"#222\">", m[i].x +
			(m[i].end ? -4 : 4), y - 3, m[i].end ? " text-anchor=\"end\"" : "");
		xml_text(f, m[i].label, LABEL_CP);
		fputs("</text>\n", f);
	}
}

static void header(FILE *f, const struct bm_timeline *t, double height)
{
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%.0f\" viewBox=\"0 0 %d %.0f\" font-family=\"DejaVu Sans, Helvetica, "
		"Arial, sans-serif\" font-size=\"11\">\n<title>", SVG_W, height, SVG_W, height);
	xml_text(f, t->title ? t->title : "burstmeter timeline", 200);
	fprintf(f, "</title>\n<rect width=\"%d\" height=\"%.0f\" fill=\"#ffffff\"/>\n"
		"<text x=\"%.1f\" y=\"24\" font-size=\"16\" font-weight=\"bold\" fill=\"#111\">",
		SVG_W, height, X0);
	xml_text(f, t->title ? t->title : "burstmeter timeline", 88);
	fputs("</text>\n", f);
}

static void geom_make(struct geom *g, const struct bm_timeline *t, const struct mark_pos *m,
		      size_t n)
{
	size_t i;

	/* a point of a bounded series spans step windows (its open point is not drawn) */
	g->win_ms = (double)(t->s->window_ns ? t->s->window_ns : BM_WINDOW_NS_DEFAULT) / 1e6 *
		    (double)bm_series_step(t->s);
	g->tmax_ms = (double)t->s->n * g->win_ms;
	for (i = 0; i < n; i++)	/* an action after the last window still gets drawn */
		if (m[i].at_ms > g->tmax_ms)
			g->tmax_ms = m[i].at_ms;
	g->data_x1 = X0 + PW * ((double)t->s->n * g->win_ms / g->tmax_ms);
	g->tstep_s = nice_dec(g->tmax_ms / 1000 / 10, false);
}

static void render(FILE *f, const struct bm_timeline *t, struct mark_pos *m, size_t n)
{
	struct geom g = { 0 };
	int i, lanes;
	double s;

	geom_make(&g, t, m, n);
	lanes = marks_place(m, n, &g);
	g.ptop = HDR + lanes * LANE_H + (lanes ? 6 : 0);
	g.bottom = g.ptop + BM_DIM__MAX * PANEL_H - GAP;
	header(f, t, g.bottom + FOOT);
	fprintf(f, "<text x=\"%.1f\" y=\"42\" fill=\"#666\">%zu window%s of %g ms, %.2f s%s"
		"</text>\n", X0, t->s->n, t->s->n == 1 ? "" : "s", g.win_ms,
		(double)t->s->n * g.win_ms / 1000, n ? "; vertical lines are actions" : "");
	for (i = 0; i < BM_DIM__MAX; i++)
		panel(f, t, order[i], g.ptop + i * PANEL_H, &g);
	/* time tick labels under the last panel only; every panel drew the grid */
	for (i = 0; (s = i * g.tstep_s) * 1000 <= g.tmax_ms * (1 + 1e-9); i++)
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\" "
			"fill=\"#555\">%g</text>\n", x_of(&g, s * 1000), g.bottom + 14, s);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#444\">"
		"time (s)</text>\n", X0 + PW / 2, g.bottom + 32);
	marks_draw(f, m, n, &g);
}

int bm_timeline_svg(FILE *f, const struct bm_timeline *t)
{
	struct mark_pos *m = NULL;
	size_t i, n = 0;
	int err;

	if (!f || !t)
		return -EINVAL;
	if (!t->s || !t->s->n) {
		header(f, t, 120);
		fprintf(f, "<text x=\"%d\" y=\"80\" text-anchor=\"middle\" font-size=\"14\" "
			"fill=\"#777\">no windows</text>\n", SVG_W / 2);
	} else {
		n = t->marks ? t->n_marks : 0;
		if (n && !(m = calloc(n, sizeof(*m))))
			return -ENOMEM;
		for (i = 0; i < n; i++) {
			m[i].at_ms = bm_series_clean(t->marks[i].at_ms);
			m[i].label = t->marks[i].label ? t->marks[i].label : "";
		}
		if (n)
			qsort(m, n, sizeof(*m), mark_cmp);
		render(f, t, m, n);
		free(m);
	}
	fputs("</svg>\n", f);
	/* a full disk shows at the flush; report it, not a truncated picture */
	err = fflush(f) ? errno : 0;
	if (ferror(f))
		return err ? -err : -EIO;
	return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/meter/series.h: the timeline is a file people open in a browser or attach
 * to a ticket, so every picture is held to two outside judges: xmllint (is
 * it XML at all, whatever the title held) and rsvg-convert (does a real SVG
 * renderer draw it). What the eye must see, a one-window spike among 20,000
 * windows or a ramp meeting its ceiling, is read back from the path itself.
 *
 * BM_TIMELINE_PNG=/tmp/bm-timeline-example.png keeps the example's picture.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "meter/series.h"
#include "views/timeline.h"

#define W_NS 10000000ULL
#define MIB (1024.0 * 1024)
#define GIB (1024.0 * MIB)

struct out {
	char svg[64], png[80];
	char *text;		/* the whole document */
};

/* What a path draws: its baseline, x extent, first step and highest step. */
struct path_info {
	double base, x0, x1, yfirst, ymin, ymin_x0, ymin_x1;
	int cmds;
};

static int run(const char *fmt, const char *a, const char *b)
{
	char cmd[256];
	int st;

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Render t to memory, for reading, and to a temporary file, for the judges. */
static void render(const struct bm_timeline *t, struct out *o)
{
	size_t len = 0;
	FILE *f = open_memstream(&o->text, &len);
	int fd;

	assert_non_null(f);
	assert_int_equal(bm_timeline_svg(f, t), 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(strlen(o->text), len);	/* no NUL inside */
	strcpy(o->svg, "/tmp/bm-series-XXXXXX.svg");
	fd = mkstemps(o->svg, 4);
	assert_true(fd >= 0);
	snprintf(o->png, sizeof(o->png), "%s.png", o->svg);
	assert_int_equal(write(fd, o->text, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
}

/*
 * Both judges: well-formed XML, and a non-empty PNG from a real renderer.
 * Without them (make check on a machine make test never set up) only the
 * judges are left out, never the test's own asserts on the text; under
 * CI=true, where make test installs them, a missing judge is a failure.
 */
static void judge(struct out *o)
{
	const char *ci = getenv("CI");
	unsigned char sig[8] = { 0 };
	FILE *f;

	if (run("command -v %s >/dev/null && command -v %s >/dev/null", "xmllint", "rsvg-convert")) {
		if (ci && !strcmp(ci, "true"))
			fail_msg("xmllint or rsvg-convert is missing, and CI=true: make test installs them");
		print_message("# no xmllint or rsvg-convert: the SVG is not judged here\n");
		return;
	}
	assert_int_equal(run("xmllint --noout '%s'%s", o->svg, ""), 0);
	assert_int_equal(run("rsvg-convert -o '%s' '%s'", o->png, o->svg), 0);
	f = fopen(o->png, "rb");
	assert_non_null(f);
	assert_int_equal(fread(sig, 1, sizeof(sig), f), sizeof(sig));
	fclose(f);
	assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
}

static void done(struct out *o)
{
	unlink(o->svg);
	unlink(o->png);
	free(o->text);
}

static void path_of(const char *doc, const char *dim, struct path_info *p)
{
	char key[32];
	const char *s;
	double x = 0, v;
	bool top = false, first = true;
	int k;

	snprintf(key, sizeof(key), "id=\"data-%s\" d=\"", dim);
	s = strstr(doc, key);
	assert_non_null(s);
	s += strlen(key);
	memset(p, 0, sizeof(*p));
	p->ymin = 1e9;
	while (*s && *s != '"') {
		char c = *s++;

		if (c == ' ')
			continue;
		p->cmds++;
		if (c == 'M') {
			assert_int_equal(sscanf(s, "%lf,%lf%n", &p->x0, &p->base, &k), 2);
			x = p->x0;
		} else if (c == 'H' || c == 'V') {
			assert_int_equal(sscanf(s, "%lf%n", &v, &k), 1);
			if (c == 'H' && top)
				p->ymin_x1 = v;
			if (c == 'H')
				x = p->x1 = v, top = false;
			if (c == 'V' && first)
				p->yfirst = v, first = false;
			if (c == 'V' && v < p->ymin)
				p->ymin = v, p->ymin_x0 = x, top = true;
		} else {
			assert_int_equal(c, 'Z');
			k = 0;
		}
		s += k;
	}
}

/* Attribute attr of the element on the first line of doc that contains needle. */
static double attr_on_line(const char *doc, const char *needle, const char *attr)
{
	const char *s = strstr(doc, needle), *a;
	char key[16];
	double v;

	assert_non_null(s);
	while (s > doc && s[-1] != '\n')
		s--;
	snprintf(key, sizeof(key), " %s=\"", attr);
	a = strstr(s, key);
	assert_non_null(a);
	assert_true(a < strchr(s, '\n'));
	assert_int_equal(sscanf(a + strlen(key), "%lf", &v), 1);
	return v;
}

static void push(struct bm_series *s, double cpu, double mem, double pids, double net, double runq)
{
	double v[BM_DIM__MAX] = {
		[BM_DIM_CPU] = cpu, [BM_DIM_MEM] = mem, [BM_DIM_PIDS] = pids,
		[BM_DIM_NET] = net, [BM_DIM_RUNQ] = runq,
	};

	assert_int_equal(bm_series_push(s, v), 0);
}

static void test_series_push_grows_geometrically_and_cleans(void **state)
{
	struct bm_series s = { .window_ns = W_NS };
	size_t i, grows = 0, cap = 0;

	for (i = 0; i < 5000; i++) {
		push(&s, (double)i, i == 7 ? NAN : -1.0 * (i == 8), i == 9 ? INFINITY : 3, 0, 0);
		grows += s.cap != cap;
		cap = s.cap;
	}
	assert_int_equal(s.n, 5000);
	assert_true(s.cap >= s.n);
	assert_true(grows <= 6);	/* 256 .. 8192 by doubling */
	assert_true(s.v[BM_DIM_CPU][4999] == 4999.0f);
	assert_true(s.v[BM_DIM_MEM][7] == 0.0f && s.v[BM_DIM_MEM][8] == 0.0f);
	assert_true(s.v[BM_DIM_PIDS][9] == 0.0f && s.v[BM_DIM_PIDS][10] == 3.0f);
	bm_series_free(&s);
	assert_int_equal(s.n, 0);
	assert_null(s.v[BM_DIM_CPU]);
	bm_series_free(NULL);
}

/*
 * Bounded: 100,000 windows (1,000 s) into at most 64 points. The points stay
 * a power-of-two number of windows each, every window is in exactly one
 * point (the open one included), the one-window burst at 77,777 is in its
 * point at full height, and memory never grows past 64 points (runs).
 */
static void test_series_bounded_keeps_bursts_in_fixed_memory(void **state)
{
	struct bm_series s = { .window_ns = W_NS, .max = 64 };
	uint64_t step, covered;
	size_t i, burst_pt = 0;
	float top = 0;

	for (i = 0; i < 100000; i++) {
		push(&s, i == 77777 ? 8.0 : 0.25, (double)i, 1, 0, 0);
		assert_true(s.n < 64 && s.runs <= s.cap && s.cap <= 64);
	}
	step = bm_series_step(&s);
	assert_true(step >= 100000 / 64 && (step & (step - 1)) == 0);
	covered = s.n * step + s.part_n;
	assert_int_equal(covered, 100000);
	assert_int_equal(bm_series_len(&s), s.n + (s.part_n > 0));
	for (i = 0; i < bm_series_len(&s); i++) {
		if (bm_series_at(&s, BM_DIM_CPU, i) > top) {
			top = bm_series_at(&s, BM_DIM_CPU, i);
			burst_pt = i;
		}
		/* a point is the maximum of its windows: memory rises by one each window */
		assert_true(bm_series_at(&s, BM_DIM_MEM, i) ==
			    (float)(i < s.n ? (i + 1) * step - 1 : 99999));
	}
	assert_true(top == 8.0f);
	assert_int_equal(burst_pt, 77777 / step);
	bm_series_free(&s);
	assert_int_equal(bm_series_len(&s), 0);
	assert_int_equal(s.max, 64);
}

/* Runs of idle windows pushed at once make the series that one push per window makes. */
static void test_series_push_n_is_n_pushes(void **state)
{
	static const uint64_t runs[] = { 1, 3, 0, 64, 1000, 7, 250000, 2, 5 };
	struct bm_series a = { .window_ns = W_NS, .max = 64 }, b = { .window_ns = W_NS, .max = 64 };
	struct bm_series c = { .window_ns = W_NS };
	double v[BM_DIM__MAX] = { 0 };
	size_t i, k;
	uint64_t j;
	int d;

	for (i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		/* a window with something in it, then a run of windows at a level */
		v[BM_DIM_CPU] = 1.0 + (double)i;
		v[BM_DIM_MEM] = 100.0 * (double)i;
		assert_int_equal(bm_series_push(&a, v), 0);
		assert_int_equal(bm_series_push(&b, v), 0);
		v[BM_DIM_CPU] = 0;
		assert_int_equal(bm_series_push_n(&a, v, runs[i]), 0);
		for (j = 0; j < runs[i]; j++)
			assert_int_equal(bm_series_push(&b, v), 0);
		if (runs[i] < 2000)
			assert_int_equal(bm_series_push_n(&c, v, runs[i]), 0);
	}
	assert_int_equal(a.n, b.n);
	assert_int_equal(a.step, b.step);
	assert_int_equal(a.part_n, b.part_n);
	assert_true(a.step > 1);
	for (d = 0; d < BM_DIM__MAX; d++)
		for (k = 0; k < bm_series_len(&a); k++)
			assert_true(bm_series_at(&a, d, k) == bm_series_at(&b, d, k));
	/* unbounded: one point per window */
	assert_int_equal(bm_series_len(&c), 1 + 3 + 0 + 64 + 1000 + 7 + 2 + 5);
	bm_series_free(&a);
	bm_series_free(&b);
	bm_series_free(&c);
}

/*
 * What a sleeper costs: a burst, 1,000,000 idle windows, the burst again.
 * The idle stretch is one run however long it is (a fold merges it with
 * itself), so the series holds a handful of runs, not 2,048 points.
 */
static void test_series_idle_stretch_is_one_run(void **state)
{
	struct bm_series s = { .window_ns = W_NS, .max = 2048 };
	double v[BM_DIM__MAX] = { [BM_DIM_CPU] = 2, [BM_DIM_MEM] = 5 * MIB, [BM_DIM_PIDS] = 3 };
	float cpu[2049];
	size_t i, n;

	(void)state;
	assert_int_equal(bm_series_push(&s, v), 0);
	v[BM_DIM_CPU] = 0;
	assert_int_equal(bm_series_push_n(&s, v, 1000000), 0);
	v[BM_DIM_CPU] = 4;
	assert_int_equal(bm_series_push(&s, v), 0);
	assert_true(bm_series_step(&s) == 512);	/* 1,000,002 windows in 2,048 points or fewer */
	assert_true(s.runs <= 3 && s.cap <= 8);
	n = bm_series_len(&s);
	assert_true(n == (1000002 + 511) / 512);
	bm_series_dim(&s, BM_DIM_CPU, cpu);
	/* the first burst is the first point, the second the last (the open one), nothing between */
	assert_true(cpu[0] == 2.0f && cpu[n - 1] == 4.0f);
	for (i = 1; i < n - 1; i++)
		assert_true(cpu[i] == 0.0f);
	assert_true(bm_series_at(&s, BM_DIM_CPU, n - 1) == 4.0f && bm_series_at(&s, BM_DIM_MEM, n / 2) == (float)(5 * MIB));
	bm_series_free(&s);
	assert_null(s.run);
}

/* The series as documented (series.h), one window at a time, to hold bm_series_push_n() against. */
struct model {
	size_t max, n;
	uint64_t step, part_n;
	float v[BM_DIM__MAX][4096], part[BM_DIM__MAX];
};

static float model_clean(double v)
{
	return isfinite(v) && v > 0 ? (float)v : 0;
}

static void model_push(struct model *m, const double v[BM_DIM__MAX])
{
	size_t i;
	int d;

	for (d = 0; d < BM_DIM__MAX; d++)
		if (!m->part_n || model_clean(v[d]) > m->part[d])
			m->part[d] = model_clean(v[d]);
	if (++m->part_n < m->step)
		return;
	for (d = 0; d < BM_DIM__MAX; d++)
		m->v[d][m->n] = m->part[d];
	m->n++;
	m->part_n = 0;
	if (!m->max || m->n < m->max + (m->max & 1))
		return;
	for (d = 0; d < BM_DIM__MAX; d++)
		for (i = 0; i < m->n / 2; i++)
			m->v[d][i] = m->v[d][2 * i] > m->v[d][2 * i + 1] ? m->v[d][2 * i] : m->v[d][2 * i + 1];
	m->n /= 2;
	m->step *= 2;
}

/*
 * Runs of every length, at every fold state, against the model: whole
 * points written in bulk, the open point, folds in the middle of a run,
 * odd maxima, values that clean to 0. 200 random runs per maximum.
 */
static void test_series_push_n_matches_the_model(void **state)
{
	static const size_t maxes[] = { 2, 3, 6, 64, 1000, 2048 };
	static struct model m;
	uint64_t seed = 42, len, j;
	double v[BM_DIM__MAX];
	struct bm_series s;
	size_t x, i, k;
	int d;

	(void)state;
	for (x = 0; x < sizeof(maxes) / sizeof(maxes[0]); x++) {
		memset(&m, 0, sizeof(m));
		m.max = maxes[x];
		m.step = 1;
		memset(&s, 0, sizeof(s));
		s.window_ns = W_NS;
		s.max = maxes[x];
		for (i = 0; i < 200; i++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			len = (seed >> 33) % (i % 7 == 0 ? 20000 : 40);
			for (d = 0; d < BM_DIM__MAX; d++)
				v[d] = (double)((seed >> (8 * (d % 8))) & 0xff) - 32;	/* some < 0: clean to 0 */
			if (i % 11 == 0)
				v[BM_DIM_CPU] = NAN;
			assert_int_equal(bm_series_push_n(&s, v, len), 0);
			for (j = 0; j < len; j++)
				model_push(&m, v);
			assert_int_equal(s.n, m.n);
			assert_int_equal(bm_series_step(&s), m.step);
			assert_int_equal(s.part_n, m.part_n);
			for (d = 0; d < BM_DIM__MAX; d++)
				for (k = 0; k < m.n; k++)
					if (bm_series_at(&s, d, k) != m.v[d][k])
						fail_msg("max %zu, run %zu (%llu windows): point %zu of dimension %d is %g, "
							 "not %g", maxes[x], i, (unsigned long long)len, k, d,
							 (double)bm_series_at(&s, d, k), (double)m.v[d][k]);
		}
		assert_true(m.step > 1);
		bm_series_free(&s);
	}
}

static void test_series_svg_bursts_render(void **state)
{
	struct bm_series s = { .window_ns = W_NS };
	struct bm_timeline t = { .title = "demo: bursty", .s = &s };
	static const char *const dims[] = { "cpu", "mem", "pids", "net", "runq", "ior", "iow", "iops",
					    "dirty" };
	const char *at, *prev;
	char key[32];
	struct out o;
	size_t i;

	for (i = 0; i < 500; i++) {
		bool burst = i % 100 < 5;

		push(&s, burst ? 3.5 : 0.2, 200 * MIB, burst ? 9 : 1, burst ? 30 * MIB : 0,
		     burst ? 12 : 0.1);
	}
	render(&t, &o);
	judge(&o);
	/* one path per panel, the panels in reading order, nothing else drawn as a path */
	for (prev = o.text, i = 0; i < BM_DIM__MAX; prev = at, i++) {
		snprintf(key, sizeof(key), "<path id=\"data-%s\"", dims[i]);
		at = strstr(o.text, key);
		assert_true(at && at > prev);
	}
	for (at = o.text, i = 0; (at = strstr(at, "<path")); at++, i++)
		;
	assert_int_equal(i, BM_DIM__MAX);
	assert_non_null(strstr(o.text, ">time (s)<"));
	assert_null(strstr(o.text, "ceiling"));
	done(&o);
	bm_series_free(&s);
}

static void test_series_svg_ramp_meets_its_ceiling(void **state)
{
	struct bm_series s = { .window_ns = W_NS };
	struct bm_timeline_mark marks[] = { { 3000, "kill (memory_ceiling)" } };
	struct bm_timeline t = { .title = "ramp", .s = &s, .marks = marks, .n_marks = 1 };
	struct path_info p;
	struct out o;
	size_t i;

	t.ceiling[BM_DIM_MEM] = GIB;
	for (i = 0; i <= 300; i++)
		push(&s, 1, GIB * i / 300, 1, 0, 0);
	render(&t, &o);
	judge(&o);
	assert_non_null(strstr(o.text, ">ceiling 1G<"));
	assert_non_null(strstr(o.text, "stroke-dasharray"));
	/* round binary ticks: 0, 512M, 1G, 1.5G */
	assert_non_null(strstr(o.text, ">512M<"));
	assert_non_null(strstr(o.text, ">1.5G<"));
	/* the ramp's top is drawn on the ceiling line */
	path_of(o.text, "mem", &p);
	assert_float_equal(p.ymin, attr_on_line(o.text, "stroke-dasharray", "y1"), 0.11);
	done(&o);
	bm_series_free(&s);
}

static void test_series_svg_keeps_one_window_spike_in_20000(void **state)
{
	struct bm_series s = { .window_ns = W_NS };
	struct bm_timeline t = { .title = "long", .s = &s };
	struct path_info p;
	struct out o;
	size_t i;

	for (i = 0; i < 20000; i++)
		push(&s, i == 12345 ? 8 : 1, MIB, 1, 0, 0);
	render(&t, &o);
	judge(&o);
	path_of(o.text, "cpu", &p);
	/* drawn at its value (an average over its column would be ~1.3), not smoothed away */
	assert_float_equal((p.base - p.ymin) / (p.base - p.yfirst), 8.0, 0.2);
	assert_true(p.ymin_x1 > p.ymin_x0);
	assert_float_equal((p.ymin_x0 - p.x0) / (p.x1 - p.x0), 12345.0 / 20000, 2.0 / 896);
	done(&o);
	bm_series_free(&s);
}

static void test_series_svg_downsampled_path_is_bounded(void **state)
{
	struct bm_series s = { .window_ns = W_NS };
	struct bm_timeline t = { .title = "noisy", .s = &s };
	struct path_info p;
	struct out o;
	size_t i;

	for (i = 0; i < 20000; i++)
		push(&s, (double)(i * 7919 % 1000) / 100, MIB * (i % 13), (double)(i % 5), 0, 0);
	render(&t, &o);
	judge(&o);
	path_of(o.text, "cpu", &p);
	assert_true(p.cmds <= 2 * 1000 + 3);	/* per pixel column, not per window */
	assert_true(strlen(o.text) < 200000);
	done(&o);
	bm_series_free(&s);
}

static void test_series_svg_empty_says_no_windows(void **state)
{
	struct bm_series s = { .window_ns = W_NS };
	struct bm_timeline_mark m = { 10, "kill" };
	struct bm_timeline t = { .title = "nothing ran", .s = &s, .marks = &m, .n_marks = 1 };
	struct out o;

	render(&t, &o);
	judge(&o);
	assert_non_null(strstr(o.text, ">no windows<"));
	assert_null(strstr(o.text, "<path"));
	done(&o);
	t.s = NULL;
	t.title = NULL;
	render(&t, &o);
	judge(&o);
	assert_non_null(strstr(o.text, ">no windows<"));
	done(&o);
}

static void test_series_svg_escapes_hostile_text(void **state)
{
	struct bm_series s = { .window_ns = W_NS };
	struct bm_timeline_mark marks[] = {
		{ 50, "a]]>b <kill> & \"x\" 'y'" },
		{ 150, "bad \xff\xc0\x80 utf8 \x01 ctl \xed\xa0\x80 surrogate" },
		{ 250, NULL },
	};
	struct bm_timeline t = {
		.title = "<script>&\"'</script> \xe2\x9c\x93",
		.s = &s, .marks = marks, .n_marks = 3,
	};
	struct out o;
	size_t i;

	for (i = 0; i < 30; i++)
		push(&s, 1, MIB, 1, 0, 0);
	render(&t, &o);
	judge(&o);
	assert_null(strstr(o.text, "<script"));
	assert_null(strstr(o.text, "]]>"));
	assert_null(strstr(o.text, "\x01"));
	assert_null(strstr(o.text, "\xff"));
	assert_non_null(strstr(o.text,
			       "&lt;script&gt;&amp;&quot;&apos;&lt;/script&gt; \xe2\x9c\x93"));
	assert_non_null(strstr(o.text, "a]]&gt;b &lt;kill&gt; &amp; &quot;x&quot; &apos;y&apos;"));
	assert_non_null(strstr(o.text, "bad \xef\xbf\xbd"));
	done(&o);
	bm_series_free(&s);
}

static void test_series_svg_nonfinite_values_draw_as_zero(void **state)
{
	struct bm_series s = { .window_ns = W_NS };
	struct bm_timeline_mark m = { NAN, "nowhen" };
	struct bm_timeline t = { .title = "t", .s = &s, .marks = &m, .n_marks = 1 };
	struct out o;
	int d;

	for (d = 0; d < 40; d++)
		push(&s, 1, MIB, 1, MIB, 1);
	/* as a caller filling the arrays by hand might */
	for (d = 0; d < BM_DIM__MAX; d++) {
		s.v[d][3] = NAN;
		s.v[d][4] = INFINITY;
		s.v[d][5] = -INFINITY;
		s.v[d][6] = -5;
	}
	t.ceiling[BM_DIM_CPU] = NAN;
	t.ceiling[BM_DIM_MEM] = -1;
	t.ceiling[BM_DIM_PIDS] = INFINITY;
	render(&t, &o);
	judge(&o);
	assert_null(strcasestr(o.text, "nan"));
	assert_null(strcasestr(o.text, "inf"));
	assert_null(strstr(o.text, "ceiling"));
	done(&o);
	bm_series_free(&s);
}

static void test_series_svg_staggers_close_labels(void **state)
{
	static const char *const lab[] = {
		"freeze (memory_ceiling)", "cancel (memory_ceiling)", "kill (memory_ceiling)",
		"late action near the right edge",
	};
	struct bm_timeline_mark marks[] = { { 1010, lab[2] }, { 1000, lab[0] }, { 1005, lab[1] },
					  { 1990, lab[3] } };
	struct bm_series s = { .window_ns = W_NS };
	struct bm_timeline t = { .title = "actions", .s = &s, .marks = marks, .n_marks = 4 };
	double y[3];
	struct out o;
	int i;

	for (i = 0; i < 200; i++)
		push(&s, 1, MIB, 1, 0, 0);
	render(&t, &o);
	judge(&o);
	for (i = 0; i < 3; i++)
		y[i] = attr_on_line(o.text, lab[i], "y");
	assert_true(y[0] != y[1] && y[1] != y[2] && y[0] != y[2]);
	/* a label that would run off the right edge ends at its line instead */
	assert_true(attr_on_line(o.text, lab[3], "x") < 1000);
	assert_non_null(strstr(strstr(o.text, lab[3]) - 120, "text-anchor=\"end\""));
	done(&o);
	bm_series_free(&s);
}

/* Every write fails as on a full disk: /dev/full's error, on any machine. */
static ssize_t full_write(void *cookie, const char *buf, size_t len)
{
	errno = ENOSPC;
	return -1;
}

static void test_series_svg_reports_errors(void **state)
{
	struct bm_series s = { .window_ns = W_NS };
	struct bm_timeline t = { .title = "full", .s = &s };
	FILE *f;
	int i;

	assert_int_equal(bm_timeline_svg(NULL, &t), -EINVAL);
	assert_int_equal(bm_timeline_svg(stdout, NULL), -EINVAL);
	f = fopencookie(NULL, "w", (cookie_io_functions_t){ .write = full_write });
	assert_non_null(f);
	for (i = 0; i < 100; i++)
		push(&s, 1, MIB, 1, 0, 0);
	assert_int_equal(bm_timeline_svg(f, &t), -ENOSPC);
	fclose(f);
	bm_series_free(&s);
}

/* A deterministic jitter in [0, 1). */
static double jitter(unsigned int *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return (double)((*seed >> 16) & 0x7fff) / 32768.0;
}

/*
 * What the picture is for: a build that bursts CPU (and waits for it) in
 * its compile phases, then a step whose memory ramps into the ceiling, is
 * frozen, cancelled, and killed when it does not stop.
 */
static void example_series(struct bm_series *s)
{
	unsigned int seed = 42;
	double mem = 180 * MIB;
	size_t i;

	for (i = 0; i < 560; i++) {
		bool burst = (i % 120) < 35 && i < 420, frozen = i >= 505, alive = i < 540;
		double cpu = burst ? 3.2 + 0.7 * jitter(&seed) : 0.25 + 0.3 * jitter(&seed);
		double net = (i % 50) < 3 ? 42 * MIB * (1 + jitter(&seed)) : 0;

		/* the test step leaks until the ceiling freezes it */
		if (i >= 300 && !frozen)
			mem += 2.3 * MIB + 1.2 * MIB * jitter(&seed);
		if (mem > 768 * MIB)
			mem = 768 * MIB;
		push(s, alive && !frozen ? cpu : 0, alive ? mem : 0, alive ? (burst ? 9 : 2) : 0,
		     frozen ? 0 : net, burst ? 4 + 14 * jitter(&seed) : 0.2 * jitter(&seed));
	}
}

static void test_series_svg_realistic_example(void **state)
{
	struct bm_timeline_mark marks[] = {
		{ 5050, "freeze (memory_ceiling)" },
		{ 5200, "cancel (memory_ceiling)" },
		{ 5400, "kill (memory_ceiling)" },
	};
	struct bm_series s = { .window_ns = W_NS };
	struct bm_timeline t = {
		.title = "effect 7f3a: make -j4 test (intent: build and run unit tests)",
		.s = &s, .marks = marks, .n_marks = 3,
	};
	const char *keep = getenv("BM_TIMELINE_PNG");
	struct out o;

	example_series(&s);
	t.ceiling[BM_DIM_MEM] = 768 * MIB;
	t.ceiling[BM_DIM_CPU] = 4;
	render(&t, &o);
	judge(&o);
	assert_non_null(strstr(o.text, ">ceiling 768M<"));
	if (keep && *keep)
		assert_int_equal(run("rsvg-convert -o '%s' '%s'", keep, o.svg), 0);
	done(&o);
	bm_series_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_series_push_grows_geometrically_and_cleans),
		cmocka_unit_test(test_series_bounded_keeps_bursts_in_fixed_memory),
		cmocka_unit_test(test_series_push_n_is_n_pushes),
		cmocka_unit_test(test_series_push_n_matches_the_model),
		cmocka_unit_test(test_series_idle_stretch_is_one_run),
		cmocka_unit_test(test_series_svg_bursts_render),
		cmocka_unit_test(test_series_svg_ramp_meets_its_ceiling),
		cmocka_unit_test(test_series_svg_keeps_one_window_spike_in_20000),
		cmocka_unit_test(test_series_svg_downsampled_path_is_bounded),
		cmocka_unit_test(test_series_svg_empty_says_no_windows),
		cmocka_unit_test(test_series_svg_escapes_hostile_text),
		cmocka_unit_test(test_series_svg_nonfinite_values_draw_as_zero),
		cmocka_unit_test(test_series_svg_staggers_close_labels),
		cmocka_unit_test(test_series_svg_reports_errors),
		cmocka_unit_test(test_series_svg_realistic_example),
	};

	return cmocka_run_group_tests_name("series", tests, NULL, NULL);
}

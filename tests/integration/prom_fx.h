/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A private Prometheus as a fixture: a child of the test on a free
 * loopback port, its config, TSDB and log in a directory of the test's,
 * scraping one target every SCRAPE_S; and PromQL over its HTTP API
 * (instant queries, one value, polling for one). HTTP/1.0 GETs to
 * loopback, enough for Prometheus and for the agent's /metrics. Includes
 * agent_fx.h (spawn_logged, assert_alive); everything is static.
 */
#ifndef BM_PROM_FX_H
#define BM_PROM_FX_H

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "agent_fx.h"

#define HTTP_TIMEOUT_MS 10000
#define READY_TIMEOUT_MS 30000
/* Scrape and rule evaluation every second: a test sees its effects within seconds. */
#define SCRAPE_S 1

struct prom_fx {
	pid_t pid;		/* 0 when no Prometheus of ours runs */
	int port;		/* its web listener on 127.0.0.1 */
	char yml[PATH_MAX + 16], log[PATH_MAX + 16], data[PATH_MAX + 16];
};

static struct prom_fx prom;
static const char *prometheus;	/* the binary: $BM_PROMETHEUS or /usr/bin/prometheus */

/* The fixture's files in dir (which exists): prometheus.yml, prometheus.log, data/. */
static void prom_init(const char *dir)
{
	memset(&prom, 0, sizeof(prom));
	snprintf(prom.yml, sizeof(prom.yml), "%s/prometheus.yml", dir);
	snprintf(prom.log, sizeof(prom.log), "%s/prometheus.log", dir);
	snprintf(prom.data, sizeof(prom.data), "%s/data", dir);
}

/* text into path, created or truncated; any error fails the test. */
static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	assert_true(fputs(text, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/* Two distinct free loopback ports: bound to port 0 together, then released. */
static void free_ports(int *a, int *b)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd[2], i, *port[2] = { a, b };

	for (i = 0; i < 2; i++) {
		fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		assert_true(fd[i] >= 0);
		sa.sin_port = 0;
		assert_int_equal(bind(fd[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
		len = sizeof(sa);
		assert_int_equal(getsockname(fd[i], (struct sockaddr *)&sa, &len), 0);
		*port[i] = ntohs(sa.sin_port);
	}
	close(fd[0]);
	close(fd[1]);
}

/*
 * GET http://127.0.0.1:port/path as HTTP/1.0 (the whole body, then the
 * server closes: no chunks). Returns the status and the body in *body
 * (malloc'd; NULL on error), or -errno. ctype, if given: the Content-Type.
 */
static int http_get(int port, const char *path, const char *accept, char **body, char *ctype, size_t ctlen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint64_t deadline = now_ns() + HTTP_TIMEOUT_MS * 1000000ULL;
	struct pollfd pfd = { .events = POLLIN };
	struct buf b = { 0 };
	char req[16384], *hdr_end, *p;
	int fd, status = -EPROTO, len;
	bool eof = false;
	ssize_t n;

	*body = NULL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		status = -errno;
		close(fd);
		return status;
	}
	len = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: 127.0.0.1:%d\r\n%s%s%sConnection: close\r\n\r\n",
		       path, port, accept ? "Accept: " : "", accept ? accept : "", accept ? "\r\n" : "");
	assert_true(len > 0 && len < (int)sizeof(req));
	for (p = req; p < req + len; p += n) {
		n = write(fd, p, req + len - p);
		if (n <= 0) {
			close(fd);
			return -EIO;
		}
	}
	fcntl(fd, F_SETFL, O_NONBLOCK);
	pfd.fd = fd;
	while (!eof && now_ns() < deadline) {
		poll(&pfd, 1, 50);
		buf_read(&b, fd, &eof);
	}
	close(fd);
	if (!eof) {
		free(b.p);
		return -ETIMEDOUT;
	}
	hdr_end = b.p ? strstr(b.p, "\r\n\r\n") : NULL;
	if (!hdr_end || sscanf(b.p, "HTTP/1.%*d %d", &status) != 1) {
		free(b.p);
		return -EPROTO;
	}
	*hdr_end = '\0';
	if (strcasestr(b.p, "\r\nTransfer-Encoding: chunked"))
		fail_msg("GET %s: a chunked answer to HTTP/1.0", path);
	if (ctype) {
		p = strcasestr(b.p, "\r\nContent-Type: ");
		snprintf(ctype, ctlen, "%.*s", p ? (int)strcspn(p + 16, "\r") : 0, p ? p + 16 : "");
	}
	*body = strdup(hdr_end + 4);
	free(b.p);
	assert_non_null(*body);
	return status;
}

static void urlenc(char *dst, size_t size, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s && o + 4 < size; s++) {
		unsigned char c = (unsigned char)*s;

		if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
			dst[o++] = (char)c;
		} else {
			dst[o++] = '%';
			dst[o++] = hex[c >> 4];
			dst[o++] = hex[c & 15];
		}
	}
	assert_true(!*s);	/* all of it fit */
	dst[o] = '\0';
}

/* GET an API path of our Prometheus; its JSON "data" (a new reference), failing unless "success". */
static json_t *prom_api(const char *path)
{
	json_t *root, *data;
	json_error_t jerr;
	char *body;
	int status = http_get(prom.port, path, NULL, &body, NULL, 0);

	if (status < 0)
		fail_msg("GET %s from Prometheus: %s", path, strerror(-status));
	root = json_loads(body, 0, &jerr);
	if (!root || strcmp(json_string_value(json_object_get(root, "status")) ?: "", "success"))
		fail_msg("GET %s: status %d: %s", path, status, body);
	free(body);
	data = json_incref(json_object_get(root, "data"));
	json_decref(root);
	return data;
}

/* An instant query's result array (a new reference). */
static json_t *query(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *query(const char *fmt, ...)
{
	char expr[4096], enc[3 * sizeof(expr) + 64], path[sizeof(enc) + 32];
	json_t *data, *res;
	va_list ap;

	va_start(ap, fmt);
	assert_true(vsnprintf(expr, sizeof(expr), fmt, ap) < (int)sizeof(expr));
	va_end(ap);
	urlenc(enc, sizeof(enc), expr);
	snprintf(path, sizeof(path), "/api/v1/query?query=%s", enc);
	data = prom_api(path);
	res = json_incref(json_object_get(data, "result"));
	json_decref(data);
	return res;
}

/* The value of a sample ("value": [time, "text"]). */
static double sample_value(json_t *s)
{
	const char *v = json_string_value(json_array_get(json_object_get(s, "value"), 1));

	if (!v)
		fail_msg("a sample without a value");
	return strtod(v, NULL);	/* "NaN", "+Inf" too */
}

/* The value of a query that is one sample; NAN when it is none (more is a failure). */
static double value(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static double value(const char *fmt, ...)
{
	char expr[4096];
	json_t *res;
	double v = NAN;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(expr, sizeof(expr), fmt, ap);
	va_end(ap);
	res = query("%s", expr);
	if (json_array_size(res) > 1)
		fail_msg("%s: %zu samples, want one", expr, json_array_size(res));
	if (json_array_size(res) == 1)
		v = sample_value(json_array_get(res, 0));
	json_decref(res);
	return v;
}

/*
 * Start Prometheus ($BM_PROMETHEUS) on prom.port, scraping 127.0.0.1:target
 * every SCRAPE_S with the rule file rules (absolute) loaded and exemplar
 * storage on. Returns once /-/ready answers 200; fails, with its log, if it
 * exits first or is not ready in READY_TIMEOUT_MS.
 */
static void prom_start(const char *rules, int target)
{
	char cfg[2 * PATH_MAX], flag[4][PATH_MAX + 64];
	char *argv[] = { (char *)prometheus, flag[0], flag[1], flag[2], flag[3], NULL };
	uint64_t t0 = now_ns();
	char *body = NULL;
	int t;

	snprintf(cfg, sizeof(cfg),
		 "global:\n  scrape_interval: %ds\n  scrape_timeout: %ds\n  evaluation_interval: %ds\n"
		 "rule_files:\n  - %s\n"
		 "scrape_configs:\n  - job_name: burstmeter\n    static_configs:\n"
		 "      - targets: ['127.0.0.1:%d']\n",
		 SCRAPE_S, SCRAPE_S, SCRAPE_S, rules, target);
	write_file(prom.yml, cfg);
	snprintf(flag[0], sizeof(flag[0]), "--config.file=%s", prom.yml);
	snprintf(flag[1], sizeof(flag[1]), "--storage.tsdb.path=%s", prom.data);
	snprintf(flag[2], sizeof(flag[2]), "--web.listen-address=127.0.0.1:%d", prom.port);
	/* exemplars from the OpenMetrics scrape: the effect ids of the peak buckets */
	snprintf(flag[3], sizeof(flag[3]), "--enable-feature=exemplar-storage");
	/* below the workloads: the CPU truths are theirs (we run at nice -20) */
	prom.pid = spawn_logged(prom.log, 10, argv);
	for (t = 0; t < READY_TIMEOUT_MS; t += 50) {
		int s = http_get(prom.port, "/-/ready", NULL, &body, NULL, 0);

		free(body);
		if (s == 200) {
			integ_note("Prometheus ready on 127.0.0.1:%d in %.2f s", prom.port,
				   (double)(now_ns() - t0) / 1e9);
			return;
		}
		assert_alive(&prom.pid, "prometheus", prom.log);
		usleep(50000);
	}
	dump_file("prometheus", prom.log);
	fail_msg("Prometheus was not ready in %d ms", READY_TIMEOUT_MS);
}

/* Poll until the query is one sample of at least `want`, or fail after timeout_ms. */
static double wait_value(double want, int timeout_ms, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static double wait_value(double want, int timeout_ms, const char *fmt, ...)
{
	char expr[4096];
	double v = NAN;
	va_list ap;
	int t;

	va_start(ap, fmt);
	vsnprintf(expr, sizeof(expr), fmt, ap);
	va_end(ap);
	for (t = 0; t < timeout_ms; t += 200) {
		v = value("%s", expr);
		if (v >= want)
			return v;
		usleep(200000);
	}
	fail_msg("%s = %g after %d ms, want >= %g", expr, v, timeout_ms, want);
	return v;
}

#endif /* BM_PROM_FX_H */

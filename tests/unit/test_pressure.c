// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/agent/tenant.c: the node's pressure as healthz and node_pressure
 * show it. The view reads the pressure afresh when the tick's look is
 * stale, and all it says must come from one read: a view once said
 * "room" of the new read (0 %) beside the avg10 of the old one (95 %),
 * because json_pack()'s arguments were the read and its fields at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "agent/tenant.h"

static char dir[] = "/tmp/bm-test-pressure-XXXXXX";

/* a failed assertion leaves the test at once: the files go here either way */
static int teardown(void **state)
{
	char p[256];

	(void)state;
	snprintf(p, sizeof(p), "%s/cpu.pressure", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/psi.tmp", dir);
	unlink(p);
	rmdir(dir);
	return 0;
}

static void write_psi(const char *path, const char *avg10)
{
	char tmp[256];
	FILE *f;

	/* as the harness test replaces it: a new file renamed over the old one */
	snprintf(tmp, sizeof(tmp), "%s/psi.tmp", dir);
	f = fopen(tmp, "w");
	assert_non_null(f);
	fprintf(f, "some avg10=%s avg60=%s avg300=%s total=1000\n"
		   "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", avg10, avg10, avg10);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(rename(tmp, path), 0);
}

static void check(struct bm_agent *a, bool over, double avg10)
{
	json_t *j = ag_pressure_json(a, false);

	assert_non_null(j);
	assert_int_equal(json_is_true(json_object_get(j, "over")), over);
	assert_int_equal(json_is_true(json_object_get(j, "room")), !over);
	assert_true(json_real_value(json_object_get(j, "cpu_some_avg10")) == avg10);
	json_decref(j);
}

static void test_pressure_view_is_one_read(void **state)
{
	char path[256], mem[256];
	struct bm_agent *a = calloc(1, sizeof(*a));
	int round;

	(void)state;
	assert_non_null(a);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/cpu.pressure", dir);
	snprintf(mem, sizeof(mem), "%s/meminfo", dir);
	a->pressure.cpu_fd = a->pressure.mem_fd = -1;
	a->cfg.admit_cpu_pressure = 50;
	a->cfg.admit_mem_available = 0;
	a->cfg.pressure_action = BM_PRESSURE_PAUSE;
	snprintf(a->cfg.admit_cpu_pressure_file, sizeof(a->cfg.admit_cpu_pressure_file), "%s", path);
	snprintf(a->cfg.admit_meminfo_file, sizeof(a->cfg.admit_meminfo_file), "%s", mem);

	write_psi(path, "95.00");
	check(a, true, 95);
	for (round = 0; round < 4; round++) {
		/* the pressure changes, and the tick's look goes stale: the view reads it */
		write_psi(path, round % 2 ? "95.00" : "0.00");
		a->pressure.read_ns = 1;
		check(a, round % 2 == 1, round % 2 ? 95 : 0);
	}
	if (a->pressure.cpu_fd >= 0)
		close(a->pressure.cpu_fd);
	free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_pressure_view_is_one_read, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * user/meter/btfscan.h: the loader's one pass over the kernel's raw BTF
 * must find what libbpf's own parse finds. Ground truth twice over: a BTF
 * built here with libbpf (every kind it writes), and this kernel's
 * /sys/kernel/btf/vmlinux compared name by name against btf__load_vmlinux_btf().
 * Bad input (cut short, not BTF, missing) is an error, never a guess.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <bpf/btf.h>

#include "meter/btfscan.h"

static char path[64];

static void write_file(const void *p, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static int setup(void **state)
{
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/bm-btfscan-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

/* A BTF with one type of each kind the scanner walks past; names are found by kind. */
static struct btf *built(void)
{
	struct btf *b = btf__new_empty();
	int i32, s, fp, var;

	assert_non_null(b);
	i32 = btf__add_int(b, "int", 4, BTF_INT_SIGNED);
	assert_true(btf__add_ptr(b, i32) > 0);
	assert_true(btf__add_array(b, i32, i32, 4) > 0);
	s = btf__add_struct(b, "bm_struct", 8);
	assert_true(s > 0);
	assert_int_equal(btf__add_field(b, "a", i32, 0, 0), 0);
	assert_int_equal(btf__add_field(b, "b", i32, 32, 0), 0);
	assert_true(btf__add_union(b, "bm_union", 4) > 0);
	assert_true(btf__add_enum(b, "bm_enum", 4) > 0);
	assert_int_equal(btf__add_enum_value(b, "BM_A", 1), 0);
	assert_true(btf__add_fwd(b, "bm_fwd", BTF_FWD_STRUCT) > 0);
	assert_true(btf__add_typedef(b, "btf_trace_bm_event", i32) > 0);
	assert_true(btf__add_volatile(b, i32) > 0);
	assert_true(btf__add_const(b, i32) > 0);
	assert_true(btf__add_restrict(b, i32 + 1) > 0);
	fp = btf__add_func_proto(b, i32);
	assert_true(fp > 0);
	assert_int_equal(btf__add_func_param(b, "x", i32), 0);
	assert_int_equal(btf__add_func_param(b, "y", i32), 0);
	assert_true(btf__add_func(b, "bpf_cgroup_from_id", BTF_FUNC_GLOBAL, fp) > 0);
	var = btf__add_var(b, "bm_var", BTF_VAR_GLOBAL_ALLOCATED, i32);
	assert_true(var > 0);
	assert_true(btf__add_datasec(b, ".data", 4) > 0);
	assert_int_equal(btf__add_datasec_var_info(b, var, 0, 4), 0);
	assert_true(btf__add_float(b, "double", 8) > 0);
	assert_true(btf__add_decl_tag(b, "bm_tag", s, 0) > 0);
	assert_true(btf__add_type_tag(b, "bm_ttag", i32) > 0);
	assert_true(btf__add_enum64(b, "bm_enum64", 8, false) > 0);
	assert_int_equal(btf__add_enum64_value(b, "BM_B", 1ULL << 40), 0);
	/* after every kind: a name found only if the walk kept its place to the end */
	assert_true(btf__add_typedef(b, "btf_trace_bm_last", i32) > 0);
	return b;
}

static void test_btfscan_built(void **state)
{
	struct bm_btf_want w[] = {
		{ "btf_trace_bm_event", BTF_KIND_TYPEDEF, false },
		{ "btf_trace_bm_last", BTF_KIND_TYPEDEF, false },
		{ "bpf_cgroup_from_id", BTF_KIND_FUNC, false },
		{ "bm_struct", BTF_KIND_STRUCT, false },
		{ "bm_enum64", BTF_KIND_ENUM64, false },
		/* the right name of another kind is not found */
		{ "bm_struct", BTF_KIND_TYPEDEF, false },
		{ "btf_trace_bm_missing", BTF_KIND_TYPEDEF, false },
	};
	bool expect[] = { true, true, true, true, true, false, false };
	struct btf *b = built();
	const void *raw;
	uint32_t len;
	size_t i;

	(void)state;
	raw = btf__raw_data(b, &len);
	assert_non_null(raw);
	write_file(raw, len);
	assert_int_equal(bm_btf_scan(path, w, 7), 0);
	for (i = 0; i < 7; i++)
		if (w[i].found != expect[i])
			fail_msg("%s (kind %d): found %d, expected %d", w[i].name, w[i].kind,
				 w[i].found, expect[i]);

	/* cut short, inside the types: an error, not a partial answer */
	write_file(raw, len - 40);
	assert_int_equal(bm_btf_scan(path, w, 7), -EINVAL);
	btf__free(b);
}

static void test_btfscan_bad_input(void **state)
{
	struct bm_btf_want w[] = { { "int", BTF_KIND_INT, true } };

	(void)state;
	write_file("not BTF at all, just text\n", 26);
	assert_int_equal(bm_btf_scan(path, w, 1), -EINVAL);
	/* found is reset whatever happens */
	assert_false(w[0].found);
	write_file("", 0);
	assert_int_equal(bm_btf_scan(path, w, 1), -EINVAL);
	assert_int_equal(bm_btf_scan("/nonexistent/btf", w, 1), -ENOENT);
}

/* This kernel's BTF: every tracepoint typedef and kfunc the loader may ask for, as libbpf sees it. */
static void test_btfscan_vmlinux(void **state)
{
	static const char *const names[] = {
		"btf_trace_sched_switch", "btf_trace_sched_process_fork",
		"btf_trace_sched_process_exit", "btf_trace_block_bio_queue",
		"btf_trace_sock_send_length", "btf_trace_mark_victim",
		"btf_trace_bm_no_such_tracepoint",
	};
	static const char *const funcs[] = { "bpf_cgroup_from_id", "bpf_cgroup_release",
					     "bpf_rdonly_cast", "bm_no_such_kfunc" };
	struct bm_btf_want w[16];
	struct btf *v;
	int n = 0, i, found = 0;

	(void)state;
	for (i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		w[n++] = (struct bm_btf_want){ names[i], BTF_KIND_TYPEDEF, false };
	for (i = 0; i < (int)(sizeof(funcs) / sizeof(funcs[0])); i++)
		w[n++] = (struct bm_btf_want){ funcs[i], BTF_KIND_FUNC, false };
	assert_int_equal(bm_btf_scan("/sys/kernel/btf/vmlinux", w, n), 0);
	v = btf__load_vmlinux_btf();
	assert_non_null(v);
	for (i = 0; i < n; i++) {
		bool has = btf__find_by_name_kind(v, w[i].name, w[i].kind) > 0;

		if (has != w[i].found)
			fail_msg("%s: libbpf %s it, the scan %s", w[i].name, has ? "finds" : "misses",
				 w[i].found ? "finds" : "misses");
		found += has;
	}
	btf__free(v);
	/* a kernel the meter runs on has its scheduler's tracepoints */
	assert_true(w[0].found && w[1].found);
	assert_false(w[6].found || w[n - 1].found);
	print_message("# %d of %d names found in this kernel's BTF, as libbpf finds them\n", found, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_btfscan_built, setup, teardown),
		cmocka_unit_test_setup_teardown(test_btfscan_bad_input, setup, teardown),
		cmocka_unit_test(test_btfscan_vmlinux),
	};

	return cmocka_run_group_tests_name("btfscan", tests, NULL, NULL);
}

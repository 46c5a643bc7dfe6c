// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target for policy files (user/effect/policy_yaml.c through
 * base/yamldoc.c and libcyaml). The input is the YAML text, loaded for a
 * tenant and tool that the seeds' rules name and for ones that match no
 * rule. A policy that loads passes bm_policy_check() and loads the same
 * again; one that does not is -EINVAL with one line "p.yaml:LINE:COL: what".
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "effect/policy.h"
#include "effect/policy_yaml.h"
#include "fuzz.h"

static void check_error(const char *err)
{
	unsigned int line, col;
	int n = 0;

	CHECK(sscanf(err, "p.yaml:%u:%u: %n", &line, &col, &n) == 2 && n && err[n],
	      "error without NAME:LINE:COL: what: '%s'", err);
	CHECK(fuzz_one_line(err), "error of more than one line, or with control characters: '%s'",
	      err);
}

static void load(const char *text, size_t len, const char *tenant, const char *tool)
{
	struct bm_policy p, again;
	const char *why = NULL;
	char err[512] = "";
	int ret;

	ret = bm_policy_load(text, len, "p.yaml", tenant, tool, &p, err, sizeof(err));
	if (ret) {
		CHECK(ret == -EINVAL, "error %d", ret);
		check_error(err);
		return;
	}
	CHECK(!bm_policy_check(&p, &why), "loaded a policy that fails its check: %s", why);
	ret = bm_policy_load(text, len, "p.yaml", tenant, tool, &again, err, sizeof(err));
	CHECK(!ret && !memcmp(&p, &again, sizeof(p)), "a second load differs (%d)", ret);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a copy of exactly size bytes: ASan sees any read past the text */
	char *text = malloc(size ? size : 1);

	CHECK(text, "out of memory");
	memcpy(text, data, size);
	load(text, size, "acme", "pytest");
	load(text, size, "nobody", NULL);
	free(text);
	return 0;
}

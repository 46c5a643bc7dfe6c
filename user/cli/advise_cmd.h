/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* `burstmeter advise`: the command, and its report (cli/advise.h) for people. */
#ifndef BM_ADVISE_CMD_H
#define BM_ADVISE_CMD_H

#include <jansson.h>
#include <stdio.h>

/* The report for people: one block per tool kind. */
void bm_advise_print(FILE *f, const json_t *report);

/* burstmeter advise [--tool KIND] [--tenant T] [--state-dir DIR] [--json] */
int bm_cmd_advise(int argc, char **argv);

#endif /* BM_ADVISE_CMD_H */

#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# run_tests.sh JOBS: a stand-in test suite, as `pytest -n JOBS` or `make -j JOBS check` would
# run one: 24 tests of 0.2 s each, JOBS at a time; every test is a shell and its sleep (two
# tasks). Prints "24 passed" when all have.
set -eu
jobs=${1:?usage: run_tests.sh JOBS}
seq 1 24 | xargs -P "$jobs" -I{} sh -c 'sleep 0.2; echo "test_{} passed"'
echo "24 passed"

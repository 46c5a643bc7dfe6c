#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The worked example against a real agent: the first call stops at pids_ceiling with
advice to reduce parallelism, the loop reruns with fewer jobs, and that completes. TAP."""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "harness"))
sys.path.insert(0, HERE)
from harness import BM_BIN, Agent, bmc, run_tap  # noqa: E402
import agent_loop  # noqa: E402

AGENT = None


class AgentLoop(unittest.TestCase):
    def test_loop(self):
        """example: pids_ceiling, then the rerun with less parallelism completes"""
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "transcript.md")
            with bmc.Mcp([BM_BIN, "mcp", "--socket", AGENT.sock]) as mcp:
                results = agent_loop.run_loop(mcp, path)
            with open(path) as f:
                transcript = f.read()
        self.assertEqual([r.structured["reason"] for r in results], ["pids_ceiling", "completed"])
        first, second = results
        self.assertTrue(first.is_error)
        self.assertRegex(first.text, r"^killed: pids_ceiling at 12 tasks after \d+\.\d+ s; retry with less parallelism")
        self.assertEqual(first.structured["outcome"]["limits"]["pids"], 12)
        self.assertFalse(first.structured["retry"]["eligible"])
        self.assertFalse(second.is_error)
        self.assertRegex(second.text, r"^completed in \d+\.\d+ s \(exit 0\)")
        self.assertEqual(second.structured["stdout"].count(" passed\n"), 25)    # 24 tests and the total
        self.assertLessEqual(second.structured["outcome"]["peak"]["pids"], 12)
        self.assertIn("./run_tests.sh 4", transcript)
        self.assertIn("The suite passes: 24 passed.", transcript)


if __name__ == "__main__":
    AGENT = Agent("bm-example")
    try:
        rc = run_tap(AgentLoop)
    finally:
        AGENT.stop()
    sys.exit(rc)

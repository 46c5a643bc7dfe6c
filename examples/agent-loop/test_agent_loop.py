#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The worked example against a real agent: the first call stops at pids_ceiling with
advice to reduce parallelism, the loop reruns with fewer jobs, and that completes. TAP."""
import difflib
import json
import os
import re
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "harness"))
sys.path.insert(0, HERE)
from harness import BM_BIN, Agent, bmc, run_tap  # noqa: E402
import agent_loop  # noqa: E402

AGENT = None
TRANSCRIPT = os.path.join(HERE, "transcript.md")
# what differs from run to run, or from node to node, in the structured result: left out
MACHINE = ("cgroup", "enforcement", "meter", "started_at")


def masked(text):
    """Effect ids (mcp-<hex time>-<pid>-<n>) as ID, numbers (times, figures) as N."""
    return re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "N", re.sub(r"\bmcp-[0-9a-f]+-\d+-\d+", "ID", text))


def shape(v, key=""):
    """A structured result as its keys and its words: numbers N, what is the node's own left out."""
    if isinstance(v, dict):
        return {k: shape(x, k) for k, x in v.items() if k not in MACHINE}
    if isinstance(v, list):
        return [shape(x) for x in v]
    if isinstance(v, str):
        return masked(v)
    if isinstance(v, bool) or v is None:
        return v
    return "N"


def normalize(md):
    """The transcript as lines to compare: progress (as many lines as it took) and stderr out, the rest
    masked."""
    md = re.sub(r"\n\*\*Progress\*\* \(shown while it ran\):\n\n```\n.*?\n```\n", "", md, flags=re.S)
    # what a shell killed mid-fork says, if anything ("sh: 1: Cannot fork", cut short): out too
    md = re.sub(r"```\nstderr \(\d+ bytes[^)]*\):\n.*?\n```\n", "", md, flags=re.S)
    lines = []
    for line in md.splitlines():
        if line.startswith('{"effect_id"'):
            lines.append(json.dumps(shape(json.loads(line)), sort_keys=True))
        else:
            lines.append(masked(line))    # the suite's "test_N passed" in any order, too
    return lines


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
        # the advice in the tool's own terms: the model calls run_command, it has no --pids
        self.assertEqual(first.structured["retry"]["advice"],
                         "it tried to run more than 12 tasks; raise limits.pids or reduce parallelism")
        self.assertNotIn("--pids", transcript)
        # the committed transcript is what the loop records now, but for ids, times and figures
        if os.environ.get("BM_UPDATE_TRANSCRIPT") == "1":
            with open(TRANSCRIPT, "w") as f:
                f.write(transcript)
        with open(TRANSCRIPT) as f:
            committed = f.read()
        diff = "\n".join(difflib.unified_diff(normalize(committed), normalize(transcript), "transcript.md",
                                              "this run", lineterm="", n=1))
        self.assertEqual(diff, "", "examples/agent-loop/transcript.md is stale (BM_UPDATE_TRANSCRIPT=1 "
                         "rewrites it):\n" + diff)


if __name__ == "__main__":
    AGENT = Agent("bm-example")
    try:
        rc = run_tap(AgentLoop)
    finally:
        AGENT.stop()
    sys.exit(rc)

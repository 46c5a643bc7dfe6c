#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A scripted agent loop whose tool calls go through burstmeter (no model needed).

The harness gives the "model" one tool server, `burstmeter mcp`, and a fixed budget per call
(the operator's: at most 12 tasks, 256 MiB, 60 s). The model's task is to run a project's
test suite. Its first plan runs 16 jobs at once; burstmeter stops that call at the task
ceiling and says so in the first line of the result, with what to change. The model reads
it, cannot raise the budget, so it reruns with a quarter of the parallelism, which fits.

    python3 agent_loop.py --burstmeter build/burstmeter [--socket SOCK] [--transcript FILE]

The transcript (markdown) shows every call and result as the model sees it.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "clients", "python"))
from burstmeter_client import Mcp  # noqa: E402

TASK = "Run the project's test suite and say whether it passes."
BUDGET = {"pids": 12, "memory": "256Mi"}    # the operator's, per call: the model cannot change it
TIMEOUT_S = 60


class ScriptedModel:
    """Stands in for the model: plans the next tool call from the last result, as one would."""

    def __init__(self):
        self.jobs = 16      # "use every core and then some": the first plan of many an agent

    def first_call(self):
        return self.call("run the 24 tests, 16 at a time")

    def call(self, intent):
        return {"command": f"./run_tests.sh {self.jobs}", "cwd": HERE, "limits": dict(BUDGET),
                "timeout_seconds": TIMEOUT_S, "intent": intent, "expectations": {"wall_seconds": 5}}

    def next(self, result):
        """The next call, or None when done; and what the model says about it."""
        sc = result.structured or {}
        reason = sc.get("reason")
        if reason == "completed":
            return None, "The suite passes: " + sc.get("stdout", "").strip().splitlines()[-1] + "."
        if reason == "pids_ceiling" and "less parallelism" in result.text:
            # the budget is fixed (12 tasks); 2 tasks a job plus the runner: a quarter of the jobs fits
            self.jobs = max(1, self.jobs // 4)
            return self.call(f"rerun with {self.jobs} jobs: 16 hit the task ceiling"), (
                f"The call was stopped at the task ceiling of {sc['outcome']['limits']['pids']}, and the "
                f"advice is less parallelism; the budget is not mine to raise, so I rerun with {self.jobs} jobs.")
        if sc.get("state") == "refused" and sc.get("refused", {}).get("retry_after_s"):
            wait = sc["refused"]["retry_after_s"]
            time.sleep(wait)
            return self.call("the same, after the agent's back-off"), f"Refused for {wait} s; I wait and retry."
        return None, f"I stop here: {result.text}"


def block(text, lang=""):
    return f"```{lang}\n{text.rstrip()}\n```\n"


def run_loop(mcp, transcript=None, max_turns=4):
    """Drive the scripted model through the tool calls; returns the results, in order."""
    model, out, results = ScriptedModel(), [], []
    tools = mcp.tools()
    out.append(f"# Agent loop: a tool call stopped at its task ceiling, and the retry\n\n"
               f"Recorded by `examples/agent-loop/agent_loop.py` against a real agent "
               f"(`burstmeter mcp`, MCP {mcp.server['supportedVersions'][0]}). The model is a script; "
               f"everything below the task is what it was shown and what it called.\n\n"
               f"**Task:** {TASK}\n\n**Tools offered:** " + ", ".join(f"`{t['name']}`" for t in tools) +
               f"\n\n**Budget per call (the operator's):** `limits: {json.dumps(BUDGET)}`, "
               f"`timeout_seconds: {TIMEOUT_S}`\n")
    args, said = model.first_call(), "I'll run the suite with 16 jobs to be quick."
    for turn in range(1, max_turns + 1):
        out.append(f"\n## Turn {turn}\n\n**Model:** {said}\n\n**Tool call** `run_command`:\n\n" +
                   block(json.dumps(args, indent=2).replace(HERE, "examples/agent-loop"), "json"))
        progress = []
        r = mcp.call("run_command", args, on_progress=lambda p: progress.append(p["message"]))
        results.append(r)
        if progress:
            out.append("\n**Progress** (shown while it ran):\n\n" + block("\n".join(progress)))
        out.append(f"\n**Tool result** (isError: {str(r.is_error).lower()}), the blocks in the order the "
                   f"model reads them:\n\n" + "".join(block(t) for t in r.texts))
        args, said = model.next(r)
        if args is None:
            out.append(f"\n## Answer\n\n**Model:** {said}\n")
            break
    if transcript:
        with open(transcript, "w") as f:
            f.write("".join(out))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--burstmeter", default="burstmeter", help="the burstmeter binary")
    ap.add_argument("--socket", help="the agent's socket (default: burstmeter mcp's)")
    ap.add_argument("--transcript", help="write the transcript (markdown) here")
    a = ap.parse_args()
    argv = [a.burstmeter, "mcp"] + (["--socket", a.socket] if a.socket else [])
    with Mcp(argv, client_name="agent-loop example") as mcp:
        results = run_loop(mcp, a.transcript)
    for r in results:
        print(r.text)
    return 0 if results and results[-1].structured.get("reason") == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())

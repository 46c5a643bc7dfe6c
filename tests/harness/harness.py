# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What the Python harness tests share: the node agent as a fixture (the real binary on a
private socket, state directory and bpffs pin directory, stopped and checked gone at the
end, as tests/integration/agent_fx.h does it), and a TAP runner for unittest cases."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import unittest

BM_BIN = os.environ["BM_BIN"]
WORKLOADS = os.environ["BM_WORKLOADS"]
SRC = os.environ.get("BM_SRC", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.join(SRC, "clients", "python"))

import burstmeter_client as bmc  # noqa: E402


def wl(name):
    return os.path.join(WORKLOADS, name)


class Agent:
    def __init__(self, tag):
        self.dir = tempfile.mkdtemp(prefix=f"bm-{tag}.")
        self.sock = os.path.join(self.dir, "api.sock")
        self.pins = f"/sys/fs/bpf/{tag}-{os.getpid()}"
        self.log = os.path.join(self.dir, "agent.log")
        cfg = os.path.join(self.dir, "agent.yaml")
        # admission by the node's pressure is not under test: other work on the machine must not queue ours
        with open(cfg, "w") as f:
            f.write("admit_cpu_pressure: 100\nadmit_mem_available: 0\n")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([BM_BIN, "agent", "--config", cfg, "--socket", self.sock, "--state-dir",
                                          os.path.join(self.dir, "state"), "--pin-dir", self.pins,
                                          "--metrics", ""], stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        client = bmc.Client(self.sock, timeout=2)
        for _ in range(200):
            if self.proc.poll() is not None:
                raise RuntimeError(f"the agent exited {self.proc.returncode}:\n{self.text()}")
            try:
                client.health()
                return
            except bmc.AgentUnavailable:
                time.sleep(0.05)
        self.proc.kill()
        raise RuntimeError(f"the agent did not answer in 10 s:\n{self.text()}")

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def stop(self):
        """SIGTERM (SIGKILL after 10 s); it must exit 0 and remove its pins."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
        left = os.path.exists(self.pins)
        log = self.text()
        shutil.rmtree(self.dir, ignore_errors=True)
        if left:
            shutil.rmtree(self.pins, ignore_errors=True)
            raise RuntimeError(f"the agent left its pins at {self.pins}")
        if rc != 0:
            raise RuntimeError(f"the agent exited {rc}:\n{log}")


def run_tap(*cases):
    """Run the cases in order, one TAP line each; exit status 1 if any failed."""
    tests = [t for c in cases for t in unittest.defaultTestLoader.loadTestsFromTestCase(c)]
    failed = 0

    class Result(unittest.TestResult):
        def addFailure(self, test, err):
            super().addFailure(test, err)
            self.bad = err

        addError = addFailure

    for n, t in enumerate(tests, 1):
        r = Result()
        r.bad = None
        t.run(r)
        name = t.shortDescription() or t.id().split(".")[-1]
        if r.bad or r.errors or r.failures:
            failed += 1
            print(f"not ok {n} - {name}")
            for line in "".join(traceback.format_exception(*r.bad)).splitlines() if r.bad else []:
                print(f"  # {line}")
        elif r.skipped:
            print(f"ok {n} - {name} # SKIP {r.skipped[0][1]}")
        else:
            print(f"ok {n} - {name}")
        sys.stdout.flush()
    print(f"1..{len(tests)}")
    return 1 if failed else 0

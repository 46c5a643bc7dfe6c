#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""clients/python/burstmeter_client.py against a real agent: submit, wait, stream and cancel,
and each refusal as its typed error (400 with every field, 403, 404, 409, 429 with
Retry-After). TAP lines on stdout."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Agent, bmc, run_tap, wl  # noqa: E402

AGENT = None


def uid(what):
    uid.n = getattr(uid, "n", 0) + 1
    return f"py-{what}-{os.getpid()}-{uid.n}"


class PythonClient(unittest.TestCase):
    def setUp(self):
        self.c = bmc.Client(AGENT.sock)

    def test_health(self):
        """python: health"""
        h = self.c.health()
        self.assertEqual(h["status"], "ok")
        self.assertIsInstance(h["running"], int)

    def test_submit_wait(self):
        """python: submit and wait: a launched effect's typed outcome"""
        req = bmc.EffectRequest(id=uid("done"), argv=[wl("bm-memtouch"), "64", "300"], intent="touch 64 MiB",
                                sandbox=bmc.Sandbox(memory_limit="256Mi", timeout_seconds=30))
        e = self.c.submit(req)
        self.assertTrue(e.created)
        self.assertIn(e.state, ("running", "queued"))
        o = self.c.wait(req.id, timeout=30)
        self.assertEqual(o.termination.reason, "completed")
        self.assertEqual(o.exit_code, 0)
        self.assertEqual(o.limits.memory_bytes, 256 << 20)
        self.assertGreaterEqual(o.peak.memory_bytes, 64 << 20)
        self.assertLess(o.peak.memory_bytes, 128 << 20)
        self.assertTrue(o.retry.eligible)
        self.assertEqual(o.intent, "touch 64 MiB")
        # the same id again is no new effect
        self.assertFalse(self.c.submit(req).created)
        self.assertIn(req.id, [x.id for x in self.c.list(limit=50)])

    def test_intent_and_trace(self):
        """python: declared intent against observed, and the trace context in the command and the outcome"""
        tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        req = bmc.EffectRequest(id=uid("intent"), argv=["/bin/sh", "-c", f'test "$TRACEPARENT" = {tp}'],
                                expect={"memory_bytes": "1Mi", "wall_seconds": 30}, traceparent=tp)
        self.c.submit(req)
        o = self.c.wait(req.id, timeout=30)
        self.assertEqual(o.termination.reason, "completed")
        self.assertEqual(o.raw["trace"]["traceparent"], tp)
        self.assertEqual(o.raw["expect"]["declared"], {"memory_bytes": 1 << 20, "wall_seconds": 30.0})
        self.assertIn("memory_bytes", o.raw["expect"]["exceeded"])
        # the same, typed
        self.assertEqual(o.trace, bmc.Trace(tp))
        self.assertEqual(o.expect.declared, {"memory_bytes": 1 << 20, "wall_seconds": 30.0})
        self.assertEqual(o.expect.exceeded, ["memory_bytes"])
        self.assertGreater(o.expect.observed["memory_bytes"], 1 << 20)
        self.assertLess(o.expect.observed["wall_seconds"], 30)
        # none declared, none given: None, not an empty one
        plain = self.c.run(bmc.EffectRequest(id=uid("plain"), argv=["/bin/true"]), timeout=30)
        self.assertIsNone(plain.expect)
        self.assertIsNone(plain.trace)
        # above the request's own limit: refused, by field
        with self.assertRaises(bmc.InvalidRequest) as cm:
            self.c.submit(bmc.EffectRequest(id=uid("intent"), argv=["/bin/true"], expect={"pids": 9},
                                            sandbox=bmc.Sandbox(pids_limit=8)))
        self.assertEqual([f.field for f in cm.exception.fields], ["expect.pids"])

    def test_stream(self):
        """python: stream: windows while it runs, then the outcome"""
        req = bmc.EffectRequest(id=uid("stream"), argv=[wl("bm-spike"), "40", "100", "8"])
        self.c.submit(req)
        events = list(self.c.stream(req.id))
        kinds = [e.type for e in events]
        self.assertEqual(kinds[-1], "outcome")
        windows = [e.data for e in events if e.type == "window"]
        self.assertGreater(len(windows), 20, kinds)
        self.assertGreater(max(w["cpu_cores"] for w in windows), 0.5)
        self.assertEqual(events[-1].outcome.termination.reason, "completed")

    def test_cancel(self):
        """python: cancel a running effect; a second cancel is a Conflict"""
        req = bmc.EffectRequest(id=uid("cancel"), argv=[wl("bm-sleeper"), "30000"])
        self.c.submit(req)
        t0 = time.monotonic()
        self.c.cancel(req.id)
        o = self.c.wait(req.id, timeout=15)
        self.assertEqual(o.termination.reason, "cancelled")
        self.assertLess(time.monotonic() - t0, 10)
        with self.assertRaises(bmc.Conflict) as cm:
            self.c.cancel(req.id)
        self.assertEqual(cm.exception.status, 409)

    def test_invalid(self):
        """python: 400 names every bad field"""
        req = bmc.EffectRequest(id="bad id!", argv=[wl("bm-sleeper"), "1"],
                                sandbox=bmc.Sandbox(memory_limit="12x", network_policy="sometimes"))
        with self.assertRaises(bmc.InvalidRequest) as cm:
            self.c.submit(req)
        fields = sorted(f.field for f in cm.exception.fields)
        self.assertEqual(fields, ["id", "sandbox.memory_limit", "sandbox.network_policy"])
        self.assertEqual(cm.exception.status, 400)

    def test_forbidden_and_not_found(self):
        """python: 403 for a process not the caller's, 404 for an unknown id"""
        with self.assertRaises(bmc.Forbidden) as cm:
            self.c.submit(bmc.EffectRequest(id=uid("pid1"), pid=1))
        self.assertIn("pid", cm.exception.message)
        with self.assertRaises(bmc.NotFound):
            self.c.get(uid("nothing"))

    def test_backoff(self):
        """python: 429 with Retry-After once a tool keeps hitting the same ceiling"""
        sb = bmc.Sandbox(pids_limit=8)
        for _ in range(2):
            o = self.c.run(bmc.EffectRequest(id=uid("fan"), argv=[wl("bm-fanout"), "16", "300"], sandbox=sb),
                           timeout=30)
            self.assertEqual(o.termination.reason, "pids_ceiling")
            self.assertFalse(o.retry.eligible)
        self.assertGreater(o.retry.after_ms, 0)
        with self.assertRaises(bmc.TooManyRequests) as cm:
            self.c.submit(bmc.EffectRequest(id=uid("fan"), argv=[wl("bm-fanout"), "2", "10"], sandbox=sb))
        self.assertGreaterEqual(cm.exception.retry_after_s, 1)
        self.assertIn("backing off", cm.exception.message)

    def test_unavailable(self):
        """python: no agent on the socket is AgentUnavailable"""
        with self.assertRaises(bmc.AgentUnavailable):
            bmc.Client(AGENT.sock + ".none").health()


if __name__ == "__main__":
    AGENT = Agent("bm-pyclient")
    try:
        rc = run_tap(PythonClient)
    finally:
        AGENT.stop()
    sys.exit(rc)

# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A client of the burstmeter agent, on the standard library alone.

Two ways in:

* ``Client``: the agent's HTTP/JSON API on its Unix socket (``/run/burstmeter/api.sock``):
  submit an execution request, wait for its outcome, stream its events (every window,
  state and action, then the outcome), cancel it. Refusals are typed exceptions:
  ``InvalidRequest`` (400, with every bad field), ``Forbidden`` (403), ``NotFound``
  (404), ``Conflict`` (409), ``TooManyRequests`` (429, with ``retry_after_s``).
* ``Mcp``: ``burstmeter mcp`` as a child process, spoken to in MCP revision 2026-07-28
  (newline-delimited JSON-RPC on stdio, the protocol version in every request's
  ``_meta``): what a harness's model sees of each tool call.

    from burstmeter_client import Client, EffectRequest, Sandbox
    c = Client()
    out = c.run(EffectRequest(id="tc-42", argv=["make", "test"],
                              sandbox=Sandbox(memory_limit="1Gi", pids_limit=256)))
    print(out.termination.reason, out.peak.memory_bytes, out.retry.advice)
"""
from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Union

DEFAULT_SOCKET = "/run/burstmeter/api.sock"
FINAL_STATES = ("succeeded", "failed", "cancelled", "killed", "deadline_exceeded")
MCP_REVISION = "2026-07-28"

Quantity = Union[int, float, str]


# ---- errors -------------------------------------------------------------------------------

@dataclass
class FieldError:
    field: str
    error: str


class BurstmeterError(Exception):
    """The agent refused a call (status > 0) or could not be reached (status 0)."""

    def __init__(self, status: int, message: str, body: Optional[dict] = None):
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message
        self.body = body or {}


class InvalidRequest(BurstmeterError):
    """400: every bad field of the request, as the agent named them."""

    def __init__(self, status: int, message: str, body: Optional[dict] = None):
        super().__init__(status, message, body)
        self.fields = [FieldError(f.get("field", ""), f.get("error", "")) for f in self.body.get("fields", [])]

    def __str__(self) -> str:
        return "400: " + "; ".join(f"{f.field}: {f.error}" for f in self.fields)


class Forbidden(BurstmeterError):
    """403: not this caller's to ask for (another tenant, a process it did not start)."""


class NotFound(BurstmeterError):
    """404: no effect of that id for this tenant."""


class Conflict(BurstmeterError):
    """409: the effect has ended already."""


class TooManyRequests(BurstmeterError):
    """429: the queue is full, or this tool keeps hitting the same ceiling; wait retry_after_s."""

    def __init__(self, status: int, message: str, body: Optional[dict] = None, retry_after_s: float = 0):
        super().__init__(status, message, body)
        self.retry_after_s = retry_after_s


class AgentUnavailable(BurstmeterError):
    """No agent answered on the socket."""


_ERRORS = {400: InvalidRequest, 403: Forbidden, 404: NotFound, 409: Conflict}


# ---- requests -----------------------------------------------------------------------------

def _prune(d: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@dataclass
class Sandbox:
    """The sandbox of an execution request; quantities as numbers or strings ("512Mi", "500m")."""
    cpu_request: Optional[Quantity] = None
    cpu_limit: Optional[Quantity] = None
    memory_request: Optional[Quantity] = None
    memory_limit: Optional[Quantity] = None
    pids_limit: Optional[int] = None
    timeout_seconds: Optional[Quantity] = None
    max_ephemeral_storage: Optional[Quantity] = None
    io_read_bps: Optional[Quantity] = None       # per disk behind its paths, bytes/s ("50Mi")
    io_write_bps: Optional[Quantity] = None
    io_iops: Optional[int] = None
    network_policy: Optional[str] = None          # none, egress_restricted, egress_allow_list, full
    allowed_egress_cidrs: Optional[List[str]] = None
    read_only_root_fs: Optional[bool] = None
    run_as_non_root: Optional[bool] = None
    drop_all_capabilities: Optional[bool] = None
    workspace: Optional[str] = None  # an absolute directory, bound read-write

    def to_json(self) -> Dict[str, Any]:
        return _prune(asdict(self))


@dataclass
class EffectRequest:
    """POST /v1/effects: a command to launch (argv), or a process of the caller's to attach (pid)."""
    id: str
    argv: Optional[List[str]] = None
    pid: Optional[int] = None
    env: Optional[Dict[str, str]] = None
    cwd: Optional[str] = None
    intent: Optional[str] = None
    priority: Optional[int] = None
    labels: Optional[Dict[str, str]] = None
    window_ms: Optional[int] = None
    tenant: Optional[str] = None
    sandbox: Sandbox = field(default_factory=Sandbox)
    # declared intent: cpu_cores, memory_bytes, pids, net_tx_bytes_per_s, net_tx_bytes, wall_seconds
    expect: Optional[Dict[str, Quantity]] = None
    tool: Optional[str] = None                    # attach: the tool kind it runs (else argv[0]'s)
    traceparent: Optional[str] = None             # W3C trace context: outcome "trace", TRACEPARENT

    def to_json(self) -> Dict[str, Any]:
        d = _prune({k: v for k, v in asdict(self).items() if k != "sandbox"})
        d["mode"] = "attach" if self.pid is not None else "launch"
        d["sandbox"] = self.sandbox.to_json()
        return d


# ---- outcomes and events ------------------------------------------------------------------

@dataclass
class Termination:
    reason: str     # completed failed signaled deadline memory_ceiling pids_ceiling cpu_ceiling ...
    by: str


@dataclass
class Retry:
    eligible: bool
    after_ms: int
    advice: str


@dataclass
class Peak:
    cpu_cores: float
    memory_bytes: float
    pids: float
    net_tx_bytes_per_s: float
    runq_delay_ms: float


@dataclass
class Limits:
    cpu_cores: Optional[float]
    memory_bytes: Optional[int]
    pids: Optional[int]
    timeout_seconds: Optional[float]


@dataclass
class Expect:
    """The request's declared intent against what was observed (outcome "expect")."""
    declared: Dict[str, float]
    observed: Dict[str, float]
    exceeded: List[str]


@dataclass
class Trace:
    traceparent: str    # the request's W3C trace context


@dataclass
class Outcome:
    """burstmeter.outcome/v1; raw has every field, the typed ones are the contract's."""
    id: str
    tenant: str
    intent: str
    wall_seconds: float
    limits: Limits
    peak: Peak
    exit_code: Optional[int]
    exit_signal: Optional[int]
    termination: Termination
    retry: Retry
    actions: List[Dict[str, Any]]
    raw: Dict[str, Any]
    expect: Optional[Expect] = None     # only when the request declared one
    trace: Optional[Trace] = None       # only when the request had a traceparent

    @classmethod
    def from_json(cls, o: Dict[str, Any]) -> "Outcome":
        p, lim, ex = o.get("peak", {}), o.get("limits", {}), o.get("exit", {})
        x, tr = o.get("expect"), o.get("trace")
        return cls(
            id=o.get("id", ""), tenant=o.get("tenant", ""), intent=o.get("intent", ""),
            wall_seconds=o.get("wall_seconds", 0.0),
            limits=Limits(lim.get("cpu_cores"), lim.get("memory_bytes"), lim.get("pids"),
                          lim.get("timeout_seconds")),
            peak=Peak(p.get("cpu_cores", 0.0), p.get("memory_bytes", 0.0), p.get("pids", 0.0),
                      p.get("net_tx_bytes_per_s", 0.0), p.get("runq_delay_ms", 0.0)),
            exit_code=ex.get("code"), exit_signal=ex.get("signal"),
            termination=Termination(**{k: o.get("termination", {}).get(k, "") for k in ("reason", "by")}),
            retry=Retry(**{"eligible": True, "after_ms": 0, "advice": "", **o.get("retry", {})}),
            actions=o.get("actions", []), raw=o,
            expect=Expect(x.get("declared", {}), x.get("observed", {}), x.get("exceeded", []))
            if isinstance(x, dict) else None,
            trace=Trace(tr.get("traceparent", "")) if isinstance(tr, dict) else None)


@dataclass
class Effect:
    id: str
    state: str
    outcome: Optional[Outcome]
    raw: Dict[str, Any]
    created: bool = True    # False: the agent had this id already (200), nothing new was started

    @classmethod
    def from_json(cls, e: Dict[str, Any], created: bool = True) -> "Effect":
        o = e.get("outcome")
        return cls(e.get("id", ""), e.get("state", ""), Outcome.from_json(o) if isinstance(o, dict) else None,
                   e, created)

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES


@dataclass
class Event:
    """One line of GET /v1/effects/{id}/events: type is state, window, action or outcome."""
    type: str
    data: Dict[str, Any]

    @property
    def outcome(self) -> Optional[Outcome]:
        return Outcome.from_json(self.data["outcome"]) if self.type == "outcome" else None


# ---- the agent's API ----------------------------------------------------------------------

class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float]):
        super().__init__("burstmeter", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


class Client:
    """The agent at socket_path ($BURSTMETER_SOCKET, then /run/burstmeter/api.sock)."""

    def __init__(self, socket_path: Optional[str] = None, timeout: float = 10.0, tenant: Optional[str] = None):
        self.socket_path = socket_path or os.environ.get("BURSTMETER_SOCKET") or DEFAULT_SOCKET
        self.timeout = timeout
        self.tenant = tenant    # root only: act for this tenant

    def _path(self, path: str) -> str:
        if not self.tenant:
            return path
        return f"{path}{'&' if '?' in path else '?'}tenant={self.tenant}"

    def _open(self, method: str, path: str, body: Optional[dict], timeout: Optional[float]):
        conn = _UnixConnection(self.socket_path, timeout)
        data = json.dumps(body).encode() if body is not None else None
        try:
            conn.request(method, self._path(path), body=data,
                         headers={"Content-Type": "application/json", "Connection": "close"})
            return conn, conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise AgentUnavailable(0, f"no agent at {self.socket_path}: {e}") from e

    def _call(self, method: str, path: str, body: Optional[dict] = None) -> "tuple[int, dict]":
        conn, resp = self._open(method, path, body, self.timeout)
        try:
            raw = resp.read()
        finally:
            conn.close()
        doc = json.loads(raw) if raw else {}
        if resp.status >= 400:
            msg = doc.get("error", resp.reason) if isinstance(doc, dict) else resp.reason
            if resp.status == 429:
                raise TooManyRequests(429, msg, doc, float(resp.getheader("Retry-After") or 0))
            raise _ERRORS.get(resp.status, BurstmeterError)(resp.status, msg, doc)
        return resp.status, doc

    def health(self) -> Dict[str, Any]:
        return self._call("GET", "/v1/healthz")[1]

    def submit(self, req: EffectRequest) -> Effect:
        """201 running, 202 queued, 200 the same id again (created False); raises on refusal."""
        st, doc = self._call("POST", "/v1/effects", req.to_json())
        return Effect.from_json(doc, created=st != 200)

    def get(self, effect_id: str) -> Effect:
        return Effect.from_json(self._call("GET", f"/v1/effects/{effect_id}")[1])

    def list(self, state: Optional[str] = None, limit: Optional[int] = None) -> List[Effect]:
        q = "&".join(f"{k}={v}" for k, v in (("state", state), ("limit", limit)) if v is not None)
        _, doc = self._call("GET", "/v1/effects" + (f"?{q}" if q else ""))
        return [Effect.from_json(e) for e in doc.get("effects", [])]

    def cancel(self, effect_id: str) -> Effect:
        """SIGTERM to every process of it now, cgroup.kill after the grace; Conflict if it has ended."""
        return Effect.from_json(self._call("POST", f"/v1/effects/{effect_id}/cancel")[1])

    def wait(self, effect_id: str, timeout: Optional[float] = None, poll_s: float = 0.05) -> Outcome:
        """Until the effect has ended; its outcome. TimeoutError after timeout seconds."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            e = self.get(effect_id)
            if e.final and e.outcome:
                return e.outcome
            if end is not None and time.monotonic() > end:
                raise TimeoutError(f"effect {effect_id} still {e.state} after {timeout} s")
            time.sleep(poll_s)

    def run(self, req: EffectRequest, timeout: Optional[float] = None) -> Outcome:
        """submit, then wait."""
        self.submit(req)
        return self.wait(req.id, timeout)

    def stream(self, effect_id: str) -> Iterator[Event]:
        """Every event of the effect until its outcome (the last one)."""
        conn, resp = self._open("GET", f"/v1/effects/{effect_id}/events", None, None)
        try:
            if resp.status >= 400:
                raw = resp.read()
                doc = json.loads(raw) if raw else {}
                raise _ERRORS.get(resp.status, BurstmeterError)(resp.status, doc.get("error", ""), doc)
            for line in resp:
                if line.strip():
                    ev = json.loads(line)
                    yield Event(ev.get("type", ""), ev)
                    if ev.get("type") == "outcome":
                        return
        finally:
            conn.close()


# ---- burstmeter mcp, as a harness speaks to it ----------------------------------------------

@dataclass
class ToolResult:
    """A tools/call result: text is what the model reads (its first block first)."""
    texts: List[str]
    structured: Optional[Dict[str, Any]]
    is_error: bool

    @property
    def text(self) -> str:
        return self.texts[0] if self.texts else ""


class McpError(Exception):
    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(f"{code}: {message}")
        self.code, self.message, self.data = code, message, data


class Mcp:
    """``burstmeter mcp`` (argv) as a child, spoken to in MCP revision 2026-07-28."""

    def __init__(self, argv: List[str], client_name: str = "burstmeter_client.py"):
        self._p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._seq = 0
        self._meta = {"io.modelcontextprotocol/protocolVersion": MCP_REVISION,
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "io.modelcontextprotocol/clientInfo": {"name": client_name, "version": "1.0.0"}}
        self.server = self.request("server/discover")

    def request(self, method: str, params: Optional[dict] = None,
                on_progress: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
        self._seq += 1
        meta = dict(self._meta)
        if on_progress:
            meta["progressToken"] = self._seq
        msg = {"jsonrpc": "2.0", "id": self._seq, "method": method, "params": {**(params or {}), "_meta": meta}}
        assert self._p.stdin and self._p.stdout
        self._p.stdin.write(json.dumps(msg) + "\n")
        self._p.stdin.flush()
        for line in self._p.stdout:
            m = json.loads(line)
            if m.get("method") == "notifications/progress" and on_progress:
                on_progress(m["params"])
            elif m.get("id") == self._seq:
                if "error" in m:
                    e = m["error"]
                    raise McpError(e.get("code", 0), e.get("message", ""), e.get("data"))
                return m["result"]
        raise McpError(0, "burstmeter mcp closed its output")

    def tools(self) -> List[Dict[str, Any]]:
        return self.request("tools/list")["tools"]

    def call(self, name: str, arguments: Dict[str, Any],
             on_progress: Optional[Callable[[Dict[str, Any]], None]] = None) -> ToolResult:
        r = self.request("tools/call", {"name": name, "arguments": arguments}, on_progress)
        return ToolResult([c["text"] for c in r.get("content", []) if c.get("type") == "text"],
                          r.get("structuredContent"), bool(r.get("isError")))

    def close(self) -> int:
        """Close its input (the stdio transport's shutdown) and wait for it."""
        if self._p.stdin:
            self._p.stdin.close()
        try:
            return self._p.wait(timeout=20)
        finally:
            if self._p.stdout:
                self._p.stdout.close()

    def __enter__(self) -> "Mcp":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

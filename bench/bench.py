#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""burstmeter against its peers, side by side in one run, alternated.

Started by bench/run.sh, which builds the helpers first. Sections:
  kcost   kernel ns per context switch (bpf_stats): burstmeter vs runqlat vs an empty program
  tput    throughput of switch-heavy loads: nothing vs burstmeter vs runqlat
  launch  start-up of 'burstmeter run -- /bin/true' vs fork/exec, unshare, bwrap; with the full
          sandbox (both ways) vs bwrap's same sandbox; through the agent: client mode,
          POST -> outcome / exec'd vs fork/exec, submissions per second
  spikes  50 ms memory spikes: burstmeter's peak vs a 1 s sampler of the same runs
  detect  breach of a pids / memory / CPU ceiling -> action, kernel fast path vs userspace
  scale   as many effects at once through one agent as fit: its memory, CPU, maps, /metrics
The table goes to stdout, progress and warnings to stderr.
"""
import argparse
import ctypes
import json
import os
import random
import select
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
QUICK = os.environ.get("QUICK", "") not in ("", "0")

# Sizes: full run < 10 min, QUICK < 2 min on the 2-core VM.
# k_*: kernel-cost loads, t_*: throughput loads (shorter, more rounds: the noise is in the
# throughput); quiet: at most this many seconds spent waiting for other BPF tools to go away.
# Rounds: at least *_min, then more up to *_max while the section is within its time
# budget (*_budget seconds, shared by its loads), so a busy machine still ends in time.
if QUICK:
    CFG = dict(k_min=1, k_max=3, k_budget=8, k_pipe=6000, k_sn=25000,
               t_min=1, t_max=3, t_budget=8, t_pipe=5000, t_sn=25000,
               launch_runs=6, spikes=2, quiet=5,
               detect_n=25, detect_user_n=15, detect_ctl_n=0, detect_cpu_peer_n=0, rate_n=30,
               scale_steps=[200], scale_budget=24)
else:
    CFG = dict(k_min=5, k_max=7, k_budget=55, k_pipe=30000, k_sn=120000,
               t_min=3, t_max=11, t_budget=40, t_pipe=14000, t_sn=56000,
               launch_runs=24, spikes=12, quiet=30,
               detect_n=100, detect_user_n=50, detect_ctl_n=6, detect_cpu_peer_n=12, rate_n=200,
               scale_steps=[1000, 10000], scale_budget=205)
# the scale section alone, larger: BENCH_SCALE="10000" BENCH_SCALE_BUDGET=400 bench/run.sh scale
if os.environ.get("BENCH_SCALE"):
    CFG["scale_steps"] = [int(x) for x in os.environ["BENCH_SCALE"].split()]
if os.environ.get("BENCH_SCALE_BUDGET"):
    CFG["scale_budget"] = float(os.environ["BENCH_SCALE_BUDGET"])
# POSTs in flight at once in the scale section, as an orchestrator's several calls would be
SCALE_JOBS = 4

SPIKE_MIB = 256
SPIKE_HOLD_MS = 50
SPIKE_TOTAL_MS = 1300

children = []  # every Popen this bench started, so a failure ends exactly those


def log(*a):
    print("bench:", *a, file=sys.stderr, flush=True)


def warn(*a):
    print("bench: WARNING:", *a, file=sys.stderr, flush=True)
    WARNINGS.append(" ".join(str(x) for x in a))


WARNINGS = []


# burstmeter itself: a copy of BUILD/burstmeter taken at the start, so that a rebuild
# during the run (others work in the same tree) changes nothing half way
BM = None

# ---------------------------------------------------------------- statistics
def median(xs):
    return statistics.median(xs) if xs else float("nan")


def pctl(xs, p):
    """nearest-rank percentile"""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(-(-p * len(s) // 100)) - 1))
    return s[k]


def spread(xs, fmt="{:.0f}"):
    """'median [min..max]'"""
    if not xs:
        return "n/a"
    return (fmt + " [" + fmt + ".." + fmt + "]").format(median(xs), min(xs), max(xs))


# ---------------------------------------------------------------- BPF stats
def prog_table():
    """id -> (name, run_time_ns, run_cnt, type) for every loaded program"""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    try:
        progs = json.loads(out.stdout or "[]")
    except json.JSONDecodeError:
        progs = []
    return {p["id"]: (p.get("name", "?"), p.get("run_time_ns", 0), p.get("run_cnt", 0),
                      p.get("type", "?")) for p in progs}


def fdinfo_ids(pid, key):
    """BPF object ids a process holds, from the `key` lines (prog_id:, map_id:) of its fdinfo"""
    ids = set()
    d = f"/proc/{pid}/fdinfo"
    try:
        names = os.listdir(d)
    except OSError:
        return ids
    for f in names:
        try:
            with open(f"{d}/{f}") as fh:
                for line in fh:
                    if line.startswith(key):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def progs_of(pid):
    return fdinfo_ids(pid, "prog_id:")


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += child_pids(p)
    return out


def progs_of_tree(pid):
    ids = set()
    for p in descendants(pid):
        ids |= progs_of(p)
    return ids


def loadavg():
    with open("/proc/loadavg") as fh:
        return fh.read().split()[0]


def read_sysctl(name):
    with open("/proc/sys/" + name.replace(".", "/")) as fh:
        return fh.read().strip()


def write_sysctl(name, val):
    with open("/proc/sys/" + name.replace(".", "/"), "w") as fh:
        fh.write(str(val))


# ---------------------------------------------------------------- processes
def spawn(argv, **kw):
    p = subprocess.Popen(argv, **kw)
    children.append(p)
    return p


def end(p, sig=signal.SIGTERM, timeout=10):
    """end one process this bench started, by its pid"""
    if p.poll() is None:
        try:
            p.send_signal(sig)
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    if p in children:
        children.remove(p)
    for f in (p.stdin, p.stdout, p.stderr):
        if f:
            try:
                f.close()
            except OSError:
                pass
    return p.returncode


def first_line(p, timeout=20):
    """the first line a child writes on its stdout pipe, or b'' after timeout"""
    fd, buf = p.stdout.fileno(), b""
    t_end = time.monotonic() + timeout
    while b"\n" not in buf and time.monotonic() < t_end:
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
    return buf.split(b"\n")[0] + b"\n" if b"\n" in buf else buf


def wait_progs(p, want_name, timeout=20):
    """wait until process p (or a child) holds a program called want_name; return its ids"""
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        if p.poll() is not None:
            raise RuntimeError(f"{p.args[0]} exited ({p.returncode}) before attaching")
        ids = progs_of_tree(p.pid)
        if ids:
            tab = prog_table()
            if any(tab.get(i, ("",))[0] == want_name for i in ids):
                return ids
        time.sleep(0.02)
    raise RuntimeError(f"{p.args[0]}: no program {want_name} after {timeout} s")


class Tmp:
    dir = None

    @classmethod
    def path(cls, name):
        if cls.dir is None:
            cls.dir = tempfile.mkdtemp(prefix="bm-bench.")
            os.chmod(cls.dir, 0o755)
        return os.path.join(cls.dir, name)


# ---------------------------------------------------------------- the agent and its API
class Inotify:
    """IN_CREATE events of one directory (ctypes: inotify is not in the standard library)"""
    libc = None

    def __init__(self, path):
        if Inotify.libc is None:
            Inotify.libc = ctypes.CDLL(None, use_errno=True)
        self.fd = Inotify.libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        if Inotify.libc.inotify_add_watch(self.fd, path.encode(), 0x100) < 0:   # IN_CREATE
            err = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(err, f"inotify_add_watch {path}")

    def names(self):
        out = []
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return out
            i = 0
            while i + 16 <= len(buf):
                _, _, _, n = struct.unpack_from("iIII", buf, i)
                out.append(buf[i + 16:i + 16 + n].rstrip(b"\0").decode(errors="replace"))
                i += 16 + n

    def close(self):
        os.close(self.fd)


def http_request(method, path, body=None):
    """the bytes of one HTTP/1.1 request with a JSON body, the connection closed after it"""
    data = json.dumps(body).encode() if body is not None else b""
    return (f"{method} {path} HTTP/1.1\r\nHost: burstmeter\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data


def api(sock, method, path, body=None, timeout=30):
    """one HTTP/1.1 request on the agent's Unix socket: (status, JSON body or None)"""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock)
        s.sendall(http_request(method, path, body))
        buf = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            buf += chunk
    finally:
        s.close()
    head, _, payload = buf.partition(b"\r\n\r\n")
    status = int(head.split()[1]) if head.startswith(b"HTTP/") else -1
    if b"transfer-encoding: chunked" in head.lower():
        out, rest = b"", payload
        while rest:
            n, _, rest = rest.partition(b"\r\n")
            n = int(n.split(b";")[0] or b"0", 16)
            if not n:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        payload = out
    try:
        return status, json.loads(payload) if payload.strip() else None
    except ValueError:
        return status, None


FINAL = ("succeeded", "failed", "cancelled", "killed", "deadline_exceeded")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def proc_status(pid, keys=("VmRSS", "VmHWM")):
    """kB of the given /proc/PID/status keys"""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                k, _, v = line.partition(":")
                if k in keys:
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def proc_cpu_s(pid):
    """utime + stime of a process, seconds"""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            f = fh.read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def map_memlock(pid):
    """sum of bpftool's bytes_memlock over the maps a process holds, and per map name"""
    out = subprocess.run(["bpftool", "-j", "map", "show"], capture_output=True, text=True)
    try:
        maps = json.loads(out.stdout or "[]")
    except json.JSONDecodeError:
        maps = []
    mine = fdinfo_ids(pid, "map_id:")
    per = {m.get("name", "?"): m.get("bytes_memlock", 0) for m in maps if m.get("id") in mine}
    return sum(per.values()), per


class Agent:
    """`burstmeter agent` of this bench: its own socket, state, pins, port and config, all
    temporary. stop() leaves nothing: it waits for the effects to end first (they are
    this bench's), kills what is left of them by cgroup, and removes pins it left."""
    n = 0

    def __init__(self, name, max_running=64, max_queued=256, policy=None, nofile=None,
                 tenant_max_running=None, extra=""):
        Agent.n += 1
        self.name = name
        self.dir = Tmp.path(f"agent-{name}")
        os.makedirs(self.dir, exist_ok=True)
        self.sock = os.path.join(self.dir, "api.sock")
        self.pins = f"/sys/fs/bpf/bm-bench-{os.getpid()}-{Agent.n}"
        self.port = free_port()
        self.log = os.path.join(self.dir, "agent.log")
        self.cfg = os.path.join(self.dir, "agent.yaml")
        with open(self.cfg, "w") as fh:
            fh.write(f"max_running: {max_running}\nmax_queued: {max_queued}\n"
                     f"tenant_max_running: {tenant_max_running or max_running}\n"
                     "admit_cpu_pressure: 100\nadmit_mem_available: 0\n" + extra)
        self.policy, self.nofile, self.p = policy, nofile, None

    def start(self):
        argv = [BM, "agent", "--config", self.cfg, "--socket", self.sock, "--state-dir",
                os.path.join(self.dir, "state"), "--pin-dir", self.pins,
                "--metrics", f"127.0.0.1:{self.port}"] + (["--policy", self.policy] if self.policy else [])
        nofile = self.nofile

        def limits():
            if nofile:
                import resource
                hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
                try:   # above the hard limit only with CAP_SYS_RESOURCE
                    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, max(hard, nofile)))
                except (ValueError, OSError):
                    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        logf = open(self.log, "ab")
        self.p = spawn(argv, stdout=logf, stderr=subprocess.STDOUT, preexec_fn=limits)
        logf.close()
        t_end = time.monotonic() + 30
        while time.monotonic() < t_end:
            if self.p.poll() is not None:
                break
            try:
                if api(self.sock, "GET", "/v1/healthz", timeout=2)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.02)
        why = (f"exited ({self.p.returncode})" if self.p.poll() is not None else "did not answer in 30 s")
        log_tail = self.tail()
        self.stop(timeout=0)
        raise RuntimeError(f"agent {self.name} {why}: {log_tail}")

    def tail(self):
        try:
            with open(self.log, errors="replace") as fh:
                return fh.read()[-400:].strip()
        except OSError:
            return ""

    def health(self):
        try:
            return api(self.sock, "GET", "/v1/healthz", timeout=10)[1] or {}
        except OSError:
            return {}

    def wait_idle(self, timeout):
        """until nothing runs or waits; False after timeout"""
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            h = self.health()
            if h.get("running") == 0 and h.get("queued") == 0:
                return True
            time.sleep(0.05)
        return False

    def metrics(self):
        """(text of /metrics, seconds the scrape took)"""
        t0 = time.monotonic()
        s = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        try:
            s.sendall(http_request("GET", "/metrics"))
            buf = b""
            while True:
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                buf += chunk
        finally:
            s.close()
        return buf.partition(b"\r\n\r\n")[2].decode(errors="replace"), time.monotonic() - t0

    def metric(self, name):
        m = re.search(rf"^{name}(?:{{[^}}]*}})?\s+([0-9.eE+-]+)$", self.metrics()[0], re.M)
        return float(m.group(1)) if m else float("nan")

    def effect_cgroups(self):
        """cgroups of this agent's effects that still exist (ids of this bench: bmb<pid>)"""
        base = own_cgroup()
        try:
            return [os.path.join(base, n) for n in os.listdir(base)
                    if n.startswith("burstmeter.") and f"bmb{os.getpid()}-" in n]
        except OSError:
            return []

    def stop(self, timeout=120):
        if self.p is None:
            return
        if self.p.poll() is None and timeout and not self.wait_idle(timeout):
            # they are this bench's effects: end them by their cgroups, then the agent ends them too
            warn(f"agent {self.name}: effects still running after {timeout} s; killing them")
            for cg in self.effect_cgroups():
                try:
                    with open(cg + "/cgroup.kill", "w") as fh:
                        fh.write("1")
                except OSError:
                    pass
            self.wait_idle(30)
        rc = end(self.p, signal.SIGTERM, timeout=60)
        self.p = None
        if rc not in (0, None):
            warn(f"agent {self.name} exited {rc}: {self.tail()}")
        left = self.effect_cgroups()
        for cg in left:
            for _ in range(3):
                try:
                    with open(cg + "/cgroup.kill", "w") as fh:
                        fh.write("1")
                    time.sleep(0.1)
                    os.rmdir(cg)
                    break
                except OSError:
                    time.sleep(0.2)
        if left:
            warn(f"agent {self.name} left {len(left)} effect cgroups (removed)")
        if os.path.exists(self.pins):
            warn(f"agent {self.name} left its pins in {self.pins} (removed)")
            shutil.rmtree(self.pins, ignore_errors=True)


# ---------------------------------------------------------------- loads
def loads(kind):
    n, s = CFG[kind + "_pipe"], CFG[kind + "_sn"]
    out = [
        ("pipe-2cpu", f"perf bench sched pipe -l {n}"),
        ("pipe-1cpu", f"taskset -c 0 perf bench sched pipe -l {n}"),
    ]
    if shutil.which("stress-ng"):
        # bounded by work, not time (--timeout takes whole seconds only: 0.3s means forever)
        out.append(("stress-switch",
                    f"stress-ng --switch 2 --switch-ops {s} --timeout 60 --metrics-brief"))
        if kind == "t":
            # unpinned, its 4 tasks run 160k/s with both CPUs free and 57k/s when another
            # user takes one: bimodal on a shared machine. Pinned, it is steady. (QUICK keeps
            # only the pinned one, and so does the full run since 10,000 effects joined it:
            # the kernel-cost rows still have it unpinned)
            out.pop()
            out.append(("stress-switch-1cpu", "taskset -c 0 stress-ng --switch 2 "
                        f"--switch-ops {s // 2} --timeout 60 --metrics-brief"))
    else:
        warn("stress-ng missing (tools/deps.sh bench): its rows are skipped")
    return out


def load_rate(text):
    """ops/s of a load from its own output"""
    m = re.search(r"([\d.]+)\s+usecs/op", text)
    if m:
        return 1e6 / float(m.group(1))
    m = re.search(r"\]\s+switch\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)", text)
    if m:
        return float(m.group(1))
    return None


LOAD_TIMEOUT = 120


def run_load(load):
    """run a load in its own process group; its output (stdout + stderr)"""
    p = spawn(["sh", "-c", load], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
              start_new_session=True)
    try:
        out, _ = p.communicate(timeout=LOAD_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)   # the group this bench made for this load
        p.wait()
        children.remove(p)
        raise RuntimeError(f"load still running after {LOAD_TIMEOUT} s: {load}")
    children.remove(p)
    return out.decode(errors="replace")


def own_cgroup():
    """this process's cgroup v2 directory"""
    with open("/proc/self/cgroup") as fh:
        rel = next(line[3:].strip() for line in fh if line.startswith("0::"))
    for base in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if os.path.exists(base + "/cgroup.procs") or os.path.exists(base + "/cgroup.controllers"):
            if os.path.exists(base + "/cgroup.subtree_control"):
                return (base + rel).rstrip("/")
    raise RuntimeError("no cgroup v2 hierarchy found")


# ---------------------------------------------------------------- other BPF tools
TRACE_TYPES = ("tracing", "raw_tracepoint", "tracepoint", "kprobe", "perf_event")


OURS = set()  # every program id a tool of this bench held (freed a moment after its exit)


def foreign(tab, ours):
    """tracing programs loaded that this bench did not load: someone else's tool"""
    return [f"{i}:{v[0]}" for i, v in tab.items()
            if i not in ours and i not in OURS and v[3] in TRACE_TYPES]


class Quiet:
    """Other users of the machine (a test suite loading burstmeter, say) share the
    tracepoints and the CPUs. Wait for them to go, within a budget for the whole run;
    samples taken with them present are retried, then kept and counted."""
    spent = 0.0
    waited = 0

    @classmethod
    def wait(cls):
        t0 = time.monotonic()
        while cls.spent + (time.monotonic() - t0) < CFG["quiet"]:
            if not foreign(prog_table(), set()):
                break
            time.sleep(0.05)
        dt = time.monotonic() - t0
        if dt > 0.04:
            cls.waited += 1
        cls.spent += dt


def alone(tool, load, b, what):
    """one sample of a load under a tool, retried while other BPF tools were loaded;
    returns (attached, output, before, after, alone?)"""
    for attempt in range(3):
        t0 = time.monotonic()
        with Attached(tool, load, b) as a:
            out, before, after = a.run()
        if not a.foreign:
            return a, out, before, after, True
        retry = attempt < 2 and Quiet.spent < CFG["quiet"]
        log(f"{what}: other BPF tools loaded ({', '.join(a.foreign[:4])}...): "
            + ("retrying" if retry else "kept, counted as not alone"))
        if not retry:
            break
        Quiet.spent += time.monotonic() - t0   # retries come out of the same budget
    return a, out, before, after, False


# ---------------------------------------------------------------- tools attached
SWITCH_PROG = {"burstmeter": "bm_sched_switch", "runqlat": "sched_switch", "empty": "bench_empty"}


class Attached:
    """one tool attached alone, with a load to run under it:
    with Attached(tool, load) as a: a.run() -> (output, stats-before, stats-after)"""

    def __init__(self, tool, load, b):
        self.tool, self.load, self.b = tool, load, b
        self.p = None

    def __enter__(self):
        t = self.tool
        Quiet.wait()
        if t == "none":
            self.ids = set()
        elif t == "cgroup":
            # what running in a child cgroup costs without any BPF (PSI and cgroup
            # accounting walk one more level per switch): where burstmeter puts an effect
            self.ids = set()
            self.cg = own_cgroup() + f"/bm-bench.{os.getpid()}"
            os.makedirs(self.cg, exist_ok=True)
        elif t == "runqlat":
            # it prints "Tracing run queue latency..." once all its programs are attached
            self.p = spawn(["stdbuf", "-oL", "runqlat"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
            line = first_line(self.p)   # (stdbuf: a pipe would hold it in a buffer)
            if not line.startswith(b"Tracing"):
                raise RuntimeError(f"runqlat did not start: {line!r} "
                                   + self.p.stderr.read().decode(errors="replace"))
            self.ids = progs_of(self.p.pid)
        elif t == "empty":
            self.p = spawn([os.path.join(self.b, "bench", "bm-empty")], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE)
            if first_line(self.p).strip() != b"ready":
                raise RuntimeError("bm-empty did not start")
            self.ids = progs_of(self.p.pid)
        elif t == "burstmeter":
            # The load runs inside the effect: it waits on a FIFO (no cost), runs,
            # says done, and waits for 'stop' so the stats are read before the end.
            self.go, self.stop = Tmp.path("go"), Tmp.path("stop")
            self.done, self.outf = Tmp.path("done"), Tmp.path("load.out")
            for f in (self.go, self.stop, self.done, self.outf):
                if os.path.exists(f):
                    os.unlink(f)
            os.mkfifo(self.go)
            os.mkfifo(self.stop)
            script = (f"read _ < {self.go}; {self.load} > {self.outf} 2>&1; "
                      f": > {self.done}; read _ < {self.stop}")
            # a meter of its own (never a pinned one reused): its programs are counted here
            self.p = spawn([BM, "run", "-q", "--fresh-meter", "--", "sh", "-c",
                            script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            wait_progs(self.p, SWITCH_PROG[t])
            self.go_fd = self._open_fifo_w(self.go)
            # the command runs (it reads the FIFO): every program is loaded and attached
            self.ids = progs_of_tree(self.p.pid)
        return self

    def _open_fifo_w(self, path, timeout=20):
        t_end = time.monotonic() + timeout
        while time.monotonic() < t_end:
            try:
                return os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                if self.p.poll() is not None:
                    raise RuntimeError(f"burstmeter exited ({self.p.returncode}): "
                                       + self.p.stderr.read().decode(errors="replace"))
                time.sleep(0.005)
        raise RuntimeError(f"nobody reads {path}")

    def run(self):
        before = prog_table()
        if self.tool == "burstmeter":
            os.write(self.go_fd, b"\n")
            os.close(self.go_fd)
            t_end = time.monotonic() + LOAD_TIMEOUT
            while not os.path.exists(self.done):
                if self.p.poll() is not None:
                    raise RuntimeError(f"burstmeter exited early ({self.p.returncode})")
                if time.monotonic() > t_end:
                    raise RuntimeError(f"load still running after {LOAD_TIMEOUT} s: {self.load}")
                time.sleep(0.005)
            after = prog_table()
            with open(self.outf, errors="replace") as fh:
                out = fh.read()
        else:
            load = self.load
            if self.tool == "cgroup":
                load = f"echo $$ > {self.cg}/cgroup.procs && {load}"
            out = run_load(load)
            after = prog_table()
        OURS.update(self.ids)
        self.foreign = sorted(set(foreign(before, self.ids)) | set(foreign(after, self.ids)))
        return out, before, after

    def __exit__(self, *exc):
        if self.tool == "cgroup":
            for _ in range(100):
                try:
                    os.rmdir(self.cg)
                    break
                except OSError:
                    time.sleep(0.01)
        if self.p is None:
            return False
        if self.tool == "burstmeter":
            err = b""
            if exc[0] is not None:
                # a failed sample (a hung load, say): end the effect's processes, which
                # this bench started through burstmeter, by pid, then burstmeter
                for pid in descendants(self.p.pid)[1:]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            try:
                fd = self._open_fifo_w(self.stop, timeout=5)
                os.write(fd, b"\n")
                os.close(fd)
                self.p.wait(timeout=30)
                err = self.p.stderr.read()
            except Exception:
                pass
            rc = end(self.p)
            if rc not in (0, None) and exc[0] is None:
                warn(f"burstmeter run exited {rc}: " + err.decode(errors="replace").strip()[-300:])
        elif self.tool == "runqlat":
            end(self.p, signal.SIGINT)
        elif self.tool == "empty":
            self.p.stdin.close()
            end(self.p)
        return False


def round_numbers(kind, nloads):
    """round numbers for one load of a section: k_min at least, k_max at most, more than
    the minimum only while this load is within its share of the section's budget"""
    t0 = time.monotonic()
    share = CFG[kind + "_budget"] / nloads
    r = 0
    while r < CFG[kind + "_max"]:
        if r >= CFG[kind + "_min"]:
            spent = time.monotonic() - t0
            if spent / r * (r + 1) > share:   # the next round would end past the share
                log(f"{kind}: stopping at {r} rounds, the time budget is spent")
                return
        yield r
        r += 1


def rotate(items, r):
    r %= len(items)
    return items[r:] + items[:r]


# ---------------------------------------------------------------- 1. kernel cost
def kcost(b, res):
    tools = ["burstmeter", "runqlat", "empty"]
    L = loads("k")
    for lname, load in L:
        ops = CFG["k_pipe"] if "pipe" in load else CFG["k_sn"]
        per = {t: [] for t in tools}          # ns/switch per round
        sw = {t: [] for t in tools}           # switches per round
        breakdown = {t: {} for t in tools}    # prog name -> list of (runs/switch, ns/run)
        shared = {t: 0 for t in tools}        # samples taken with other BPF tools loaded
        for r in round_numbers("k", len(L)):
            for t in rotate(tools, r):
                a, out, before, after, ok = alone(t, load, b, f"kcost {lname} {t}")
                shared[t] += not ok
                d = {i: (after[i][0], after[i][1] - before[i][1], after[i][2] - before[i][2])
                     for i in a.ids if i in after and i in before}
                nsw = sum(c for (n, _, c) in d.values() if n == SWITCH_PROG[t])
                tot = sum(ns for (_, ns, _) in d.values())
                if nsw <= 0:
                    warn(f"kcost {lname} {t}: no switches counted (is bpf_stats on?)")
                    continue
                per[t].append(tot / nsw)
                sw[t].append(nsw)
                for (n, ns, c) in d.values():
                    breakdown[t].setdefault(n, []).append((c / nsw, ns / c if c else 0.0, ns / nsw))
                log(f"kcost {lname} round {r + 1} {t}: {tot / nsw:.0f} ns/switch, {nsw} switches")
        ratio = [x / y for x, y in zip(per["burstmeter"], per["runqlat"])]
        fl = [x / y for x, y in zip(per["empty"], per["runqlat"])]
        res["kcost"].append(dict(load=lname, cmd=load, ops=ops, shared=shared, per=per, sw=sw, ratio=ratio, floor=fl,
                                 breakdown=breakdown))


# ---------------------------------------------------------------- 2. throughput
def tput(b, res):
    conds = ["none", "cgroup", "burstmeter", "runqlat"]
    L = loads("t")
    for lname, load in L:
        rate = {c: [] for c in conds}
        shared = {c: 0 for c in conds}
        rounds = []
        for r in round_numbers("t", len(L)):
            got = {}
            for c in rotate(conds, r):
                a, out, before, after, ok = alone(c, load, b, f"tput {lname} {c}")
                shared[c] += not ok
                v = load_rate(out)
                if v is None:
                    warn(f"tput {lname} {c}: no rate in the load's output: {out.strip()[-200:]}")
                    continue
                got[c] = v
                rate[c].append(v)
            rounds.append(got)
            log(f"tput {lname} round {r + 1}: " +
                ", ".join(f"{c} {got[c]:.0f}/s" for c in conds if c in got))
        def pair(x, y):
            return [g[x] / g[y] for g in rounds if x in g and y in g]
        rel = {c: pair(c, "none") for c in ("cgroup", "burstmeter", "runqlat")}
        res["tput"].append(dict(load=lname, cmd=load, rate=rate, rel=rel, shared=shared,
                                bvr=pair("burstmeter", "runqlat"), bvc=pair("burstmeter", "cgroup")))


# ---------------------------------------------------------------- 3. launch
def launch(b, res):
    bm = BM
    # through an agent of its own: `run --socket` (client mode) beside the rest, then the API
    agent = Agent("launch", max_running=max(64, CFG["rate_n"] + 16),
                  max_queued=max(256, CFG["rate_n"] + 16)).start()
    try:
        # run's full sandbox (the agent's launches have the same: bm_sandbox_exec), and bwrap's
        # nearest: its namespaces, a read-only root with a private /tmp, the workspace bound
        # read-write, another uid, no capabilities, a clean environment
        ws = Tmp.path("launch-ws")
        os.makedirs(ws, exist_ok=True)
        full = ["--network", "none", "--read-only-root", "--workspace", ws, "--user", "65534",
                "--drop-caps", "--clean-env"]
        cmds = [("fork/exec", ["/bin/true"]),
                ("burstmeter run", [bm, "run", "-q", "--standalone", "--", "/bin/true"]),
                ("run --socket", [bm, "run", "-q", "--socket", agent.sock, "--", "/bin/true"]),
                ("run, full sandbox", [bm, "run", "-q", "--standalone"] + full + ["--", "/bin/true"]),
                ("run --socket, full sandbox",
                 [bm, "run", "-q", "--socket", agent.sock] + full + ["--", "/bin/true"]),
                ("unshare -mpf", ["unshare", "-mpf", "--fork", "/bin/true"])]
        if shutil.which("bwrap"):
            cmds.append(("bwrap", ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "/bin/true"]))
            cmds.append(("bwrap, same sandbox",
                         ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--bind",
                          ws, ws, "--proc", "/proc", "--dev", "/dev", "--uid", "65534", "--gid",
                          "65534", "--cap-drop", "ALL", "--clearenv", "/bin/true"]))
        else:
            warn("bwrap missing (tools/deps.sh bench installs bubblewrap): its rows are skipped")
        argv = [os.path.join(b, "bench", "bm-launch"), str(CFG["launch_runs"])]
        for i, (_, c) in enumerate(cmds):
            argv += ([":::"] if i else []) + c
        log(f"launch: {CFG['launch_runs']} runs of each of {len(cmds)} commands, alternated")
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        ms = {i: [] for i in range(len(cmds))}
        bad = {i: 0 for i in range(len(cmds))}
        for line in out.splitlines():
            k, r, ns, st = (int(x) for x in line.split())
            ms[k].append(ns / 1e6)
            bad[k] += st != 0
        for k, n in bad.items():
            if n:
                warn(f"launch: '{' '.join(cmds[k][1])}' failed {n} of {len(ms[k])} times")
        res["launch"] = [dict(name=cmds[k][0], cmd=" ".join(cmds[k][1]).replace(BM, "build/burstmeter")
                              .replace(agent.sock, "S").replace(ws, "W"), ms=ms[k])
                         for k in range(len(cmds))]

        # the API from C: POST -> outcome and POST -> exec'd, against fork/exec of the same
        dbin, stampf = os.path.join(b, "bench", "bm-detect"), Tmp.path("launch.stamp")
        agentc = os.path.join(b, "bench", "bm-agentc")
        rounds = CFG["launch_runs"]
        log(f"launch: {rounds} rounds of POST /v1/effects vs fork/exec (/bin/true, and to the exec)")
        p = subprocess.run([agentc, agent.sock, "launch", str(rounds), f"bmb{os.getpid()}-l", dbin, stampf],
                           capture_output=True, text=True)
        if p.returncode:
            warn(f"launch: bm-agentc launch exited {p.returncode}: {p.stderr.strip()[-300:]}")
        api_ms = {k: [] for k in ("fork", "post_end", "fork_exec", "post_exec", "post")}
        names = {"0": "fork", "1": "post_end", "2": "fork_exec", "3": "post_exec"}
        for line in p.stdout.splitlines():
            f = line.split()
            if f[0] == "post":
                api_ms["post"].append(int(f[2]) / 1e6)
            elif f[0] in names:
                api_ms[names[f[0]]].append(int(f[2]) / 1e6)
                if f[3] != "0":
                    warn(f"launch: API run kind {f[0]} round {f[1]} status {f[3]}")
        res["launch_api"] = api_ms

        n = CFG["rate_n"]
        log(f"launch: {n} POSTs of /bin/true as fast as the agent takes them, until all end")
        p = subprocess.run([agentc, agent.sock, "rate", str(n), f"bmb{os.getpid()}-r"],
                           capture_output=True, text=True)
        m = re.search(r"rate (\d+) (\d+) (\d+) (\d+) (\d+)", p.stdout)
        if m:
            n, posted, done, ok, refused = (int(x) for x in m.groups())
            res["launch_rate"] = dict(n=n, posted=posted / 1e9, done=done / 1e9, ok=ok, refused=refused)
            if refused:
                warn(f"launch: the agent refused {refused} of {n} submissions")
        else:
            warn(f"launch: bm-agentc rate said nothing: {p.stderr.strip()[-300:]}")
    finally:
        agent.stop()


# ---------------------------------------------------------------- 3b. meter load
PROG_RE = re.compile(r"prog (\w+): verified_insns (\d+); verification time (\d+) usec")


def kload(b, res):
    """what starting a standalone run costs: the verifier per program, a fresh load, a kept meter"""
    n = CFG["launch_runs"]
    keep = f"/sys/fs/bpf/bmb{os.getpid()}-keep"
    env = dict(os.environ, BURSTMETER_KEEP_DIR=keep)
    progs, load_ms = {}, []
    nv = max(3, n // 4)
    log(f"kload: {nv} fresh loads with -v (verified_insns, verification time per program)")
    for _ in range(nv):
        p = subprocess.run([BM, "run", "-v", "--standalone", "--fresh-meter", "--", "/bin/true"],
                           capture_output=True, text=True)
        for m in PROG_RE.finditer(p.stderr):
            progs.setdefault(m.group(1), []).append((int(m.group(2)), int(m.group(3)) / 1e3))
        m = re.search(r"meter loaded in ([0-9.]+) ms", p.stderr)
        if m:
            load_ms.append(float(m.group(1)))
        else:
            warn(f"kload: no load time in -v: {p.stderr.strip()[-300:]}")
    try:
        p = subprocess.run([BM, "run", "-q", "--standalone", "--keep-meter", "10m", "--", "/bin/true"],
                           env=env, capture_output=True, text=True)
        if p.returncode or not os.path.exists(os.path.join(keep, "bm_meta")):
            warn(f"kload: no kept meter in {keep}: {p.stderr.strip()[-300:]}")
        cmds = [("fork/exec", ["/bin/true"]),
                # two objects verified at once (the default on 2+ CPUs), and one, as on one CPU
                # (user/meter/loader.c load_split()); env in front of both, alike
                ("run, fresh meter", ["env", "BURSTMETER_LOAD_THREADS=2", BM, "run", "-q", "--standalone",
                                      "--fresh-meter", "--", "/bin/true"]),
                ("run, fresh meter, one object", ["env", "BURSTMETER_LOAD_THREADS=1", BM, "run", "-q",
                                                  "--standalone", "--fresh-meter", "--", "/bin/true"]),
                ("run, kept meter", [BM, "run", "-q", "--standalone", "--", "/bin/true"])]
        if shutil.which("bwrap"):
            cmds.append(("bwrap", ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "/bin/true"]))
        argv = [os.path.join(b, "bench", "bm-launch"), str(n)]
        for i, (_, c) in enumerate(cmds):
            argv += ([":::"] if i else []) + c
        log(f"kload: {n} runs of each of {len(cmds)} commands, alternated")
        out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env).stdout
        ms = {i: [] for i in range(len(cmds))}
        for line in out.splitlines():
            k, r, ns, st = (int(x) for x in line.split())
            ms[k].append(ns / 1e6)
            if st:
                warn(f"kload: '{cmds[k][0]}' round {r} exited {st}")
    finally:
        subprocess.run([BM, "run", "-q", "--standalone", "--keep-meter", "0", "--", "/bin/true"],
                       env=env, capture_output=True)
        t_end = time.monotonic() + 5
        while os.path.exists(keep) and time.monotonic() < t_end:
            time.sleep(0.05)
        if os.path.exists(keep):
            warn(f"kload: {keep} still pinned: removed")
            shutil.rmtree(keep, ignore_errors=True)
    # the peer's own start: runqlat (libbpf-tools) from exec to its first line (loaded, attached)
    rq = []
    if shutil.which("runqlat"):
        for _ in range(nv):
            t0 = time.monotonic()
            p = spawn(["stdbuf", "-oL", "runqlat"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            if first_line(p):
                rq.append((time.monotonic() - t0) * 1e3)
            end(p, signal.SIGINT)
    res["kload"] = dict(progs=progs, load_ms=load_ms, runqlat_ms=rq,
                        start={cmds[k][0]: ms[k] for k in ms},
                        cmds={c[0]: " ".join(c[1]).replace(BM, "build/burstmeter") for c in cmds})


# ---------------------------------------------------------------- 4. memory spikes
def effect_cgroup(pid):
    """the v2 cgroup directory of the first descendant of pid that is in another cgroup"""
    def cg(p):
        try:
            with open(f"/proc/{p}/cgroup") as fh:
                for line in fh:
                    if line.startswith("0::"):
                        return line[3:].strip()
        except OSError:
            pass
        return None
    mine = cg(pid)
    for p in descendants(pid)[1:]:
        c = cg(p)
        if c and c != mine:
            for base in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
                if os.path.exists(base + c + "/cgroup.procs"):
                    return base + c
    return None


def rss_of_cgroup(path):
    total = 0
    try:
        with open(path + "/cgroup.procs") as fh:
            pids = fh.read().split()
    except OSError:
        return None
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def set_fifo(on):
    """this process (only) to SCHED_FIFO 10 and back; False where refused"""
    try:
        if on:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        else:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        return True
    except (OSError, AttributeError):
        return False


def spikes(b, res):
    bm = BM
    spike = os.path.join(b, "bench", "bm-memspike")
    truth = SPIKE_MIB << 20
    rows = []
    rng = random.Random()
    for i in range(CFG["spikes"]):
        delay = rng.randint(100, SPIKE_TOTAL_MS - 250)
        phase = rng.uniform(0, 1)
        outcome = Tmp.path(f"spike{i}.json")
        # outside the effect: holds SIZE of backed pages until the spike takes them (memspike.c)
        w = spawn([spike, "warm", str(SPIKE_MIB)], stdout=subprocess.PIPE)
        if first_line(w).strip() != b"ready":
            raise RuntimeError("bm-memspike warm did not start")
        cmd = [bm, "run", "-q", "--outcome", outcome, "--", spike, str(delay), str(SPIKE_MIB),
               str(SPIKE_HOLD_MS), str(SPIKE_TOTAL_MS), str(w.pid)]
        t0 = time.monotonic()
        p = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        cgp, samples, at, late, next_s = None, [], [], [], t0 + phase
        # The sampler must not wake late *because* the spike keeps the CPUs busy: that
        # would bias it toward the spike. Real time for it (not inherited: children exist).
        fifo = set_fifo(True)
        try:
            while p.poll() is None:
                now = time.monotonic()
                if cgp is None:
                    cgp = effect_cgroup(p.pid)
                if now >= next_s:
                    v = rss_of_cgroup(cgp) if cgp else None
                    samples.append(v or 0)
                    at.append(next_s)
                    late.append(time.monotonic() - next_s)
                    next_s += 1.0
                wait = next_s - time.monotonic()
                time.sleep(0.003 if cgp is None else max(0.0, min(wait, 0.02)))
        finally:
            if fifo:
                set_fifo(False)
        out, err = p.communicate()
        end(p)
        end(w)
        try:
            with open(outcome) as fh:
                o = json.load(fh)
            peak = o["peak"]["memory_bytes"]
        except (OSError, ValueError, KeyError) as e:
            warn(f"spike {i}: no outcome ({e}); burstmeter said: {err.decode(errors='replace')[-300:]}")
            continue
        m = re.search(r"t0=([\d.]+) touch_start=([\d.]+) at90=([\d.]+) touched=([\d.]+) "
                      r"freed=([\d.]+)", out.decode())
        if not m:
            warn(f"spike {i}: no timing from bm-memspike: {out.decode()[-200:]}")
            continue
        m0, ts, t90, _, tf = (float(x) for x in m.groups())
        smax = max(samples) if samples else 0
        # the same sample instants, judged from the spike's own clock: what an ideal
        # sampler at those instants would have seen (time.monotonic = CLOCK_MONOTONIC)
        ideal = any((m0 + t90) / 1e3 <= x <= (m0 + tf) / 1e3 for x in at)
        rows.append(dict(peak=peak, sampled=smax, nsamples=len(samples), held=tf - ts,
                         in10=tf - t90, bm_hit=abs(peak - truth) <= 0.1 * truth,
                         s_hit=abs(smax - truth) <= 0.1 * truth, ideal=ideal,
                         late=max(late) if late else 0.0))
        log(f"spike {i + 1}/{CFG['spikes']}: at {delay} ms, resident {tf - ts:.0f} ms "
            f"(within 10 % for {tf - t90:.0f} ms); burstmeter {peak / 2**20:.0f} MiB, "
            f"1 s sampler {smax / 2**20:.0f} MiB ({len(samples)} samples, latest "
            f"{1e3 * max(late or [0]):.1f} ms late{', on the spike' if ideal else ''})")
    res["spikes"] = dict(rows=rows, truth=truth,
                         cmd="build/burstmeter run -q --outcome O.json -- build/bench/bm-memspike "
                         f"RANDOM_MS {SPIKE_MIB} {SPIKE_HOLD_MS} {SPIKE_TOTAL_MS} WARM_PID")


# ---------------------------------------------------------------- 5. detection -> action
DETECT_PIDS = 32            # --pids
DETECT_MIB = 128            # --memory, MiB
DETECT_CPU_S = "0.1"        # bm-detect cpu: seconds of spinning after the window edge
CPU_POLICY = """# bench: freeze an effect whose window goes over 1 core (bm-detect-cpu only)
cooldown_ms: 50
freeze_timeout_ms: 1000
rules:
  - match: { tool: bm-detect-cpu }
    cpu: { hard: 1.0, steps: [freeze] }
"""
NTRIAL = [0]


def trial_id(kind):
    NTRIAL[0] += 1
    return f"bmb{os.getpid()}-{kind}{NTRIAL[0]}"


def new_stamp():
    f = Tmp.path("detect.stamp")
    with open(f, "wb") as fh:
        fh.write(b"\0" * 4096)
    return f


STAMP = ("exec", "cross", "refused", "edge", "frozen", "thawed", "forks", "done", "rss_at_cross",
         "mib_per_s", "cpu_max_us")


def read_stamp(f):
    with open(f, "rb") as fh:
        return dict(zip(STAMP, struct.unpack(f"{len(STAMP)}q", fh.read(8 * len(STAMP)))))


def watch_run(argv, ino, cg_name, rfd=None, timeout=30):
    """run argv (burstmeter run ...) to its end while watching, at real-time priority, for
    the effect's cgroup to appear (inotify: the effect's clock starts right after its mkdir)
    and for EOF on rfd (the effect's last process gone). Returns (rc, stderr, t_mk, t_end)."""
    ino.names()
    p = spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    po = select.poll()
    po.register(ino.fd, select.POLLIN)
    po.register(p.stderr.fileno(), select.POLLIN)
    if rfd is not None:
        po.register(rfd, select.POLLIN)
    t_mk = t_end = None
    err = b""
    deadline = time.monotonic() + timeout
    fifo = set_fifo(True)   # after the spawn: burstmeter and its effect do not inherit it
    try:
        while True:
            evs = po.poll(20)
            now = time.monotonic_ns()
            for fd, ev in evs:
                if fd == ino.fd:
                    if cg_name in ino.names() and t_mk is None:
                        t_mk = now
                elif fd == rfd:
                    if ev & select.POLLHUP:
                        t_end = t_end or now
                        po.unregister(rfd)
                    elif ev & select.POLLIN:
                        os.read(rfd, 4096)
                elif ev & (select.POLLIN | select.POLLHUP):
                    chunk = os.read(fd, 65536)
                    err += chunk
                    if not chunk:
                        po.unregister(fd)
            if p.poll() is not None:
                break
            if time.monotonic() > deadline:
                for pid in descendants(p.pid)[1:]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                end(p)
                raise RuntimeError(f"still running after {timeout} s: {' '.join(argv)}")
    finally:
        if fifo:
            set_fifo(False)
    if rfd is not None and t_end is None:
        for fd, ev in po.poll(0):
            if fd == rfd and ev & select.POLLHUP:
                t_end = time.monotonic_ns()
    err += p.stderr.read() or b""
    return end(p), err.decode(errors="replace"), t_mk, t_end


def detect_trial(kind, flags, ino, dbin, cpu_bin=None, policy=None):
    """one standalone `burstmeter run` of a bm-detect workload at its ceiling"""
    tid = trial_id(kind[0])
    stampf, outf = new_stamp(), Tmp.path("detect.json")
    if os.path.exists(outf):
        os.unlink(outf)
    rfd = None
    if kind == "cpu":
        lim, cmd = ["--policy", policy], [cpu_bin, "cpu", stampf, DETECT_CPU_S, "2", "10"]
    else:
        fifo = Tmp.path("detect.fifo")
        if os.path.exists(fifo):
            os.unlink(fifo)
        os.mkfifo(fifo)
        rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        if kind == "pids":
            lim, cmd = ["--pids", str(DETECT_PIDS)], [dbin, "pids", stampf, fifo, str(DETECT_PIDS), "2"]
        else:
            lim, cmd = ([f"--memory", f"{DETECT_MIB}M"],
                        [dbin, "mem", stampf, fifo, str(DETECT_MIB), str(4 * DETECT_MIB)])
    argv = [BM, "run", "-q", "--id", tid, "--outcome", outf] + lim + flags + ["--"] + cmd
    try:
        rc, err, t_mk, t_end = watch_run(argv, ino, f"burstmeter.default@{tid}", rfd)
    finally:
        if rfd is not None:
            os.close(rfd)
    try:
        with open(outf) as fh:
            o = json.load(fh)
    except (OSError, ValueError) as e:
        warn(f"detect {kind} {' '.join(flags)}: no outcome ({e}); rc {rc}: {err.strip()[-300:]}")
        return None
    return judge(kind, o, read_stamp(stampf), t_mk, t_end, " ".join(flags) or "(default)")


def judge(kind, o, st, t_mk, t_end, what):
    """the figures of one trial, in ms, from the outcome and the stamps"""
    acts = o.get("actions") or []
    want = {"pids": ("kill",), "mem": ("kill",), "cpu": ("freeze",)}[kind]
    act = next((a for a in acts if a.get("action") in want), None)
    reason = (o.get("termination") or {}).get("reason")
    r = dict(reason=reason, by=(o.get("termination") or {}).get("by"), act=None,
             spawn=(st["exec"] - t_mk) / 1e6 if t_mk and st["exec"] else None,
             at_ms=act["at_ms"] if act else None, wall_ms=(o.get("wall_seconds") or 0) * 1e3)
    if kind == "cpu":
        # the breach: the first instant the hog's CPU time within one window passed it
        t0 = st["cross"]
        r["nobreach"] = not t0
        r["seen"] = (st["frozen"] - t0) / 1e6 if st["frozen"] and t0 else None
        r["cross_edge"] = (t0 - st["edge"]) / 1e6 if t0 else None
        r["edge"] = (t_mk + act["at_ms"] * 1e6 - st["edge"]) / 1e6 if act and t_mk else None
        if r["nobreach"]:
            # a busy machine never gave it more than one core in a window: nothing to act on
            # (a freeze anyway: the meter's count and the hog's differ at the margin; counted)
            r["unasked"] = bool(act)
            return r
        if not act:
            # over 1.0 core by the hog's count but not frozen: at the margin (the meter's
            # count and the hog's may differ by a tick), or clearly over: a miss
            r["missed"] = True
            r["max_cores"] = st["cpu_max_us"] * 1000 / 10e6
            if r["max_cores"] > 1.1:
                warn(f"detect cpu {what}: {r['max_cores']:.2f} cores in a window by the hog's count, "
                     "and no freeze")
            return r
    else:
        # the breach: the first fork a v1 pids.max refused, else the step past the ceiling
        t0 = st["refused"] or st["cross"]
        r["end"] = (t_end - t0) / 1e6 if t_end and t0 else None
        r["peak"] = (o.get("peak") or {}).get("pids" if kind == "pids" else "memory_bytes")
        r["rate"] = st["mib_per_s"]
        want_reason = "pids_ceiling" if kind == "pids" else "memory_ceiling"
        if reason != want_reason:
            # the evidence, since the outcome file goes with the temporary directory
            warn(f"detect {kind} {what}: ended '{reason}', not '{want_reason}': wall_seconds "
                 f"{o.get('wall_seconds')}, peak {json.dumps(o.get('peak'))}, actions "
                 f"{json.dumps(acts)}, exit {json.dumps(o.get('exit'))}, meter {json.dumps(o.get('meter'))}, "
                 f"breach stamped {'yes' if t0 else 'no'} at +{(t0 - st['exec']) / 1e6 if t0 else 0:.1f} ms "
                 f"after exec, {st['forks']} forks")
            r["wrong_end"] = True
    r["t0_seen"] = bool(t0)
    if act and t0 and t_mk:
        r["act"] = (t_mk + act["at_ms"] * 1e6 - t0) / 1e6
        # what the outcome alone says: at_ms from the effect's start, minus the breach
        # measured from the command's exec (so it includes the spawn: an upper bound)
        r["ub"] = act["at_ms"] - (t0 - st["exec"]) / 1e6
        r["observed"] = act.get("observed")
    else:
        r["act"] = None
        # a v1 controller's OOM kill may end the effect before the ladder acts: not a failure
        r["oom_first"] = not act and what == "(default)" and r["by"] == "kernel"
        if not act and not r["oom_first"]:
            warn(f"detect {kind} {what}: no {want[0]} action in the outcome ({reason})")
    return r


def post_watch(sock, body, ino, cg_name, timeout=30):
    """POST /v1/effects while watching for the effect's cgroup: (status, t_mk)"""
    ino.names()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.sendall(http_request("POST", "/v1/effects", body))
    po = select.poll()
    po.register(ino.fd, select.POLLIN)
    po.register(s.fileno(), select.POLLIN)
    buf, t_mk, done = b"", None, False
    deadline = time.monotonic() + timeout
    fifo = set_fifo(True)
    try:
        while not done and time.monotonic() < deadline:
            for fd, ev in po.poll(50):
                now = time.monotonic_ns()
                if fd == ino.fd:
                    if cg_name in ino.names() and t_mk is None:
                        t_mk = now
                else:
                    chunk = s.recv(1 << 16)
                    buf += chunk
                    done = not chunk
    finally:
        if fifo:
            set_fifo(False)
        s.close()
    if t_mk is None and cg_name in ino.names():
        t_mk = time.monotonic_ns()
    head = buf.partition(b"\r\n\r\n")[0]
    return (int(head.split()[1]) if head.startswith(b"HTTP/") else -1), t_mk


def agent_cpu_trial(agent, ino, cpu_bin):
    tid = trial_id("c")
    stampf = new_stamp()
    st, t_mk = post_watch(agent.sock, {"id": tid, "argv": [cpu_bin, "cpu", stampf, DETECT_CPU_S, "2", "10"]},
                          ino, f"burstmeter.uid-0@{tid}")
    if st not in (201, 202):
        warn(f"detect cpu: POST answered {st}")
        return None
    t_end = time.monotonic() + 30
    while time.monotonic() < t_end:
        code, e = api(agent.sock, "GET", f"/v1/effects/{tid}")
        if code == 200 and e.get("state") in FINAL:
            if not isinstance(e.get("outcome"), dict):
                break
            return judge("cpu", e["outcome"], read_stamp(stampf), t_mk, None, "agent")
        time.sleep(0.02)
    warn(f"detect cpu: no outcome for {tid}")
    return None


def detect(b, res):
    dbin = os.path.join(b, "bench", "bm-detect")
    cpu_bin = Tmp.path("bm-detect-cpu")     # the policy's rule matches this tool name
    if not os.path.exists(cpu_bin):
        os.symlink(dbin, cpu_bin)
    policy = Tmp.path("cpu-policy.yaml")
    with open(policy, "w") as fh:
        fh.write(CPU_POLICY)
    ino = Inotify(own_cgroup())
    out = res["detect"] = {}
    t0 = time.monotonic()
    try:
        confs = [("fast", ["--meter-only"]), ("user", ["--meter-only", "--no-fast-path"]), ("ctl", [])]
        for kind in ("pids", "mem"):
            rows = {c: [] for c, _ in confs}
            n, nuser, nctl = CFG["detect_n"], CFG["detect_user_n"], CFG["detect_ctl_n"]
            log(f"detect {kind}: {n} trials of the fast path, {nuser} of --no-fast-path (--meter-only), "
                f"{nctl} with the v1 controller, alternated")
            for r in range(n):
                for c, flags in rotate(confs, r):
                    if (c == "ctl" and r >= nctl) or (c == "user" and r >= nuser):
                        continue
                    t = detect_trial(kind, flags, ino, dbin)
                    if t:
                        rows[c].append(t)
                if (r + 1) % 10 == 0 or r + 1 == n:
                    log(f"detect {kind} {r + 1}/{n}: breach -> action p50 " + ", ".join(
                        f"{c} {median([x['act'] for x in v if x['act'] is not None]):.1f} ms"
                        for c, v in rows.items() if v))
            out[kind] = rows
            log(f"detect {kind} took {time.monotonic() - t0:.0f} s")
            t0 = time.monotonic()
        # the CPU ladder through the agent (its policy for every effect; cheap trials: no BPF
        # load each), and a few standalone `run --policy` beside it
        agent = Agent("detect", policy=policy).start()
        rows = {"agent": [], "run": []}
        try:
            n, npeer = CFG["detect_n"], CFG["detect_cpu_peer_n"]
            want = {"agent": n, "run": npeer}
            counted = lambda c: sum(1 for x in rows[c] if x.get("act") is not None)
            log(f"detect cpu: {n} trials through the agent, {npeer} standalone (run --policy), alternated "
                "(a trial the busy machine kept under 1.0 core is run again, up to 1.5 times as many)")
            for r in range(int(1.5 * n)):
                todo = [c for c in ("agent", "run") if counted(c) < want[c] and len(rows[c]) < 1.5 * want[c]]
                if not todo:
                    break
                for c in rotate(todo, r):
                    t = (agent_cpu_trial(agent, ino, cpu_bin) if c == "agent" else
                         detect_trial("cpu", [], ino, dbin, cpu_bin, policy))
                    if t:
                        rows[c].append(t)
                if (r + 1) % 20 == 0:
                    log(f"detect cpu round {r + 1}: breach -> freeze p50 " + ", ".join(
                        f"{c} {median([x['act'] for x in v if x['act'] is not None]):.1f} ms "
                        f"({counted(c)} counted)" for c, v in rows.items() if v))
            for c in ("agent", "run"):
                if counted(c) < want[c]:
                    warn(f"detect cpu {c}: only {counted(c)} of {len(rows[c])} trials went over 1.0 core "
                         f"(wanted {want[c]}): the machine was busy")
        finally:
            agent.stop()
        out["cpu"] = rows
        log(f"detect cpu took {time.monotonic() - t0:.0f} s")
    finally:
        ino.close()


# ---------------------------------------------------------------- 7. scale
def scale(b, res):
    out = res["scale"] = []
    agentc = os.path.join(b, "bench", "bm-agentc")
    # copies, like burstmeter's: a rebuild during the run changes nothing
    sleeper, spike = Tmp.path("bm-sleeper"), Tmp.path("bm-spike")
    # statically linked (bench/run.sh): what a start of one costs is the workload's
    shutil.copy2(os.path.join(b, "bench", "bm-sleeper-static"), sleeper)
    shutil.copy2(os.path.join(b, "bench", "bm-spike-static"), spike)
    import resource
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    t_sec = time.monotonic()
    prev = None
    for n in CFG["scale_steps"]:
        left = CFG["scale_budget"] - (time.monotonic() - t_sec)
        want = n
        if prev and prev.get("running"):
            # what fits: the time at the rate the last step ended with, the agent's fds (the
            # hard RLIMIT_NOFILE: raising it needs CAP_SYS_RESOURCE), the node's memory
            prog = prev.get("progress") or []
            rate = ((prog[-1][0] - prog[-2][0]) / (prog[-1][1] - prog[-2][1]) if len(prog) >= 2
                    else prev["posted"] / prev["submit_s"])
            per_fd = (prev["fds"] - 64) / prev["running"]
            per_mem = prev["mem_used"] / prev["running"]
            limits = {"time": int(rate * max(0.0, left - scale_tail(n))),
                      "fds": int((nofile - 256) / max(1.0, per_fd)),
                      "memory": int(0.5 * meminfo("MemAvailable") * 1024 / max(1.0, per_mem))}
            why = min(limits, key=limits.get)
            if limits[why] < n:
                want = limits[why]
                reason = (f"{n} do not fit: at the last step's {rate:.0f}/s, {per_fd:.1f} fds and "
                          f"{per_mem / 2**20:.1f} MiB per effect, the {why} allows ~{limits[why]} "
                          f"(time {limits['time']}, fds {limits['fds']} of RLIMIT_NOFILE {nofile}, "
                          f"memory {limits['memory']})")
                if want <= prev["n"]:
                    warn(f"scale {n}: not run: {reason}")
                    out.append(dict(n=n, skipped=reason))
                    continue
                warn(f"scale {n}: {reason}: running {want} instead")
        if left < 20:
            warn(f"scale {n}: not run, the section's time budget ({CFG['scale_budget']} s) is spent")
            out.append(dict(n=n, skipped="time budget spent"))
            continue
        prev = scale_step(want, left, agentc, sleeper, spike, nofile)
        prev["asked"] = n
        out.append(prev)


def scale_hold_ms(n):
    """how long the last effect posted sleeps: room for the measurements at the peak"""
    return 3000 + n // 2


def scale_tail(n):
    """seconds a step of n needs after its submissions: the hold, the measurements at the
    peak, a drain of n/400 s (1,000 took 4 s; 10,000 took 64 s, which the window leaves room
    for: their posting took 79 of the ~140 s it allowed), agent start/stop"""
    return scale_hold_ms(n) / 1e3 + 3.0 + n / 400 + 8


def scale_step(n, budget, agentc, sleeper, spike, nofile):
    """up to n effects at once through one agent, within budget seconds"""
    hold_ms, settle = scale_hold_ms(n), 3.0
    # as the DaemonSet runs it (cgroup_parent: /burstmeter): effects under a node cgroup of
    # their own, never the hierarchy's root, whose children's cpu.stat reads cost O(siblings)
    # each (the root's own cpu.stat cannot flush them; a parent's does, finish.c)
    agent = Agent(f"scale{n}", max_running=n + 64, max_queued=n + 64, nofile=nofile,
                  extra=f"cgroup_parent: /bmb{os.getpid()}-scale{n}\n").start()
    r = dict(n=n, nofile=nofile)
    sub = None
    try:
        pid = agent.p.pid
        r["rss0"] = proc_status(pid).get("VmRSS", 0)
        r["cpu0"] = proc_cpu_s(pid)
        r["memlock0"] = map_memlock(pid)[0]
        lost0 = agent.metric("burstmeter_meter_lost_records_total")
        # the agent's pace now, from 20 effects of /bin/true: every sleeper is to end at about
        # the same time, when twice that pace would have posted them all plus hold_ms
        p = subprocess.run([agentc, agent.sock, "rate", "20", f"bmb{os.getpid()}-p{n}"],
                           capture_output=True, text=True)
        m = re.search(r"rate (\d+) (\d+) (\d+)", p.stdout)
        # one client's pace; SCALE_JOBS of them overlap, about twice as fast here
        r["probe_rate"] = 2 * int(m.group(1)) / (int(m.group(2)) / 1e9) if m else 20.0
        mem0 = meminfo("MemAvailable")
        # submissions stop at the deadline; everything ends about hold_ms after it (or after
        # the last submission): the drain that follows has the rest of the budget
        t0 = time.monotonic_ns()
        window = min(max(5.0, budget - scale_tail(n)), 2.0 * n / r["probe_rate"])
        deadline = t0 + int(window * 1e9)
        target = deadline + hold_ms * 1000000
        spike_every = max(50, n // 10)   # at most 10 bursting effects: 2 ms each 100 ms, 0.2 CPU
        log(f"scale {n}: submitting (bm-sleeper, every {spike_every}th bm-spike) for at most "
            f"{(deadline - t0) / 1e9:.0f} s, all overlapping until they end together")
        p = sub = spawn([agentc, agent.sock, "submit", str(n), f"bmb{os.getpid()}-s{n}", str(target),
                         str(hold_ms), str(spike_every), sleeper, spike, str(deadline), str(SCALE_JOBS)],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        min_mem, prog = mem0, []
        while p.poll() is None:
            time.sleep(0.5)
            min_mem = min(min_mem, meminfo("MemAvailable"))
        sub_out, sub_err = p.communicate()
        end(p)
        for line in sub_out.splitlines():
            f = line.split()
            if f[0] == "progress":
                prog.append((int(f[1]), int(f[2]) / 1e9))
            elif f[0] == "submit":
                r["posted"], r["submit_s"], r["ok"], r["refused"] = int(f[1]), int(f[2]) / 1e9, int(f[3]), int(f[4])
        if "posted" not in r:
            raise RuntimeError(f"scale {n}: bm-agentc submit said nothing: {sub_err.strip()[-300:]}")
        if r["refused"]:
            warn(f"scale {n}: {r['refused']} submissions refused: {sub_err.strip()[-300:]}")
        if r["posted"] < n:
            warn(f"scale {n}: {r['posted']} of {n} submitted in the {(deadline - t0) / 1e9:.0f} s this step "
                 "had for submissions (the agent slowed down as effects piled up)")
        r["progress"] = prog
        # at the peak: everything submitted is running, sleeping until the target
        h = agent.health()
        r["running"] = h.get("running", 0)
        st = proc_status(pid)
        r["rss"], r["fds"] = st.get("VmRSS", 0), len(os.listdir(f"/proc/{pid}/fd"))
        r["memlock"], r["memlock_per"] = map_memlock(pid)
        r["shims_pss"] = shims_pss(pid)
        scrapes = []
        for _ in range(10):
            if shutil.which("curl"):
                c = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{time_total}",
                                    f"http://127.0.0.1:{agent.port}/metrics"], capture_output=True, text=True)
                try:
                    scrapes.append(float(c.stdout) * 1e3)
                except ValueError:
                    pass
            else:   # (tools/deps.sh does not install curl) the same GET from here
                scrapes.append(agent.metrics()[1] * 1e3)
        r["scrape_ms"] = scrapes
        r["mem_used"] = (mem0 - min(min_mem, meminfo("MemAvailable"))) * 1024
        # while they all sleep: what the agent costs, and how many meters it reads
        span = min(2.0, (target - time.monotonic_ns()) / 1e9 - 0.5)
        if span >= 0.5:
            c0, m0 = proc_cpu_s(pid), agent.metric("burstmeter_meter_reads_total")
            time.sleep(span)
            r["idle_cpu"] = (proc_cpu_s(pid) - c0) / span
            r["reads_s"] = (agent.metric("burstmeter_meter_reads_total") - m0) / span
        if time.monotonic_ns() > target:
            warn(f"scale {n}: the peak was measured after the first effects began to end")
        log(f"scale {n}: {r['posted']} submitted in {r['submit_s']:.1f} s, {r['running']} running; agent "
            f"RSS {r['rss'] / 1024:.0f} MiB, {r['fds']} fds, maps {r['memlock'] / 2**20:.1f} MiB, "
            f"/metrics {median(scrapes):.1f} ms")
        # the hierarchies an effect has cgroups in (its v1 twins beside the v2 one), for the floor
        r["hier"] = effect_hierarchies(pid, f"@bmb{os.getpid()}-s{n}")
        # the drain: every effect ends about now; until the agent has finished them all
        t_drain = time.monotonic()
        ok = agent.wait_idle(max(30.0, budget - (time.monotonic_ns() - t0) / 1e9))
        r["drain_s"] = time.monotonic() - max(t_drain, target / 1e9)
        if not ok:
            warn(f"scale {n}: effects still running at the end of the budget")
        r["hwm"] = proc_status(pid).get("VmHWM", 0)
        r["cpu"] = proc_cpu_s(pid) - r["cpu0"]
        r["wall"] = (time.monotonic_ns() - t0) / 1e9
        r["lost"] = agent.metric("burstmeter_meter_lost_records_total") - lost0
        r["memlock_end"] = map_memlock(pid)[0]
        log(f"scale {n}: drained in {r['drain_s']:.1f} s; agent CPU {r['cpu']:.1f} s over "
            f"{r['wall']:.0f} s, VmHWM {r['hwm'] / 1024:.0f} MiB, lost records {r['lost']:.0f}")
    finally:
        if sub is not None and sub.poll() is None:
            end(sub)   # no new effects while the agent stops
        agent.stop(timeout=60)
    # the kernel's own floor for that drain: as many processes, each alone in cgroups of the
    # same hierarchies, killed at once, reaped and removed (bench/cgdrain.c); no agent
    # (-n: each also in a PID and a mount namespace with an init and its /proc, as a sandbox)
    for key, flag in (("floor", []), ("floor_ns", ["-n"])):
        if not (r.get("running") and r.get("hier")):
            break
        log(f"scale {n}: the kernel's floor: {r['running']} processes in {', '.join(r['hier'])} {flag}")
        p = subprocess.run([os.path.join(os.path.dirname(agentc), "bm-cgdrain")] + flag + [str(r["running"])]
                           + r["hier"], capture_output=True, text=True, timeout=600)
        m = re.search(r"made ([0-9.]+)\s+drained ([0-9.]+)", p.stdout)
        if m:
            r[key] = {"made": float(m.group(1)), "drained": float(m.group(2))}
        else:
            warn(f"scale {n}: bm-cgdrain: {(p.stdout + p.stderr).strip()[-300:]}")
    return r


def effect_hierarchies(agent_pid, mark):
    """"unified" and each v1 controller in which the agent's effects (names holding mark) have
    a cgroup beside the agent's own"""
    out = ["unified"]
    try:
        with open(f"/proc/{agent_pid}/cgroup") as fh:
            lines = [x.rstrip("\n").split(":", 2) for x in fh]
    except OSError:
        return out
    for _, ctrls, path in lines:
        for c in ("cpu", "memory", "pids", "blkio"):
            if c not in ctrls.split(","):
                continue
            try:
                if any(mark in e for e in os.listdir(f"/sys/fs/cgroup/{c}{path}")):
                    out.append(c)
            except OSError:
                pass
    return out


def meminfo(key):
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def child_pids(pid):
    out = []
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as fh:
                out += [int(x) for x in fh.read().split()]
    except OSError:
        pass
    return out


def comm_of(pid):
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def pss_kb(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            return next((int(line.split()[1]) for line in fh if line.startswith("Pss:")), 0)
    except OSError:
        return 0


def shims_pss(agent_pid, sample=300):
    """kB: the proportional set size of the agent's bm-spawner and of the effects' shims
    (bm-shim: the spawner's children, or the agent's own when it has none). The shims are
    alike: at most `sample` of them are read (a walk of 10,000 took seconds), and scaled"""
    tot, shims = 0, []
    for k in child_pids(agent_pid):
        c = comm_of(k)
        if c == "bm-spawner":
            tot += pss_kb(k)
            shims += [s for s in child_pids(k) if comm_of(s) == "bm-shim"]
        elif c == "bm-shim":
            shims.append(k)
    picked = shims[::max(1, len(shims) // sample)][:sample]
    if picked:
        tot += sum(pss_kb(k) for k in picked) * len(shims) / len(picked)
    return (tot, len(shims))


# ---------------------------------------------------------------- the table
def table(res, b, meta):
    W = []
    notes = []

    def row(fig, val, peer, pval, ratio, cmd):
        W.append((fig, val, peer, pval, ratio, cmd))

    def alone_mark(shared, n):
        k = sum(shared.values())
        return f" *{k}/{n}" if k else ""

    for k in res["kcost"]:
        p = k["per"]
        n = len(k["ratio"])
        mark = alone_mark(k["shared"], 3 * n)
        row(f"kernel ns/switch, {k['load']}, n={n}{mark}", spread(p["burstmeter"]), "runqlat",
            spread(p["runqlat"]), spread(k["ratio"], "{:.2f}"), k["cmd"])
        row(f"  floor: empty tp_btf, {k['load']}", spread(p["empty"]), "runqlat",
            spread(p["runqlat"]), spread(k["floor"], "{:.2f}"), k["cmd"])
    for t in res["tput"]:
        r = t["rate"]
        n = len(t["bvr"])
        mark = alone_mark(t["shared"], 4 * n)
        row(f"ops/s, {t['load']}, burstmeter vs nothing, n={n}{mark}", spread(r["burstmeter"]),
            "nothing", spread(r["none"]), spread(t["rel"]["burstmeter"], "{:.3f}"), t["cmd"])
        row(f"  runqlat vs nothing", spread(r["runqlat"]), "nothing", spread(r["none"]),
            spread(t["rel"]["runqlat"], "{:.3f}"), "")
        row(f"  burstmeter vs runqlat", spread(r["burstmeter"]), "runqlat",
            spread(r["runqlat"]), spread(t["bvr"], "{:.3f}"), "")
        row(f"  cgroup only vs nothing", spread(r["cgroup"]), "nothing", spread(r["none"]),
            spread(t["rel"]["cgroup"], "{:.3f}"), "CMD in a child cgroup, no BPF")
        row(f"  burstmeter vs cgroup only", spread(r["burstmeter"]), "cgroup only",
            spread(r["cgroup"]), spread(t["bvc"], "{:.3f}"), "")
    if res.get("launch"):
        L = res["launch"]
        bm = next(x for x in L if x["name"] == "burstmeter run")
        cl = next((x for x in L if x["name"] == "run --socket"), None)
        fk = next((x for x in L if x["name"] == "fork/exec"), None)
        fmt = lambda x: f"{median(x['ms']):.1f} ms, p90 {pctl(x['ms'], 90):.1f}"
        by = {x["name"]: x for x in L}
        sandboxed = (by.get("run, full sandbox"), by.get("run --socket, full sandbox"))
        for x in L:
            if x is bm or x is cl or x in sandboxed:
                continue
            row(f"launch /bin/true, n={len(bm['ms'])}", fmt(bm), x["name"], fmt(x),
                f"{median(bm['ms']) / median(x['ms']):.1f}", f"{bm['cmd']}  |  {x['cmd']}")
        if cl:
            row(f"launch /bin/true, client mode, n={len(cl['ms'])}", fmt(cl), "run --standalone", fmt(bm),
                f"{median(cl['ms']) / median(bm['ms']):.2f}", f"{cl['cmd']}  |  {bm['cmd']}")
            if fk:
                row("  client mode vs fork/exec", fmt(cl), "fork/exec", fmt(fk),
                    f"{median(cl['ms']) / median(fk['ms']):.1f}", f"agent of this bench at S")
        # the full sandbox (W: a workspace under /tmp), against the sandboxing tools alone
        peers = [by[n] for n in ("bwrap, same sandbox", "bwrap", "unshare -mpf") if n in by]
        for sb, plain, what in ((sandboxed[0], bm, "standalone"), (sandboxed[1], cl, "client mode")):
            if not sb or not plain:
                continue
            for x in peers:
                row(f"launch, full sandbox, {what}, n={len(sb['ms'])}", fmt(sb), x["name"], fmt(x),
                    f"{median(sb['ms']) / median(x['ms']):.1f}", f"{sb['cmd']}  |  {x['cmd']}")
            row(f"  the sandbox's own cost, {what}", f"{median(sb['ms']) - median(plain['ms']):+.1f} ms",
                plain["name"], fmt(plain), f"{median(sb['ms']) / median(plain['ms']):.2f}",
                "the same run with and without the sandbox flags")
            if "bwrap, same sandbox" in by:
                bw = by["bwrap, same sandbox"]
                row(f"  the meter's overhead, {what}", f"{median(sb['ms']) - median(bw['ms']):+.1f} ms",
                    "bwrap, same sandbox", fmt(bw), f"{median(sb['ms']) / median(bw['ms']):.1f}",
                    "over the same sandbox alone: cgroup, meter, "
                    + ("BPF load, outcome" if what == "standalone" else "the agent's attach, outcome"))
    if res.get("kload"):
        K = res["kload"]
        S = K["start"]
        fmt = lambda x: f"{median(x):.1f} ms, p90 {pctl(x, 90):.1f}" if x else "n/a"
        ratio = lambda a, b: f"{median(a) / median(b):.1f}" if a and b else "n/a"
        for name in ("run, fresh meter", "run, kept meter"):
            for peer in ("bwrap", "fork/exec"):
                if name in S and peer in S:
                    row(f"start /bin/true, {name}, n={len(S[name])}", fmt(S[name]), peer, fmt(S[peer]),
                        ratio(S[name], S[peer]), f"{K['cmds'][name]}  |  {K['cmds'][peer]}")
        one = "run, fresh meter, one object"
        if one in S and "run, fresh meter" in S:
            row(f"  two objects at once vs one, n={len(S[one])}", fmt(S["run, fresh meter"]), "one object",
                fmt(S[one]), ratio(S["run, fresh meter"], S[one]), K["cmds"][one])
        if K["load_ms"]:
            row(f"  meter load (open to attached), n={len(K['load_ms'])}", fmt(K["load_ms"]),
                "runqlat start", fmt(K["runqlat_ms"]), ratio(K["load_ms"], K["runqlat_ms"]),
                "burstmeter -v run --fresh-meter  |  runqlat: exec to its first line")
        tot_i = sum(median([x[0] for x in v]) for v in K["progs"].values())
        tot_t = sum(median([x[1] for x in v]) for v in K["progs"].values())
        for name, v in sorted(K["progs"].items(), key=lambda kv: -median([x[1] for x in kv[1]])):
            row(f"  verify {name}", f"{median([x[1] for x in v]):.1f} ms", "verified_insns",
                f"{median([x[0] for x in v]):.0f}", f"{median([x[1] for x in v]) / tot_t:.2f}",
                "share of the verifier's time")
        row("  verify, all programs", f"{tot_t:.1f} ms", "verified_insns", f"{tot_i:.0f}", "1.00", "")
    if res.get("launch_api"):
        A = res["launch_api"]
        fmt = lambda x: f"{median(x):.1f} ms, p90 {pctl(x, 90):.1f}" if x else "n/a"

        def vs(a, b):
            if not a or not b:
                return "n/a"
            return f"{median(a) / median(b):.1f} (+{median(a) - median(b):.1f} ms)"
        row(f"agent: POST -> outcome, n={len(A['post_end'])}", fmt(A["post_end"]), "fork/exec+wait",
            fmt(A["fork"]), vs(A["post_end"], A["fork"]),
            "POST /v1/effects {argv: [/bin/true]}, then GET /v1/effects/ID/events to the outcome line  |  "
            "fork, exec /bin/true, waitpid (build/bench/bm-agentc launch, alternated)")
        row("  POST -> command exec'd (goal: +0.5 ms)", fmt(A["post_exec"]), "fork -> exec'd",
            fmt(A["fork_exec"]), vs(A["post_exec"], A["fork_exec"]),
            "command: build/bench/bm-detect stamp FILE (CLOCK_MONOTONIC at its start)")
        row("  POST round trip (201)", fmt(A["post"]), "", "", "", "")
    if res.get("launch_rate"):
        R = res["launch_rate"]
        row(f"agent: submissions/s, {R['n']} x /bin/true", f"{R['n'] / R['posted']:.0f}/s", "all ended",
            f"{R['n'] / R['done']:.0f}/s", "",
            f"POSTs one after another (bm-agentc rate): posted in {R['posted']:.1f} s, all ended after "
            f"{R['done']:.1f} s; max_running {max(64, CFG['rate_n'] + 16)}")
    if res.get("spikes") and res["spikes"]["rows"]:
        s = res["spikes"]
        rows = s["rows"]
        n = len(rows)
        bh, sh = sum(r["bm_hit"] for r in rows), sum(r["s_hit"] for r in rows)
        in10 = median([r["in10"] for r in rows])
        row(f"{SPIKE_MIB} MiB spikes seen within 10%, n={n}", f"{bh}/{n} = {bh / n:.2f}",
            "1 s sampler", f"{sh}/{n} = {sh / n:.2f} (expect {in10 / 1000:.2f})",
            f"{bh / sh:.1f}" if sh else "inf (sampler: none)", s["cmd"])
        ih = sum(r["ideal"] for r in rows)
        row("  1 s sampler, ideal", "", "same instants", f"{ih}/{n} = {ih / n:.2f}", "",
            "sampled on time from the spike's own clock; latest real sample "
            f"{1e3 * max(r['late'] for r in rows):.1f} ms late")
        row("  peak reported, MiB", spread([r["peak"] / 2**20 for r in rows]),
            "1 s sampler", spread([r["sampled"] / 2**20 for r in rows]), "",
            f"truth {SPIKE_MIB} MiB; resident {spread([r['held'] for r in rows])} ms, "
            f"within 10% of it {spread([r['in10'] for r in rows])} ms")
        notes.append("1 s sampler: the sum of VmRSS (/proc/PID/status) over the effect's "
                     "cgroup.procs, sampled every 1 s at a random phase; the cgroup's own memory "
                     "counter is not there (hybrid host: no v2 memory controller). 'expect' = "
                     "median time within 10 % of the peak / 1 s.")

    D = res.get("detect") or {}

    def vals(rows, key):
        return [x[key] for x in rows if x.get(key) is not None]

    def pp(xs):
        return f"p50 {pctl(xs, 50):.1f}, p99 {pctl(xs, 99):.1f} ms" if xs else "n/a"

    def r99(a, b):
        return f"{pctl(a, 99) / pctl(b, 99):.2f} (p99)" if a and b and pctl(b, 99) > 0 else ""
    verdicts = []
    for kind, label in (("pids", f"tasks > {DETECT_PIDS}"), ("mem", f"memory > {DETECT_MIB} MiB")):
        R = D.get(kind)
        if not R or not (R["fast"] or R["user"]):
            continue
        f, u, c = R["fast"], R["user"], R["ctl"]
        lim = f"--pids {DETECT_PIDS}" if kind == "pids" else f"--memory {DETECT_MIB}M"
        wl = (f"bm-detect pids STAMP FIFO {DETECT_PIDS} 2" if kind == "pids" else
              f"bm-detect mem STAMP FIFO {DETECT_MIB} {4 * DETECT_MIB}")
        wrong = {c: sum(1 for x in R[c] if x.get("wrong_end")) for c in R}
        row(f"detect {label}: breach -> kill, n={len(f)}", pp(vals(f, "act")), f"--no-fast-path, n={len(u)}",
            pp(vals(u, "act")), r99(vals(f, "act"), vals(u, "act")),
            f"build/burstmeter run --meter-only [--no-fast-path] {lim} -- build/bench/{wl}"
            + "".join(f"; {wrong[c]} of {len(R[c])} {name} trials NOT stopped at the ceiling (warnings)"
                      for c, name in (("fast", "fast-path"), ("user", "--no-fast-path"), ("ctl", "default"))
                      if wrong.get(c)))
        row("  breach -> last task gone", pp(vals(f, "end")), "--no-fast-path", pp(vals(u, "end")),
            r99(vals(f, "end"), vals(u, "end")), "EOF of a FIFO every process of the effect holds open; "
            f"the outcome's wall_seconds: {pp(vals(f, 'wall_ms'))} | {pp(vals(u, 'wall_ms'))}")
        if kind == "pids":
            row("  tasks at the kill (peak.pids)", spread(vals(f, "peak")), "--no-fast-path",
                spread(vals(u, "peak")), "", f"ceiling {DETECT_PIDS}")
        else:
            ov = lambda rows: [(x - (DETECT_MIB << 20)) / 2**20 for x in vals(rows, "peak")]
            row("  overshoot: peak.memory_bytes - 128 MiB", spread(ov(f), "{:.1f}") + " MiB", "--no-fast-path",
                spread(ov(u), "{:.1f}") + " MiB", "",
                f"filled at {spread(vals(f + u, 'rate'))} MiB/s (huge pages, warm: see README)")
        row("  outcome alone: at_ms - breach since exec", pp(vals(f, "ub")), "--no-fast-path",
            pp(vals(u, "ub")), "",
            f"an upper bound: counts the spawn too (cgroup mkdir -> exec {spread(vals(f + u, 'spawn'), '{:.1f}')} ms); "
            f"at_ms itself: {pp(vals(f, 'at_ms'))} | {pp(vals(u, 'at_ms'))}")
        if c:
            ctl = "v1 pids.max" if kind == "pids" else "v1 memory.limit_in_bytes"
            oom = sum(1 for x in c if x.get("oom_first"))
            row(f"  {ctl} holds it (default), n={len(c)}", pp(vals(c, "act")), "fast path",
                pp(vals(f, "act")), "", f"build/burstmeter run {lim} -- ...: the kernel refuses/OOM-kills; "
                + (f"{oom} of {len(c)} ended by the OOM killer before any action; " if oom else "")
                + f"burstmeter's kill follows. last task gone {pp(vals(c, 'end'))}; peak "
                + (spread(vals(c, "peak")) if kind == "pids" else
                   spread([(x - (DETECT_MIB << 20)) / 2**20 for x in vals(c, "peak")], "{:.1f}") + " MiB over"))
        fa, ua = vals(f, "act"), vals(u, "act")
        fe, ue = vals(f, "end"), vals(u, "end")
        if fa and ua:
            better = pctl(fa, 99) < pctl(ua, 99) and pctl(fe, 99) <= pctl(ue, 99)
            verdicts.append(f"{kind}: kernel fast path {'beats' if better else 'does NOT beat'} userspace "
                            f"(breach -> kill p99 {pctl(fa, 99):.1f} vs {pctl(ua, 99):.1f} ms, last task gone "
                            f"p99 {pctl(fe, 99):.1f} vs {pctl(ue, 99):.1f} ms"
                            + (f", tasks at the kill median {median(vals(f, 'peak')):.0f} vs "
                               f"{median(vals(u, 'peak')):.0f})" if kind == "pids" else
                               f", overshoot median {median([(x - (DETECT_MIB << 20)) / 2**20 for x in vals(f, 'peak')]):.1f}"
                               f" vs {median([(x - (DETECT_MIB << 20)) / 2**20 for x in vals(u, 'peak')]):.1f} MiB)"))
        for name, xs in (("fast path", fa), ("--no-fast-path", ua)):
            if xs:
                verdicts.append(f"{kind} {name}: breach -> kill p99 {pctl(xs, 99):.1f} ms: goal p99 <= 20 ms "
                                + ("met" if pctl(xs, 99) <= 20 else "NOT met"))
    C = D.get("cpu")
    if C and C["agent"]:
        a, sr = C["agent"], C["run"]
        nb = sum(1 for x in a + sr if x.get("nobreach"))
        un = sum(1 for x in a + sr if x.get("unasked"))
        mi = sum(1 for x in a + sr if x.get("missed"))
        row(f"detect cpu > 1.0 core: breach -> freeze, n={len(vals(a, 'act'))}", pp(vals(a, "act")),
            f"run --policy, n={len(vals(sr, 'act'))}", pp(vals(sr, "act")), r99(vals(a, "act"), vals(sr, "act")),
            f"agent --policy P: POST bm-detect-cpu cpu STAMP {DETECT_CPU_S} 2 10 (P: cpu hard 1.0, "
            "steps [freeze])  |  build/burstmeter run --policy P -- the same"
            + (f"; {nb} trials never went over 1.0 core by the hog's count (busy machine; {un} of them "
               "frozen anyway), not counted" if nb else "")
            + (f"; {mi} went over by the hog's count (at most {max(x['max_cores'] for x in a + sr if x.get('missed')):.2f}"
               " cores) but were not frozen" if mi else ""))
        row("  first full window's edge -> freeze", pp(vals(a, "edge")), "run --policy", pp(vals(sr, "edge")),
            "", f"2 threads from a window edge: over 1.0 core at +{spread(vals(a + sr, 'cross_edge'), '{:.1f}')} ms")
        row("  the hog saw itself frozen", pp(vals(a, "seen")), "run --policy", pp(vals(sr, "seen")), "",
            "breach -> both spinning threads stopped at once (> 20 ms)")
        for name, xs in (("agent", vals(a, "act")), ("run --policy", vals(sr, "act"))):
            if xs:
                verdicts.append(f"cpu ({name}): breach -> freeze p99 {pctl(xs, 99):.1f} ms: goal p99 <= 20 ms "
                                + ("met" if pctl(xs, 99) <= 20 else "NOT met") + " (fast path: none for CPU)")
    for st in res.get("scale") or []:
        n = st["n"]
        if st.get("skipped"):
            row(f"scale {n} effects", "not run", "", "", "", st["skipped"])
            continue
        mib = lambda kb: f"{kb / 1024:.0f} MiB"
        asked = st.get("asked", n)
        row(f"scale {asked}" + (f" (ran {n}: see warnings)" if n != asked else "") + ": effects at once",
            f"{st['running']} running", "submitted", f"{st['posted']} in {st['submit_s']:.0f} s", "",
            f"bm-agentc submit: bm-sleeper until they all end together, every "
            f"{max(50, n // 40)}th bm-spike 2 100 (agent with max_running {n + 64}, "
            f"RLIMIT_NOFILE {st['nofile']})")
        prog = st.get("progress") or []
        if len(prog) >= 2:
            first = prog[0][0] / prog[0][1]
            last = (prog[-1][0] - prog[-2][0]) / (prog[-1][1] - prog[-2][1])
            row("  submissions/s: first 100, last 100", f"{first:.1f}/s", "last 100", f"{last:.1f}/s",
                f"{last / first:.2f}", f"{SCALE_JOBS} clients POSTing at once; the agent is single-threaded, "
                "launches overlap in its spawner")
        row("  agent VmRSS at the peak (VmHWM)", f"{mib(st['rss'])} ({mib(st['hwm'])})", "idle agent",
            mib(st["rss0"]), f"{st['rss'] / max(1, st['rss0']):.1f}",
            f"{(st['rss'] - st['rss0']) / max(1, st['running']):.0f} kB per effect; {st['fds']} fds")
        row("  kernel maps (bpftool bytes_memlock)", f"{st['memlock'] / 2**20:.2f} MiB", "idle agent",
            f"{st['memlock0'] / 2**20:.2f} MiB", f"{st['memlock'] / max(1, st['memlock0']):.2f}",
            ", ".join(f"{k} {v / 2**10:.0f}k" for k, v in sorted(st["memlock_per"].items(), key=lambda kv: -kv[1])[:4])
            + "; cgroup/task storage is not in memlock")
        pss, nsh = st["shims_pss"]
        row("  node memory used (MemAvailable drop)", f"{st['mem_used'] / 2**20:.0f} MiB", "shims' PSS",
            f"{pss / 1024:.0f} MiB ({nsh} shims, <= 300 read)", "",
            f"{st['mem_used'] / 2**20 / max(1, st['running']):.1f} MiB per effect, machine-wide (others' too)")
        row("  agent CPU (utime+stime)", f"{st['cpu']:.1f} s", "wall", f"{st['wall']:.0f} s",
            f"{st['cpu'] / st['wall']:.2f}", "from the agent's start to the end of the drain")
        if "idle_cpu" in st:
            row("  agent CPU while they sleep", f"{100 * st['idle_cpu']:.1f} %", "meter reads",
                f"{st['reads_s']:.0f}/s", "", "utime+stime over up to 2 s before they end; "
                "burstmeter_meter_reads_total (idle effects are not read)")
        row("  lost ring-buffer records", f"{st['lost']:.0f}", "", "", "", "burstmeter_meter_lost_records_total")
        row("  /metrics scrape at the peak, n=10", spread(st["scrape_ms"], "{:.1f}") + " ms", "", "", "",
            "curl -w '%{time_total}' http://127.0.0.1:PORT/metrics")
        fl, fn = st.get("floor"), st.get("floor_ns")
        row("  drain: all end -> agent idle", f"{st['drain_s']:.1f} s", "the kernel's floor" if fl else "",
            f"{fl['drained']:.1f} s" if fl else "", f"{st['drain_s'] / fl['drained']:.1f}" if fl else "",
            f"floor: bm-cgdrain {st['running']} {' '.join(st.get('hier') or [])} (as many processes, "
            "each alone in cgroups of those hierarchies, killed at once by cgroup.kill, reaped, "
            "rmdir'd; no agent)" if fl else "")
        if fn:
            row("  drain vs the floor with namespaces", f"{st['drain_s']:.1f} s", "floor, -n",
                f"{fn['drained']:.1f} s", f"{st['drain_s'] / fn['drained']:.1f}",
                "bm-cgdrain -n: each also in a PID and a mount namespace, an init with its own /proc")
    if verdicts:
        notes += verdicts
    hdr = ("figure", "burstmeter", "peer", "peer figure", "ratio", "command")
    widths = [max(len(str(r[i])) for r in W + [hdr]) for i in range(5)]
    lines = [f"burstmeter bench  {meta}",
             "values: median [min..max]; ratio = burstmeter / peer, taken per alternated round "
             "(kcost, ops/s) or of the medians (launch, spikes)",
             "kcost and ops/s: burstmeter = `build/burstmeter run -q -- sh -c CMD` (CMD inside the "
             "effect); runqlat = `runqlat` running, CMD beside it;",
             "  floor = `build/bench/bm-empty` (bench/empty.bpf.c) running, CMD beside it; "
             "nothing = CMD alone; cgroup only = CMD in a fresh child cgroup, no BPF.",
             "  Each tool attached alone, never two at once.",
             ""]
    for r in [hdr] + W:
        lines.append("  ".join(str(r[i]).ljust(widths[i]) for i in range(5)) + "  " + r[5])
    if any(sum(x["shared"].values()) for x in res["kcost"] + res["tput"]):
        notes.append("*k/N: k of the N samples of that load ran while another BPF tracing tool "
                     "was loaded on this machine (someone else's; retried twice first): "
                     "those samples did not have the tracepoints and CPUs to themselves.")
    lines += [""] + ["note: " + x for x in notes]

    # per-program breakdown of the kernel cost
    for k in res["kcost"]:
        for t in ("burstmeter", "runqlat", "empty"):
            bd = k["breakdown"][t]
            if not bd:
                continue
            lines.append("")
            lines.append(f"per program, {t}, {k['load']} (median of rounds): switches/round "
                         f"{median(k['sw'][t]):.0f} ({median(k['sw'][t]) / k['ops']:.1f} per op)")
            lines.append(f"  {'program':<18}{'runs/switch':>12}{'ns/run':>10}{'ns/switch':>11}")
            idle = []
            for n, v in sorted(bd.items(), key=lambda kv: -median([x[2] for x in kv[1]])):
                runs = [x for x in v if x[0] > 0]
                if not runs:
                    idle.append(n)
                    continue
                lines.append(f"  {n:<18}{median([x[0] for x in v]):>12.4f}"
                             f"{median([x[1] for x in runs]):>10.0f}"
                             f"{median([x[2] for x in v]):>11.1f}")
            if idle:
                lines.append(f"  not run: {', '.join(idle)}")
    lines += neighbours_table(res)
    lines += fairness_table(res)
    lines += kio_table(res)
    if WARNINGS:
        lines.append("")
        lines += ["warning: " + w for w in WARNINGS]
    print("\n".join(lines), flush=True)


# ---------------------------------------------------------------- neighbours
# An interactive neighbour (bm-pingpong: a request/response loop on loopback, 1 ms think
# time) alone, then beside each storm: once unbounded, once as an effect of an agent with
# ceilings and the default policy. The goal: its p99 within 2x of alone with burstmeter.
STORMS = (
    ("fork storm", ["stress-ng", "--fork", "4", "--timeout", "{t}s", "--quiet"],
     {"pids_limit": 64, "cpu_limit": "1"}),
    ("memory balloon", ["stress-ng", "--vm", "2", "--vm-bytes", "3G", "--vm-keep",
                        "--timeout", "{t}s", "--quiet"],
     {"memory_limit": "512Mi", "cpu_limit": "1"}),
    ("CPU storm", ["stress-ng", "--cpu", "4", "--timeout", "{t}s", "--quiet"],
     {"cpu_limit": "1"}),
    ("loopback flood", ["stress-ng", "--sock", "2", "--sock-domain", "ipv4", "--timeout", "{t}s",
                        "--quiet"], {"cpu_limit": "1"}),
)


def probe(b, secs):
    """bm-pingpong for secs: (p50 us, p99 us)"""
    out = subprocess.run([os.path.join(b, "bench", "bm-pingpong"), str(secs)],
                         capture_output=True, text=True, timeout=secs + 30).stdout.split()
    return float(out[0]), float(out[1])


def neighbours(b, res):
    secs = 3 if QUICK else 6
    rounds = 1 if QUICK else 3
    rows = []
    base = [probe(b, secs)[1] for _ in range(rounds)]
    agent = Agent("neighbours", max_running=8).start()
    try:
        for name, argv, sandbox in STORMS:
            cmd = [shutil.which(argv[0])] + [a.format(t=secs + 2) for a in argv[1:]]
            alone_p99, ours, quiet = [], [], []
            for r in range(rounds):
                # alone again beside each round: this VM's quiet p99 drifts (35-116 us in
                # one hour), so each round is a ratio against the quiet next to it
                quiet.append(probe(b, secs)[1])
                # unbounded: the storm as a process of the bench's own
                p = spawn(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(1)
                alone_p99.append(probe(b, secs)[1])
                end(p, timeout=20)
                # as an effect: the same storm, with ceilings and the default policy
                eid = f"bmb{os.getpid()}-n{len(rows)}-{r}"
                st, _ = api(agent.sock, "POST", "/v1/effects",
                            {"id": eid, "argv": cmd, "intent": f"neighbour bench: {name}",
                             # stress-ng refuses a temp-path it cannot write: "/" is not the
                             # tenant uid's
                             "cwd": "/tmp", "sandbox": dict(sandbox, timeout_seconds=secs + 10)})
                if st not in (201, 202):
                    raise RuntimeError(f"neighbours: {name}: POST {st}")
                time.sleep(1)
                ours.append(probe(b, secs)[1])
                api(agent.sock, "POST", f"/v1/effects/{eid}/cancel")
                agent.wait_idle(30)
            rows.append((name, median(alone_p99), median(ours), median(quiet),
                         median([x / q for x, q in zip(alone_p99, quiet)]),
                         median([x / q for x, q in zip(ours, quiet)])))
    finally:
        agent.stop()
    res["neighbours"] = {"base": median(base), "rows": rows, "secs": secs, "rounds": rounds}


def neighbours_table(res):
    n = res.get("neighbours")
    if not n:
        return []
    lines = ["", f"neighbours: bm-pingpong p99 (us) over {n['secs']} s, median of {n['rounds']}; "
             f"alone {n['base']:.0f} us at the start, and alone again before each round: x alone "
             "is the median of each round's ratio to its own; goal with burstmeter <= 2x alone",
             f"  {'beside':<16}{'alone':>7}{'unbounded':>11}{'x alone':>9}{'burstmeter':>12}"
             f"{'x alone':>9}"]
    for name, raw, ours, quiet, xraw, xours in n["rows"]:
        lines.append(f"  {name:<16}{quiet:>7.0f}{raw:>11.0f}{xraw:>9.2f}{ours:>12.0f}"
                     f"{xours:>9.2f}{'' if xours <= 2 else '  missed'}")
    return lines


# ---------------------------------------------------------------- fairness
# Three tenants on one agent (max_running 8, tenant_max_running 4): "burst" submits far
# beyond its share at once (16 calls of stress-ng --cpu 2 for 4 s: 32 threads' worth on 2
# CPUs), then "steady1" calls bm-spike (40 ms of CPU) every 0.5 s and "steady2" stress-ng's
# fft (100 ops) every 0.7 s, from FAIR_STEADY_AT on: by then the burster has spent the burst
# its budget allows (1 CPU-s), which by design it may take from its neighbours. Four
# phases, alternated each round: the steady ones alone; beside the burster with neither
# budgets nor fair CPU (budgets.fair_cpu off: fair admission still orders the starts); with
# fair CPU alone (the default: over its share, the burster yields); and with fair CPU and a
# CPU budget for the burster. The goal: each steady tenant's p99 and completion within 1.2x
# of alone with budgets.
FAIR_TENANTS = ("steady1", "steady2", "burst")
FAIR_MODES = ("alone", "none", "fair", "budgets")
FAIR_SHOWN = ("none", "fair", "budgets")
FAIR_LABEL = {"none": "neither", "fair": "fair CPU", "budgets": "budgets"}
FAIR_BUDGET = "cpu_seconds: { rate: 0.5, burst: 1 }"
FAIR_BURST_N = 16
FAIR_STEADY_AT = 2.0


def fair_argv(b, tenant):
    if tenant == "steady1":
        return [os.path.join(b, "workloads", "bm-spike"), "40", "40", "1"]
    if tenant == "steady2":
        return [shutil.which("stress-ng"), "--cpu", "1", "--cpu-method", "fft", "--cpu-ops", "100",
                "--quiet"]
    return [shutil.which("stress-ng"), "--cpu", "2", "--timeout", "4s", "--quiet"]


def fair_burst_n(secs):
    """as many burster calls as keep it busy over all of the steady calls, however long"""
    return max(FAIR_BURST_N, round(FAIR_BURST_N * secs / 10))


def fair_phase(b, mode, secs, r):
    """one phase: {tenant: [(latency ms, cpu s, created ms, ended ms)], "refused": {tenant: n}}"""
    extra = {"budgets": f"budgets:\n  tenants:\n    - tenant: burst\n      {FAIR_BUDGET}\n",
             "none": "budgets:\n  fair_cpu: off\n"}.get(mode, "")
    agent = Agent(f"fair-{mode}-{r}", max_running=8, tenant_max_running=4, extra=extra).start()
    sent, refused = [], {t: 0 for t in FAIR_TENANTS}
    # (when, tenant): the burster's all at once, then the steady calls over secs
    plan = [(FAIR_STEADY_AT + i * 0.5, "steady1") for i in range(int(secs / 0.5))]
    plan += [(FAIR_STEADY_AT + 0.25 + i * 0.7, "steady2") for i in range(int((secs - 0.25) / 0.7))]
    if mode != "alone":
        plan += [(0.0, "burst")] * fair_burst_n(secs)
    plan.sort(key=lambda x: x[0])
    try:
        t0 = time.monotonic()
        for k, (at, tenant) in enumerate(plan):
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            eid = f"bmb{os.getpid()}-f{mode[0]}{r}-{tenant}-{k}"
            st, _ = api(agent.sock, "POST", "/v1/effects",
                        {"id": eid, "tenant": tenant, "argv": fair_argv(b, tenant), "cwd": "/tmp",
                         "intent": f"fairness bench: {tenant}", "sandbox": {"timeout_seconds": 120}})
            if st in (201, 202):
                sent.append((tenant, eid))
            elif st == 429:
                refused[tenant] += 1
            else:
                raise RuntimeError(f"fairness: POST {tenant} {st}")
        if not agent.wait_idle(180):
            warn(f"fairness {mode}: effects still running after 180 s")
        out = {t: [] for t in FAIR_TENANTS}
        for tenant, eid in sent:
            st, e = api(agent.sock, "GET", f"/v1/effects/{eid}?tenant={tenant}")
            if st != 200 or not e or e.get("state") != "succeeded":
                warn(f"fairness {mode}: {eid} {st} {e and e.get('state')}")
                continue
            end = max([x["at_ms"] for x in e.get("transitions", [])] + [e["updated_ms"]])
            cpu = ((e.get("outcome") or {}).get("totals") or {}).get("cpu_seconds", 0.0)
            out[tenant].append((end - e["created_ms"], cpu, e["created_ms"], end))
        _, selfs = None, {t: api(agent.sock, "GET", f"/v1/tenants/self?tenant={t}")[1] for t in FAIR_TENANTS}
    finally:
        agent.stop()
    out["refused"] = refused
    out["throttles"] = {t: (selfs.get(t) or {}).get("budgets", {}).get("cpu_seconds", {}).get("exhaustions", 0)
                        for t in FAIR_TENANTS}
    return out


def fairness(b, res):
    if not shutil.which("stress-ng"):
        warn("fairness: stress-ng missing (tools/deps.sh bench): section skipped")
        return
    secs, rounds = (6, 1) if QUICK else (10, 3)
    # more steady calls for a p99 that is not just the slowest of twenty: BENCH_FAIR_SECS=30
    secs = float(os.environ.get("BENCH_FAIR_SECS", secs))
    runs = []
    for r in range(rounds):
        phase = {}
        for mode in rotate(list(FAIR_MODES), r):
            log(f"fairness round {r + 1}/{rounds}: {mode}")
            phase[mode] = fair_phase(b, mode, secs, r)
            for t in FAIR_TENANTS:
                lat = [x[0] for x in phase[mode][t]]
                if lat:
                    log(f"  {t}: {len(lat)} calls, p50 {pctl(lat, 50):.0f} ms, p99 {pctl(lat, 99):.0f} ms")
        runs.append(phase)
    res["fairness"] = {"runs": runs, "secs": secs, "rounds": rounds}


def fairness_table(res):
    f = res.get("fairness")
    if not f:
        return []

    def stats(run, mode, t):
        xs = run[mode][t]
        if not xs:
            return None
        lat = [x[0] for x in xs]
        span = (max(x[3] for x in xs) - min(x[2] for x in xs)) / 1e3
        return dict(n=len(xs), p50=pctl(lat, 50), p99=pctl(lat, 99), span=span,
                    cpu=sum(x[1] for x in xs))

    lines = ["", f"fairness: 3 tenants on one agent (max_running 8, tenant_max_running 4), "
             f"{f['secs']} s of steady calls, median of {f['rounds']} round(s); burst: "
             f"{fair_burst_n(f['secs'])} x stress-ng --cpu 2 --timeout 4s at once, the steady calls from "
             f"{FAIR_STEADY_AT:.0f} s on; steady1: bm-spike 40 ms every 0.5 s; steady2: stress-ng "
             f"fft 100 ops every 0.7 s; neither: fair_cpu off, no budget; fair CPU: over its share "
             f"the burster yields; budgets: fair CPU and burst {FAIR_BUDGET}; goal: steady p99 and "
             "completion with budgets <= 1.2x alone",
             f"  {'tenant':<9}{'alone p50/p99':>16}" +
             "".join(f"{FAIR_LABEL[m]:>16}{'x alone':>9}" for m in FAIR_SHOWN) +
             "   completion (s) alone / " + " / ".join(FAIR_LABEL[m] for m in FAIR_SHOWN)]
    verdict = []
    for t in ("steady1", "steady2"):
        ss = [{m: stats(run, m, t) for m in FAIR_MODES} for run in f["runs"]]
        ss = [x for x in ss if all(x.values())]
        if not ss:
            lines.append(f"  {t:<9} no complete round")
            continue
        med = {m: {k: median([x[m][k] for x in ss]) for k in ("p50", "p99", "span", "n")} for m in FAIR_MODES}
        ratios = {m: [x[m]["p99"] / x["alone"]["p99"] for x in ss] for m in FAIR_SHOWN}
        ratio = {m: median(v) for m, v in ratios.items()}
        span = {m: median([x[m]["span"] / x["alone"]["span"] for x in ss]) for m in FAIR_SHOWN}
        lines.append(f"  {t:<9}{med['alone']['p50']:>7.0f}/{med['alone']['p99']:<6.0f}ms" +
                     "".join(f"{med[m]['p50']:>7.0f}/{med[m]['p99']:<6.0f}ms{ratio[m]:>8.2f}x"
                             for m in FAIR_SHOWN) +
                     f"   {med['alone']['span']:.1f} / " +
                     " / ".join(f"{med[m]['span']:.1f} ({span[m]:.2f}x)" for m in FAIR_SHOWN))
        verdict.append((t, ratio["budgets"], span["budgets"], ratios))
    for m in FAIR_SHOWN:
        bs = [stats(run, m, "burst") for run in f["runs"]]
        bs = [x for x in bs if x]
        if bs:
            lines.append(f"  burst, {FAIR_LABEL[m]:<10}: "
                         f"{median([x['n'] for x in bs]):.0f} calls done, {median([x['cpu'] for x in bs]):.1f} CPU-s "
                         f"in {median([x['span'] for x in bs]):.1f} s = "
                         f"{median([x['cpu'] / x['span'] for x in bs]):.2f} cores; 429s "
                         f"{median([run[m]['refused']['burst'] for run in f['runs']]):.0f}, "
                         f"budget exhaustions {median([run[m]['throttles']['burst'] for run in f['runs']]):.0f}")
    for t, r, s, rs in verdict:
        rb = rs["budgets"]
        lines.append(f"  {t}: p99 {r:.2f}x [{min(rb):.2f}..{max(rb):.2f}] (" +
                     ", ".join(f"{FAIR_LABEL[m]} {median(rs[m]):.2f}x [{min(rs[m]):.2f}..{max(rs[m]):.2f}]"
                               for m in ("none", "fair")) +
                     f"), completion {s:.2f}x of alone "
                     "with budgets: goal <= 1.2x " + ("met" if r <= 1.2 and s <= 1.2 else "NOT met"))
    return lines


# ---------------------------------------------------------------- 8. in-kernel cost of I/O
def kio(b, res):
    """ns per bio and per dirtied folio of the I/O programs (bpf_stats run_time_ns / run_cnt),
    and of bm_sched_switch in the same runs, from a standalone run of bm-io: O_DIRECT bursts
    (a bio per 256 KiB write) and buffered writes with fsync (a dirtied folio per page)"""
    rounds = 1 if QUICK else 3
    wl = os.path.join(b, "workloads", "bm-io")
    d = tempfile.mkdtemp(prefix="bm-bench-io.", dir="/var/tmp")
    rows = {}
    try:
        for r in range(rounds):
            for mode, args in (("dio", ["dio", f"{d}/f", "64", "50", "50", f"{d}/t"]),
                               ("buffered", ["buffered", f"{d}/f", "64", f"{d}/t"])):
                script = f"sleep 0.3; {wl} {' '.join(args)}; sleep 0.3"
                p = subprocess.Popen([BM, "run", "--standalone", "--fresh-meter", "-q", "--", "sh",
                                      "-c", script],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                children.append(p)
                # its programs are its own, loaded for it: their counts start at its start and
                # only grow; the last look at each (a teardown closes them one by one) holds
                last = {}
                while p.poll() is None:
                    ids = fdinfo_ids(p.pid, "prog_id:")
                    for i, v in prog_table().items():
                        if i in ids and (i not in last or v[2] >= last[i][2]):
                            last[i] = v
                    time.sleep(0.05)
                children.remove(p)
                if not last:
                    warn(f"kio {mode}: no programs seen")
                    continue
                for i, (name, ns, cnt, _) in last.items():
                    if cnt:
                        rows.setdefault((mode, name), []).append((ns / cnt, cnt))
                log(f"kio {mode} round {r + 1}: " + ", ".join(
                    f"{n} {v[-1][0]:.0f} ns x {v[-1][1]}" for (m, n), v in rows.items() if m == mode))
    finally:
        shutil.rmtree(d, ignore_errors=True)
    res["kio"] = rows


def kio_table(res):
    rows = res.get("kio")
    if not rows:
        return []
    lines = ["", "in-kernel cost of the I/O programs (bpf_stats, median of rounds): ns per run, runs",
             f"  {'load':<10}{'program':<22}{'ns/run':>8}{'runs':>10}"]
    for (mode, name), v in sorted(rows.items()):
        if name.startswith(("bm_bio", "bm_dirty", "bm_sched_switch", "bm_oom")):
            ns = sorted(x[0] for x in v)[len(v) // 2]
            runs = sorted(x[1] for x in v)[len(v) // 2]
            lines.append(f"  {mode:<10}{name:<22}{ns:>8.0f}{runs:>10}")
    return lines


SECTIONS = ("kcost", "tput", "launch", "kload", "spikes", "detect", "scale", "neighbours", "fairness",
            "kio")


def on_signal(sig, frame):
    raise SystemExit(128 + sig)


def main():
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("sections", nargs="*", default=list(SECTIONS))
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    for s in a.sections:
        if s not in SECTIONS:
            sys.exit(f"bench: unknown section '{s}' ({', '.join(SECTIONS)})")
    if not shutil.which("runqlat") and ({"kcost", "tput"} & set(a.sections)):
        sys.exit("bench: runqlat missing: run tools/deps.sh bench (libbpf-tools)")
    res = {"kcost": [], "tput": [], "secs": {}}
    t0 = time.monotonic()
    stats_old = read_sysctl("kernel.bpf_stats_enabled")
    load0 = loadavg()
    try:
        rev = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                             capture_output=True, text=True).stdout.strip() or "?"
    except OSError:
        rev = "?"
    global BM
    try:
        BM = Tmp.path("burstmeter")
        shutil.copy2(os.path.join(b, "burstmeter"), BM)
        # `burstmeter agent` execs the bm-agent beside it, which starts its shims from the
        # bm-shim beside it (user/agent/agent.c)
        shutil.copy2(os.path.join(b, "bm-agent"), Tmp.path("bm-agent"))
        shutil.copy2(os.path.join(b, "bm-shim"), Tmp.path("bm-shim"))
        st = os.stat(BM)
        binary = (f"build/burstmeter of "
                  f"{time.strftime('%H:%M:%S', time.localtime(st.st_mtime))}, {st.st_size} bytes")
        # bpf_stats adds two clock reads to every program run: on only to count ns
        write_sysctl("kernel.bpf_stats_enabled", 0)
        # scale last: 10,000 processes ending leave the machine busy for a while (reclaim,
        # kdamond), which moved the kernel-cost ratios when kcost came after it
        for name, fn in (("tput", tput), ("launch", launch), ("kload", kload), ("spikes", spikes),
                         ("detect", detect), ("neighbours", neighbours), ("fairness", fairness),
                         ("kcost", kcost), ("kio", kio), ("scale", scale)):
            if name not in a.sections:
                continue
            write_sysctl("kernel.bpf_stats_enabled", 1 if name in ("kcost", "kio") else 0)
            ts = time.monotonic()
            fn(b, res)
            res["secs"][name] = time.monotonic() - ts
            log(f"{name} took {res['secs'][name]:.0f} s")
    finally:
        write_sysctl("kernel.bpf_stats_enabled", stats_old)
        for p in list(children):
            end(p)
        if Tmp.dir:
            shutil.rmtree(Tmp.dir, ignore_errors=True)
    secs = time.monotonic() - t0
    meta = (f"{time.strftime('%Y-%m-%d %H:%M')}  rev {rev} ({binary})  kernel {os.uname().release}  "
            f"{os.cpu_count()} CPUs  {'QUICK' if QUICK else 'full'}  {secs:.0f} s ("
            + ", ".join(f"{k} {v:.0f} s" for k, v in res["secs"].items()) + ")"
            + f"\nload average (1 min) {load0} at the start, {loadavg()} at the end: "
            + "above ~1 on these 2 CPUs, others were busy here too")
    table(res, b, meta)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""burstmeter against its peers, side by side in one run, alternated.

Started by bench/run.sh, which builds the helpers first. Sections:
  kcost   kernel ns per context switch (bpf_stats): burstmeter vs runqlat vs an empty program
  tput    throughput of switch-heavy loads: nothing vs burstmeter vs runqlat
  launch  start-up of 'burstmeter run -- /bin/true' vs fork/exec, unshare, bwrap
  spikes  50 ms memory spikes: burstmeter's peak vs a 1 s sampler of the same runs
The table goes to stdout, progress and warnings to stderr.
"""
import argparse
import json
import os
import random
import select
import re
import shutil
import signal
import statistics
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
    CFG = dict(k_min=3, k_max=5, k_budget=30, k_pipe=10000, k_sn=40000,
               t_min=3, t_max=4, t_budget=30, t_pipe=8000, t_sn=40000,
               launch_runs=20, spikes=8, quiet=10)
else:
    CFG = dict(k_min=5, k_max=7, k_budget=110, k_pipe=30000, k_sn=120000,
               t_min=5, t_max=11, t_budget=190, t_pipe=20000, t_sn=80000,
               launch_runs=40, spikes=24, quiet=60)

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


def progs_of(pid):
    """program ids a process holds, from the prog_id: lines of its fdinfo"""
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
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as fh:
                    todo += [int(x) for x in fh.read().split()]
        except OSError:
            pass
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
            # user takes one: bimodal on a shared machine. Pinned, it is steady.
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
            self.p = spawn([BM, "run", "-q", "--", "sh", "-c",
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
    cmds = [("fork/exec", ["/bin/true"]),
            ("burstmeter run", [bm, "run", "-q", "--", "/bin/true"]),
            ("unshare -mpf", ["unshare", "-mpf", "--fork", "/bin/true"])]
    if shutil.which("bwrap"):
        cmds.append(("bwrap", ["bwrap", "--unshare-all", "--ro-bind", "/", "/", "/bin/true"]))
    else:
        warn("bwrap missing (tools/deps.sh bench installs bubblewrap): its row is skipped")
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
    res["launch"] = [dict(name=cmds[k][0], cmd=" ".join(cmds[k][1]).replace(BM, "build/burstmeter"),
                          ms=ms[k]) for k in range(len(cmds))]


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
        fmt = lambda x: f"{median(x['ms']):.1f} ms, p90 {pctl(x['ms'], 90):.1f}"
        for x in L:
            if x is bm:
                continue
            row(f"launch /bin/true, n={len(bm['ms'])}", fmt(bm), x["name"], fmt(x),
                f"{median(bm['ms']) / median(x['ms']):.1f}", f"{bm['cmd']}  |  {x['cmd']}")
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
    if WARNINGS:
        lines.append("")
        lines += ["warning: " + w for w in WARNINGS]
    print("\n".join(lines), flush=True)


def on_signal(sig, frame):
    raise SystemExit(128 + sig)


def main():
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("sections", nargs="*", default=["kcost", "tput", "launch", "spikes"])
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    for s in a.sections:
        if s not in ("kcost", "tput", "launch", "spikes"):
            sys.exit(f"bench: unknown section '{s}' (kcost, tput, launch, spikes)")
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
        st = os.stat(BM)
        binary = (f"build/burstmeter of "
                  f"{time.strftime('%H:%M:%S', time.localtime(st.st_mtime))}, {st.st_size} bytes")
        # bpf_stats adds two clock reads to every program run: on only to count ns
        write_sysctl("kernel.bpf_stats_enabled", 0)
        for name, fn in (("tput", tput), ("launch", launch), ("spikes", spikes),
                         ("kcost", kcost)):
            if name not in a.sections:
                continue
            if name == "kcost":
                write_sysctl("kernel.bpf_stats_enabled", 1)
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

#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Validate a /metrics exposition: check_metrics.py FILE prometheus|openmetrics

Parses FILE with prometheus_client's parser for the format (the lax 0.0.4
text parser, or the strict OpenMetrics one), then checks what the parsers
let through: every family has HELP and TYPE, no series appears twice, the
samples of a series are contiguous, histogram buckets come in increasing le
with non-decreasing (cumulative) counts and end in +Inf equal to _count,
_sum and _count are present, OpenMetrics exemplars lie in their bucket, and
no effect id is a label (ids may only appear as exemplars).

Exit status: 0 valid, 1 invalid (each problem on stderr), 2 usage or setup.
"""
import math
import os
import sys

try:
    from prometheus_client.openmetrics.parser import \
        text_string_to_metric_families as parse_openmetrics
    from prometheus_client.parser import \
        text_string_to_metric_families as parse_prometheus
except ImportError:
    # python3-prometheus-client is installed for Debian's interpreter; a
    # python3 earlier on PATH (pyenv, venv) may not see it.
    SYSTEM = "/usr/bin/python3"
    if os.path.exists(SYSTEM) and os.path.realpath(sys.executable) != os.path.realpath(SYSTEM) \
            and not os.environ.get("BM_CHECK_METRICS_REEXEC"):
        os.environ["BM_CHECK_METRICS_REEXEC"] = "1"
        os.execv(SYSTEM, [SYSTEM] + sys.argv)
    print("check_metrics: prometheus_client not importable (apt-get install "
          "python3-prometheus-client)", file=sys.stderr)
    sys.exit(2)

FORBIDDEN_LABELS = {"effect_id", "effect", "id", "cgroup"}


def series_key(labels, drop=()):
    return tuple(sorted((k, v) for k, v in labels.items() if k not in drop))


def check_raw(text, fmt, problems):
    """Checks on the text itself: metadata, line shape, end marker."""
    helps, types = set(), set()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    else:
        problems.append("the exposition does not end with a newline")
    for n, line in enumerate(lines, 1):
        if line.startswith("# HELP "):
            helps.add(line.split(" ")[2])
        elif line.startswith("# TYPE "):
            types.add(line.split(" ")[2])
        elif fmt == "prometheus" and " # {" in line:
            problems.append(f"line {n}: exemplar in Prometheus 0.0.4 text: {line}")
    if helps != types:
        problems.append(f"HELP without TYPE or TYPE without HELP: {sorted(helps ^ types)}")
    if fmt == "openmetrics" and (not lines or lines[-1] != "# EOF"):
        problems.append("OpenMetrics text must end with '# EOF'")
    if fmt == "prometheus" and "# EOF" in lines:
        problems.append("'# EOF' in Prometheus 0.0.4 text")


def check_histogram(fam, problems):
    """Buckets per series: sorted le, cumulative counts, +Inf == _count, _sum."""
    series = {}
    order = []
    split = set()
    for s in fam.samples:
        key = series_key(s.labels, ("le",))
        if key not in series:
            series[key] = {"buckets": [], "sum": None, "count": None}
            order.append(key)
        elif order[-1] != key and key not in split:
            split.add(key)
            problems.append(f"{fam.name}{dict(key)}: samples of the series are not contiguous")
        ser = series[key]
        if s.name == fam.name + "_bucket":
            ser["buckets"].append((float(s.labels["le"]), s.value, s.exemplar))
        elif s.name == fam.name + "_sum":
            ser["sum"] = s.value
        elif s.name == fam.name + "_count":
            ser["count"] = s.value
    for key, ser in series.items():
        where = f"{fam.name}{dict(key)}"
        bks = ser["buckets"]
        if not bks:
            problems.append(f"{where}: no buckets")
            continue
        prev_le, prev_v = -math.inf, 0
        for le, v, ex in bks:
            if le <= prev_le:
                problems.append(f"{where}: le {le} not above the previous {prev_le}")
            if v < prev_v:
                problems.append(f"{where}: bucket le={le} holds {v} < {prev_v}: not cumulative")
            if v != int(v):
                problems.append(f"{where}: bucket le={le} holds a non-integer {v}")
            if ex is not None and not prev_le < ex.value <= le:
                problems.append(f"{where}: exemplar {ex.value} outside its bucket "
                                f"({prev_le}, {le}]")
            prev_le, prev_v = le, v
        if bks[-1][0] != math.inf:
            problems.append(f"{where}: last bucket is le={bks[-1][0]}, not +Inf")
        if ser["count"] is None:
            problems.append(f"{where}: _count missing")
        elif bks[-1][1] != ser["count"]:
            problems.append(f"{where}: +Inf bucket {bks[-1][1]} != _count {ser['count']}")
        if ser["sum"] is None:
            problems.append(f"{where}: _sum missing")
        elif ser["sum"] < 0:
            problems.append(f"{where}: negative _sum {ser['sum']}")


def check(text, fmt):
    problems = []
    check_raw(text, fmt, problems)
    parse = parse_openmetrics if fmt == "openmetrics" else parse_prometheus
    try:
        families = list(parse(text))
    except Exception as err:  # the parsers raise ValueError, and others on bad input
        return problems + [f"{fmt} parser: {type(err).__name__}: {err}"]
    seen = set()
    for fam in families:
        if not fam.documentation:
            problems.append(f"{fam.name}: no HELP text")
        if fam.type in ("unknown", "untyped"):
            problems.append(f"{fam.name}: no TYPE")
        for s in fam.samples:
            key = (s.name, series_key(s.labels))
            if key in seen:
                problems.append(f"duplicate series {s.name}{s.labels}")
            seen.add(key)
            bad = FORBIDDEN_LABELS & set(s.labels)
            if bad:
                problems.append(f"{s.name}{s.labels}: unbounded label {sorted(bad)}")
            if fam.type == "counter" and not s.name.endswith(("_total", "_created")):
                problems.append(f"{s.name}: counter sample without _total")
            if s.exemplar is not None and fmt != "openmetrics":
                problems.append(f"{s.name}: exemplar outside OpenMetrics")
        if fam.type == "histogram":
            check_histogram(fam, problems)
    if not families:
        problems.append("no metric families")
    return problems


def main(argv):
    if len(argv) != 3 or argv[2] not in ("prometheus", "openmetrics"):
        print("usage: check_metrics.py FILE prometheus|openmetrics", file=sys.stderr)
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as err:
        print(f"check_metrics: {argv[1]}: {err}", file=sys.stderr)
        return 2 if isinstance(err, OSError) else 1
    problems = check(text, argv[2])
    for p in problems:
        print(f"check_metrics: {argv[1]} ({argv[2]}): {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Calls go down only (docs/DESIGN.md, "Layers").

Usage: tools/check-layers.py BUILD_DIR LAYER...   (the layers lowest first)

Fails, naming each, on:
  - an #include of a header of a higher layer in user/ (tools/ and tests/ sit above every
    layer: their mains and tests may include any, so they are not checked);
  - a symbol an object uses that a higher layer's object defines (nm of BUILD_DIR/user);
  - a cycle between two modules (x.c with x.h) anywhere in user/, by include or by call.
"""
import collections
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module(path):
    """user/agent/store.c -> agent/store"""
    rel = os.path.relpath(path, 'user')
    return os.path.splitext(rel)[0]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().splitlines()[2])
    build, layers = sys.argv[1], sys.argv[2:]
    rank = {l: i for i, l in enumerate(layers)}
    bad = []
    deps = collections.defaultdict(set)     # module -> modules it needs
    why = {}

    for layer in layers:
        d = os.path.join('user', layer)
        for name in sorted(os.listdir(d)):
            if not name.endswith(('.c', '.h')):
                continue
            path = os.path.join(d, name)
            for inc in INCLUDE.findall(open(path).read()):
                top = inc.split('/')[0]
                if top not in rank:
                    continue
                if rank[top] > rank[layer]:
                    bad.append(f'{path}: includes {inc}: {top} is above {layer}')
                dep = os.path.splitext(inc)[0]
                if dep != module(path):
                    deps[module(path)].add(dep)
                    why.setdefault((module(path), dep), f'{path} includes {inc}')
        stray = [n for n in os.listdir('user') if n.endswith(('.c', '.h'))]
        if stray:
            bad.append(f'user/: {", ".join(sorted(stray))} belong in a layer\'s folder')
            break

    defs, undefs = {}, {}
    for layer in layers:
        d = os.path.join(build, 'user', layer)
        if not os.path.isdir(d):
            sys.exit(f'check-layers: {d} is missing: build first')
        for name in sorted(os.listdir(d)):
            if not name.endswith('.o'):
                continue
            mod = f'{layer}/{name[:-2]}'
            out = subprocess.run(['nm', os.path.join(d, name)], check=True,
                                 capture_output=True, text=True).stdout
            undefs[mod] = set()
            for line in out.splitlines():
                f = line.split()
                if len(f) == 2 and f[0] == 'U':
                    undefs[mod].add(f[1])
                elif len(f) == 3 and f[1] in 'TDBRCVW':
                    defs[f[2]] = mod
    for mod, syms in sorted(undefs.items()):
        for s in sorted(syms):
            other = defs.get(s)
            if not other or other == mod:
                continue
            a, b = mod.split('/')[0], other.split('/')[0]
            if rank[b] > rank[a]:
                bad.append(f'user/{mod}.c: calls {s}() of user/{other}.c: {b} is above {a}')
            deps[mod].add(other)
            why.setdefault((mod, other), f'user/{mod}.c uses {s} of user/{other}.c')

    # a cycle: Tarjan's strongly connected components of the module graph
    index, low, stack, on, sccs, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(deps.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(set(deps) | {w for ws in deps.values() for w in ws}):
        if v not in index:
            visit(v)
    for scc in sccs:
        edges = [why[(a, b)] for a in scc for b in sorted(deps.get(a, ())) if b in scc]
        bad.append('a cycle between ' + ', '.join(f'user/{m}' for m in scc) + ': ' +
                   '; '.join(edges))

    for line in bad:
        print(f'check-layers: {line}', file=sys.stderr)
    if bad:
        sys.exit(1)
    print(f'check-layers: {len(undefs)} modules in {len(layers)} layers, calls go down only, '
          'no cycle')


if __name__ == '__main__':
    main()

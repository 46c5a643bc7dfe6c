#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Self-test of tools/check-layers.py: check_layers_selftest.py BUILD_DIR LAYER...

Plants each fault the checker exists for (an upward #include, an upward symbol, a module
cycle by include and by call, a source outside a layer, a missing build) in a tiny fixture
tree compiled here, and an upward include and an upward call in a copy of the real user/
(with BUILD_DIR's objects), and expects exit 1 with the checker's line naming it; the clean
fixture and the clean copy must pass. TAP on stdout; exit 1 if any case failed.
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKER = os.path.join(ROOT, 'tools', 'check-layers.py')
CC = os.environ.get('CC', 'cc')

# the clean fixture: hi/b calls down into lo/a
CLEAN = {
    'lo/a.h': 'int lo_a(void);\n',
    'lo/a.c': '#include "lo/a.h"\nint lo_a(void) { return 1; }\n',
    'hi/b.h': 'int hi_b(void);\n',
    'hi/b.c': '#include "hi/b.h"\n#include "lo/a.h"\nint hi_b(void) { return lo_a(); }\n',
}

n_case = 0
failed = 0


def write(tree, files):
    for rel, text in files.items():
        path = os.path.join(tree, 'user', rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
            f.write(text)


def compile_tree(tree, build):
    for dirpath, _, names in os.walk(os.path.join(tree, 'user')):
        for name in names:
            if not name.endswith('.c'):
                continue
            src = os.path.join(dirpath, name)
            obj = os.path.join(build, os.path.relpath(src, tree))[:-2] + '.o'
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            subprocess.run([CC, '-c', '-w', '-I', os.path.join(tree, 'user'), src, '-o', obj],
                           check=True)


def expect(name, cwd, build, layers, rc, text):
    """Run the checker in cwd; want exit rc and text in its output."""
    global n_case, failed
    n_case += 1
    p = subprocess.run([sys.executable, CHECKER, build] + layers, cwd=cwd,
                       capture_output=True, text=True)
    out = p.stdout + p.stderr
    if p.returncode == rc and text in out:
        print(f'ok {n_case} - {name}')
        return
    failed += 1
    print(f'not ok {n_case} - {name}: exit {p.returncode} (want {rc}), want "{text}" in:')
    for line in out.splitlines():
        print(f'#   {line}')


def fixture(top, name, extra, rc, text, build_it=True):
    tree = tempfile.mkdtemp(dir=top)
    build = os.path.join(tree, 'build')
    write(tree, CLEAN)
    write(tree, extra)
    os.makedirs(os.path.join(build, 'user', 'lo'), exist_ok=True)
    os.makedirs(os.path.join(build, 'user', 'hi'), exist_ok=True)
    if build_it:
        compile_tree(tree, build)
    else:
        shutil.rmtree(os.path.join(build, 'user', 'hi'))
    expect(name, tree, build, ['lo', 'hi'], rc, text)


def real_tree(top, build, layers):
    """A copy of user/ over BUILD_DIR's objects (linked, one folder per layer)."""
    tree = tempfile.mkdtemp(dir=top)
    shutil.copytree(os.path.join(ROOT, 'user'), os.path.join(tree, 'user'),
                    ignore=shutil.ignore_patterns('*.md'))
    over = os.path.join(tree, 'build')
    for layer in layers:
        src = os.path.join(os.path.abspath(build), 'user', layer)
        dst = os.path.join(over, 'user', layer)
        os.makedirs(dst)
        for name in os.listdir(src):
            if name.endswith('.o'):
                os.symlink(os.path.join(src, name), os.path.join(dst, name))
    return tree, over


def top_symbol(build, layer):
    """A function the highest layer defines, to be called from the lowest."""
    d = os.path.join(build, 'user', layer)
    for name in sorted(os.listdir(d)):
        if not name.endswith('.o'):
            continue
        out = subprocess.run(['nm', os.path.join(d, name)], check=True, capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] == 'T':
                return f[2], f'user/{layer}/{name[:-2]}.c'
    sys.exit(f'check_layers_selftest: no function defined in {d}')


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().splitlines()[0])
    build, layers = sys.argv[1], sys.argv[2:]
    lo, hi = layers[0], layers[-1]
    top = tempfile.mkdtemp(prefix='bm-check-layers.')
    try:
        fixture(top, 'clean fixture passes', {}, 0, 'calls go down only, no cycle')
        fixture(top, 'upward #include', {
            'lo/c.c': '#include "hi/b.h"\nint lo_c(void) { return 0; }\n',
        }, 1, 'check-layers: user/lo/c.c: includes hi/b.h: hi is above lo')
        fixture(top, 'upward symbol', {
            'lo/d.c': 'int hi_b(void);\nint lo_d(void) { return hi_b(); }\n',
        }, 1, 'check-layers: user/lo/d.c: calls hi_b() of user/hi/b.c: hi is above lo')
        fixture(top, 'cycle by #include', {
            'lo/e.h': 'int lo_e(void);\n',
            'lo/e.c': '#include "lo/f.h"\nint lo_e(void) { return 0; }\n',
            'lo/f.h': 'int lo_f(void);\n',
            'lo/f.c': '#include "lo/e.h"\nint lo_f(void) { return 0; }\n',
        }, 1, 'check-layers: a cycle between user/lo/e, user/lo/f: '
              'user/lo/e.c includes lo/f.h; user/lo/f.c includes lo/e.h')
        fixture(top, 'cycle by call', {
            'hi/g.c': 'int hi_h(void);\nint hi_g(void) { return hi_h(); }\n',
            'hi/h.c': 'int hi_g(void);\nint hi_h(void) { return hi_g(); }\n',
        }, 1, 'check-layers: a cycle between user/hi/g, user/hi/h: '
              'user/hi/g.c uses hi_h of user/hi/h.c; user/hi/h.c uses hi_g of user/hi/g.c')
        fixture(top, 'a source outside the layers', {'x.c': 'int x;\n'}, 1,
                "check-layers: user/: x.c belong in a layer's folder")
        fixture(top, 'no build', {}, 1, 'build/user/hi is missing: build first', False)

        tree, over = real_tree(top, build, layers)
        expect('the real user/ passes', tree, over, layers, 0, 'calls go down only, no cycle')
        first = sorted(n for n in os.listdir(os.path.join(tree, 'user', lo)) if n.endswith('.c'))[0]
        hdr = sorted(n for n in os.listdir(os.path.join(tree, 'user', hi)) if n.endswith('.h'))[0]
        path = os.path.join(tree, 'user', lo, first)
        orig = open(path).read()
        with open(path, 'a') as f:
            f.write(f'#include "{hi}/{hdr}"\n')
        expect(f'the real user/ with {lo}/{first} including {hi}/{hdr}', tree, over, layers, 1,
               f'check-layers: user/{lo}/{first}: includes {hi}/{hdr}: {hi} is above {lo}')
        with open(path, 'w') as f:
            f.write(orig)
        sym, owner = top_symbol(build, hi)
        src = os.path.join(tree, 'user', lo, 'planted.c')
        with open(src, 'w') as f:
            f.write(f'void {sym}(void);\nvoid bm_planted(void) {{ {sym}(); }}\n')
        subprocess.run([CC, '-c', '-w', src, '-o', os.path.join(over, 'user', lo, 'planted.o')],
                       check=True)
        expect(f'the real user/ with {lo}/planted.c calling {sym}()', tree, over, layers, 1,
               f'check-layers: user/{lo}/planted.c: calls {sym}() of {owner}: '
               f'{hi} is above {lo}')
    finally:
        shutil.rmtree(top)
    print(f'1..{n_case}')
    if failed:
        print(f'check_layers_selftest: {failed} of {n_case} cases failed', file=sys.stderr)
        sys.exit(1)
    print(f'check_layers_selftest: {n_case} cases, each fault caught, clean trees pass')


if __name__ == '__main__':
    main()

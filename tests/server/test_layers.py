#!/usr/bin/env python3
"""test_layers.py - server/'s folders include one another one way only (docs/ARCHITECTURE.md).

Reads every `#include "..."` of server/ and fails when:
  - a folder includes a folder above it in LAYERS (so no circle between folders is possible);
  - files of one folder include one another in a circle (a file's .c and .h count as one).
The core (server/'s own top-level files: the process, its configuration and main) ties the wings
together: every folder may include it and it includes them all, so it takes no part in either check.

  test_layers.py SOURCE_ROOT     (exit 0: clean; 1: the offending includes are printed)
"""
import os
import re
import sys

# Lowest first: a folder may include its own files, the core's and those of folders before it.
LAYERS = ['base', 'store', 'net', 'sessions', 'tiering', 'stats', 'methods']
CORE = ''

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_graph(server):
    """{module: set(module)} over server/, a module being a path without .c/.h, relative to server/."""
    files = []
    for folder, _, names in os.walk(server):
        files += [os.path.join(folder, n) for n in names if n.endswith(('.c', '.h'))]
    known = {os.path.relpath(f, server) for f in files}
    graph = {}
    for path in files:
        rel = os.path.relpath(path, server)
        here = os.path.dirname(rel)
        module = os.path.splitext(rel)[0]
        graph.setdefault(module, set())
        with open(path, encoding='utf-8') as f:
            text = f.read()
        for name in INCLUDE.findall(text):
            # as the compiler looks: beside the including file first, then from server/ (its -I)
            for candidate in (os.path.normpath(os.path.join(here, name)), os.path.normpath(name)):
                if candidate in known:
                    target = os.path.splitext(candidate)[0]
                    if target != module:
                        graph[module].add(target)
                    break
    return graph


def folder(module):
    return os.path.dirname(module)


def cycles(graph):
    """Strongly connected components with more than one member (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    server = os.path.join(sys.argv[1], 'server')
    graph = read_graph(server)
    problems = []
    for module in sorted(graph):
        f = folder(module)
        if f == CORE:
            continue
        if f not in LAYERS:
            problems.append('%s: folder server/%s/ is not in LAYERS (tests/server/test_layers.py)' % (module, f))
            continue
        for target in sorted(graph[module]):
            t = folder(target)
            if t == CORE or t == f:
                continue
            if t not in LAYERS or LAYERS.index(t) > LAYERS.index(f):
                problems.append('%s includes %s: server/%s/ is above server/%s/' % (module, target, t, f))
    inside = {m: {t for t in ts if folder(t) == folder(m)} for m, ts in graph.items() if folder(m) != CORE}
    for component in cycles(inside):
        problems.append('circle inside server/%s/: %s' % (folder(component[0]), ' -> '.join(component)))
    for p in problems:
        print(p)
    if problems:
        return 1
    print('server/: %d modules, %d folders one way, no circle outside the core' %
          (len(graph), len({folder(m) for m in graph if folder(m) != CORE})))
    return 0


if __name__ == '__main__':
    sys.exit(main())

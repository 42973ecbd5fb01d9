#!/usr/bin/env python3
"""Prints the graph of a crate's top-level modules and its cycles.

Module A -> module B when a file under A names `crate::B` (in a `use` or a
path; comments are left out). Usage: scripts/modgraph.py engine/src [-v]
(-v names the files behind each arrow). Exit status 1 when there is a cycle.
"""
import os
import re
import sys


def modules(root):
    found = set()
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if name.endswith('.rs') and name not in ('lib.rs', 'main.rs'):
            found.add(name[:-3])
        elif os.path.isdir(path):
            found.add(name)
    return found


def edges(root, mods):
    pattern = re.compile(r'crate::(\{[^}]*\}|[a-z_][a-z0-9_]*)', re.S)
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            if not name.endswith('.rs'):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            top = rel.split(os.sep)[0]
            top = top[:-3] if top.endswith('.rs') else top
            if top in ('lib', 'main'):
                continue
            text = re.sub(r'//[^\n]*', '', open(path).read())
            for m in pattern.finditer(text):
                group = m.group(1)
                names = re.findall(r'(?:^|[{,]\s*)([a-z_][a-z0-9_]*)', group) if group.startswith('{') else [group]
                for target in names:
                    if target in mods and target != top:
                        out.setdefault(top, {}).setdefault(target, set()).add(rel)
    return out


def cycles(mods, graph):
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(mods):
        if v not in index:
            visit(v)
    return found


def main():
    root = sys.argv[1]
    verbose = '-v' in sys.argv
    mods = modules(root)
    graph = edges(root, mods)
    for a in sorted(graph):
        print(a, '->', ', '.join(sorted(graph[a])))
        if verbose:
            for b in sorted(graph[a]):
                print('    ', b, ':', ', '.join(sorted(graph[a][b])))
    found = cycles(mods, graph)
    print('cycles:' if found else 'no cycles')
    for comp in found:
        print('  ', ' '.join(comp))
        for a in comp:
            for b in sorted(graph.get(a, {})):
                if b in comp:
                    print('      ', a, '->', b, ':', ', '.join(sorted(graph[a][b])))
    sys.exit(1 if found else 0)


main()

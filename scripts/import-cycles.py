#!/usr/bin/env python3
"""Print the import cycles among a crate's modules, and fail when they break the rules.

Usage: scripts/import-cycles.py [--quiet]

Each crate's `src/` is read as a graph: a node is a top-level module (`foo.rs` or
`foo/`), and an edge `a -> b` means some file of `a` names `crate::b` (in a `use`,
including `use crate::{b, c}` groups, or in a path). Cycles are the graph's strongly
connected components of more than one module. The rules (ARCHITECTURE.md):

- chorus-core: no cycle of more than 6 modules, both among the top-level modules and
  one level down (every module inside a layer's folder a node of its own), and no
  machine transport (`machine::threads`, `machine::smp`, `machine::mpi`,
  `machine::sim`) in any cycle one level down;
- chorus-sections, chorus-lb, chorus-traces: their top-level modules are in no
  cycle;
- chorus-core, chorus-sections, chorus-traces, file level: inside each top-level
  module, every file a node of its own, no cycle (a folder's `mod.rs` naming its own
  children does not count), except core's api files of the documented engine<->api
  cycle.

Exit status 1 when a rule is broken, 0 otherwise.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# crate folder -> largest cycle allowed among its top-level modules (1: none). Core
# keeps one: the engine calls user code with a `&mut Ctx`, and `Ctx` is a view of the
# engine's `PeCore`.
CRATES = {"core": 6, "sections": 1, "lb": 1, "traces": 1}
# Crates whose files, inside each top-level module, import in no cycle (issue 32).
FILE_LEVEL = ("core", "sections", "traces")
# The files of core's api that make the documented engine<->api cycle: the one
# file-level cycle allowed, and only among these.
API_CYCLE = {("api", m) for m in ("chare", "ctx", "migration", "proxy", "registry")}
# Folders of core whose submodules are nodes of their own in the transport check.
TRANSPORT_PARENT = "machine"
TRANSPORTS = ("threads", "smp", "mpi", "sim")

PATH_RE = re.compile(r"\bcrate::(\{[^;]*?\}|[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)", re.S)
SUPER_RE = re.compile(r"\b((?:super::)+)([A-Za-z_][A-Za-z0-9_]*)")


def strip_comments(text):
    """Source without line comments, so doc text naming `crate::x` is no import."""
    out = []
    for line in text.splitlines():
        i = line.find("//")
        out.append(line if i < 0 else line[:i])
    return "\n".join(out)


def split_group(body):
    """Top-level items of a `{a, b::c, d::{e, f}}` group."""
    body = body.strip()[1:-1]
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        items.append(cur.strip())
    return items


def targets(text):
    """Module paths (tuples of up to `depth` names) a file's text names under crate::."""
    found = set()
    for m in PATH_RE.finditer(text):
        expr = m.group(1)
        stack = [((), expr)]
        while stack:
            prefix, e = stack.pop()
            if e.startswith("{"):
                for item in split_group(e):
                    stack.append((prefix, item))
                continue
            head, _, rest = e.partition("::")
            if rest.startswith("{"):
                stack.append((prefix + (head,), rest))
                continue
            parts = prefix + tuple(p for p in e.split("::") if p)
            parts = tuple(p.split(" as ")[0].strip() for p in parts)
            if parts and parts[0] not in ("self", "*"):
                found.add(parts)
    return found


def module_files(src):
    """(module path as a tuple of names, file) for every .rs file under src."""
    for dirpath, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), src)
            parts = rel[:-3].split(os.sep)
            if parts[-1] in ("mod", "lib", "main"):
                parts = parts[:-1]
            if parts and parts[0] == "bin":
                continue
            yield tuple(parts), os.path.join(dirpath, f)


def node_of(path, known):
    """The graph node a module path falls in: its longest prefix that is a node."""
    for n in range(len(path), 0, -1):
        if path[:n] in known:
            return path[:n]
    return None


def graph(src, nodes_of, keep=lambda a, b: True):
    """Edges between nodes; `nodes_of(path)` maps a module path to its node, `keep` filters edges."""
    files = list(module_files(src))
    nodes = {nodes_of(p) for p, _ in files if p and nodes_of(p)}
    edges = {n: set() for n in nodes}
    for path, file in files:
        me = nodes_of(path) if path else None
        if me is None:
            continue
        with open(file, encoding="utf-8") as fh:
            text = strip_comments(fh.read())
        named = set(targets(text))
        for m in SUPER_RE.finditer(text):
            ups = m.group(1).count("super::")
            # A file `a/b.rs` (module path ('a','b')) or `a/b/mod.rs` has parent ('a',).
            base = path[: len(path) - ups]
            named.add(base + (m.group(2),))
        for t in named:
            to = node_of(t, nodes)
            if to is not None and to != me and keep(me, to):
                edges[me].add(to)
    return edges


def cycles(edges):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
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
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def name(node):
    return "::".join(node)


def transports_in(comp):
    """The machine transports among a cycle's modules."""
    return [c for c in comp if len(c) == 2 and c[0] == TRANSPORT_PARENT and c[1] in TRANSPORTS]


def check(label, edges, limit, quiet, forbid_transports, allowed=frozenset()):
    """Print the cycles of `edges`; true if one breaks the rules (a cycle inside `allowed` does not)."""
    found = cycles(edges)
    n_edges = sum(len(v) for v in edges.values())
    print(f"{label}: {len(edges)} modules, {n_edges} edges, {len(found)} cycle(s)")
    failed = False
    for comp in found:
        transports = transports_in(comp) if forbid_transports else []
        bad = (len(comp) > limit and not set(comp) <= allowed) or bool(transports)
        failed |= bad
        mark = "FAIL" if bad else "ok  "
        extra = f" (transports {', '.join(name(t) for t in transports)})" if transports else ""
        print(f"  {mark} cycle of {len(comp)}{extra}: {', '.join(name(c) for c in comp)}")
        if not quiet:
            members = set(comp)
            for a in comp:
                inner = sorted(name(b) for b in edges[a] if b in members)
                print(f"         {name(a)} -> {', '.join(inner)}")
    return failed


def same_folder_not_down(a, b):
    """An edge between two files of one top-level module, unless a parent names its own child.

    A folder's `mod.rs` declares and re-exports its children; that is structure, not a
    dependency, so only the child's use of its parent (or of a sibling) counts.
    """
    return a[:1] == b[:1] and b[: len(a)] != a


def main():
    quiet = "--quiet" in sys.argv
    failed = False
    for crate, limit in CRATES.items():
        src = os.path.join(ROOT, crate, "src")
        failed |= check(f"{crate} top level", graph(src, lambda p: p[:1]), limit, quiet, False)
        if crate == "core":
            # One level down: every module inside a layer's folder is a node of its
            # own, so a layer folder cannot hide a tangle inside it.
            failed |= check(f"{crate} one level down", graph(src, lambda p: p[:2]), limit,
                            quiet, True)
        if crate in FILE_LEVEL:
            # Every file its own node, edges inside one top-level module only: the
            # top-level check above covers the rest (core's documented engine<->api
            # cycle among them).
            failed |= check(f"{crate} file level", graph(src, lambda p: p, same_folder_not_down),
                            1, quiet, False, API_CYCLE if crate == "core" else frozenset())
    if failed:
        print("import-cycles: rules broken (see ARCHITECTURE.md, 'Layers')")
        return 1
    print("import-cycles: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

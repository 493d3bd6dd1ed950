#!/usr/bin/env python3
"""Print every function over 80 lines in library and binary code, and fail on the ones not allowed.

Usage: scripts/long-functions.py [--quiet] [--limit N]

Reads the `src/` of every workspace crate (core, sections, lb, traces, apps, examples),
skipping test code: files named `tests.rs` or under a `tests/` folder, and modules
behind `#[cfg(test)]`. A function's length runs from its `fn` line to its closing
brace. The rules (issue 32, ARCHITECTURE.md *Code size*): no function over the limit
in the library crates; in apps and examples, only the ones in `ALLOWED` below, each
with the reason it stays long.

Exit status 1 when a function breaks the rules, 0 otherwise.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARIES = ("core", "sections", "lb", "traces")
BINARIES = ("apps", "examples")
LIMIT = 80

# (file, function) -> why it stays over the limit. Keep this list short: a function
# belongs here only when splitting it would scatter one sequence a reader follows
# top to bottom.
ALLOWED = {}

FN_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?"
                   r"(?:extern\s+\"[^\"]*\"\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)")
CFG_TEST_RE = re.compile(r"^\s*#\[cfg\((?:all\()?test")


def code_only(line, state):
    """The line with strings, chars and comments blanked; `state` carries block comments and raw strings."""
    out = []
    i, n = 0, len(line)
    while i < n:
        if state["block"]:
            j = line.find("*/", i)
            if j < 0:
                return "".join(out)
            state["block"] = False
            i = j + 2
            continue
        if state["raw"] is not None:
            j = line.find(state["raw"], i)
            if j < 0:
                return "".join(out)
            i = j + len(state["raw"])
            state["raw"] = None
            continue
        if state["str"]:
            if line[i] == "\\":
                i += 2
                continue
            if line[i] == '"':
                state["str"] = False
            i += 1
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] = True
            i += 2
            continue
        m = re.match(r'b?r(#*)"', line[i:])
        if m and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == "_")):
            state["raw"] = '"' + m.group(1)
            i += len(m.group(0))
            continue
        if c == '"':
            state["str"] = True
            i += 1
            continue
        if c == "'":
            m = re.match(r"'(\\.|[^\\'])'", line[i:]) or re.match(r"'\\u\{[0-9a-fA-F]+\}'", line[i:])
            if m:
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out)


def functions(path):
    """(name, first line, length) of every non-test function in one file."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    state = {"block": False, "raw": None, "str": False}
    depth = 0
    skip_until = None  # depth at which a #[cfg(test)] item ends
    pending_test = False
    open_fns = []  # (name, start line, depth before its body)
    found = []
    for no, raw in enumerate(lines, 1):
        code = code_only(raw, state)
        if skip_until is None and CFG_TEST_RE.match(raw):
            pending_test = True
        m = FN_RE.match(code)
        if m and skip_until is None and not pending_test:
            open_fns.append([m.group(1), no, depth, False])
        for ch in code:
            if ch == "{":
                if pending_test and skip_until is None:
                    skip_until = depth
                    pending_test = False
                depth += 1
                for fn in open_fns:
                    if not fn[3] and depth == fn[2] + 1:
                        fn[3] = True
            elif ch == "}":
                depth -= 1
                if skip_until is not None and depth == skip_until:
                    skip_until = None
                while open_fns and open_fns[-1][3] and depth == open_fns[-1][2]:
                    name, start, _, _ = open_fns.pop()
                    found.append((name, start, no - start + 1))
            elif ch == ";":
                # A declaration without a body (a trait method) or a test item that ends here.
                if open_fns and not open_fns[-1][3] and depth == open_fns[-1][2]:
                    open_fns.pop()
                if pending_test and skip_until is None:
                    pending_test = False
    return found


def rust_files(crate):
    src = os.path.join(ROOT, crate, "src")
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = sorted(d for d in dirnames if d != "tests")
        for name in sorted(filenames):
            if name.endswith(".rs") and name != "tests.rs":
                yield os.path.join(dirpath, name)


def main(argv):
    quiet = "--quiet" in argv
    limit = LIMIT
    if "--limit" in argv:
        limit = int(argv[argv.index("--limit") + 1])
    broken, listed = [], []
    for crate in LIBRARIES + BINARIES:
        for path in rust_files(crate):
            rel = os.path.relpath(path, ROOT)
            for name, start, length in functions(path):
                if length <= limit:
                    continue
                reason = ALLOWED.get((rel, name)) if crate in BINARIES else None
                row = f"{rel}:{start} {name} {length} lines"
                listed.append(row + (f"  (allowed: {reason})" if reason else ""))
                if reason is None:
                    broken.append(row)
    if not quiet or broken:
        for row in listed:
            print(row)
    if broken:
        print(f"{len(broken)} function(s) over {limit} lines that no rule allows "
              "(split them, or, in apps, list them in ALLOWED with a reason)", file=sys.stderr)
        return 1
    if not quiet:
        print(f"no function over {limit} lines outside the allowed list")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

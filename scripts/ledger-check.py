#!/usr/bin/env python3
"""Fail when a file other than the ledger's module touches quiescence's counters.

Usage: scripts/ledger-check.py

Quiescence detection (core/src/engine/quiescence.rs) relies on every counted message
sent being, in the end, processed, dropped with a reason or lost with a failed PE
(ARCHITECTURE.md, "When things go wrong"). The counts live in a private `Ledger`
(core/src/engine/ledger.rs) and change only through its methods. This check fails
(exit 1, naming file:line) if

- any other file of chorus-core reads or writes a counter field through a PE's core
  or its ledger (`core.sent`, `self.core.processed`, `ledger.sent` not followed by a
  call), or assigns to a counter-named field of `self`, `core` or a report in the
  engine or the api (as `PeCore` once did with `self.sent += 1`);
- the ledger's counter fields are not private.

Comments are ignored. Exit status 0 when the rule holds.
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "core", "src")
LEDGER = os.path.join(SRC, "engine", "ledger.rs")
FIELDS = r"(?:sent|processed|dropped_on_wire)"
# A counter field reached through a PE's core or its ledger, not a method call.
FIELD_ACCESS = re.compile(r"\b(?:core|ledger)\s*\.\s*" + FIELDS + r"\b(?!\s*\()")
# An assignment to a counter-named field of the engine's own state or its report.
ASSIGN = re.compile(r"\b(?:self|core|report)\s*\.\s*" + FIELDS + r"\s*(?:[+\-]=|=(?!=))")
# Folders whose code holds a PE's core.
ENGINE_SIDE = ("engine", "api")
PUBLIC_FIELD = re.compile(r"^\s*pub(?:\([^)]*\))?\s+" + FIELDS + r"\s*:")


def code_lines(path):
    """(line number, text without its line comment) of a Rust file."""
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            i = line.find("//")
            yield n, line if i < 0 else line[:i]


def main():
    problems = []
    for dirpath, _, files in os.walk(SRC):
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            if not f.endswith(".rs") or path == LEDGER:
                continue
            rel = os.path.relpath(path, ROOT)
            layer = os.path.relpath(path, SRC).split(os.sep)[0]
            for n, text in code_lines(path):
                if FIELD_ACCESS.search(text) or (
                    layer in ENGINE_SIDE and ASSIGN.search(text)
                ):
                    problems.append(f"{rel}:{n}: touches a quiescence counter: {text.strip()}")
    if not os.path.exists(LEDGER):
        problems.append(f"{os.path.relpath(LEDGER, ROOT)}: missing")
    else:
        for n, text in code_lines(LEDGER):
            if PUBLIC_FIELD.search(text):
                rel = os.path.relpath(LEDGER, ROOT)
                problems.append(f"{rel}:{n}: a counter field is public: {text.strip()}")
    for p in problems:
        print(p)
    if problems:
        print(
            "ledger-check: change the counters only through engine::ledger::Ledger's methods",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Check that the workspace's declared rust-version is true.

Usage: scripts/rust-version-check.py

Reads `cargo metadata` and fails (exit 1) when a dependency declares a higher
`rust-version` than the workspace's `[workspace.package] rust-version`, or when a
workspace crate does not inherit it; prints the highest requirements either way.
"""

import json
import subprocess
import sys


def version(text):
    return tuple(int(part) for part in text.split("."))


def main():
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--locked"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    members = set(meta["workspace_members"])
    ours = [p for p in meta["packages"] if p["id"] in members]
    declared = {p["name"]: p.get("rust_version") for p in ours}
    missing = [name for name, v in declared.items() if not v]
    workspace = max((version(v) for v in declared.values() if v), default=(0,))
    needed = sorted(
        ((version(p["rust_version"]), p["name"], p["version"])
         for p in meta["packages"]
         if p["id"] not in members and p.get("rust_version")),
        reverse=True,
    )
    shown = ".".join(map(str, workspace))
    print(f"declared rust-version: {shown}")
    for v, name, ver in needed[:3]:
        print(f"  {name} {ver} needs {'.'.join(map(str, v))}")
    ok = True
    if missing:
        print(f"error: {', '.join(sorted(missing))} declare no rust-version; add `rust-version.workspace = true`")
        ok = False
    if len({v for v in declared.values() if v}) > 1:
        print(f"error: the crates declare different rust-versions: {declared}")
        ok = False
    if needed and needed[0][0] > workspace:
        v, name, ver = needed[0]
        print(f"error: {name} {ver} needs Rust {'.'.join(map(str, v))}, above the declared {shown}; raise [workspace.package] rust-version")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

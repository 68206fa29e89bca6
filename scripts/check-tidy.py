#!/usr/bin/env python3
"""Fails when clang-tidy warns on a line changed since the recorded base commit.

"Changed code" is every line that `git diff BASE` shows as added or modified in a .cc/.h file
under src/, runners/, tests/ or bench/ (committed since BASE, staged or not), where BASE is the
commit named in scripts/tidy-base.txt (or $DLBENCH_TIDY_BASE). Lines nobody touched since BASE
are not judged, so a file never has to be cleaned as a whole before it may be changed, and the
cost is proportional to the change, not to the tree (docs/development.md has the figures).

Each changed .cc is run through clang-tidy with the repository's .clang-tidy and the build's
compile_commands.json, with --line-filter limited to its changed lines and those of the changed
headers it includes; a changed header no changed .cc includes is checked through one .cc that
does. Any warning left is a failure: the rule set in .clang-tidy is the list of errors.

Usage: scripts/check-tidy.py [--build DIR] [--base COMMIT] [-j N]   (exit 0 clean, 1 warnings,
2 cannot check: no clang-tidy, no compile_commands.json, the base commit is not in this clone)
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BASE_FILE = os.path.join("scripts", "tidy-base.txt")
CHECKED_DIRS = ("src/", "runners/", "tests/", "bench/")
WANT_MAJOR = "14"
HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
DIAGNOSTIC = re.compile(r"^(/[^:]+):(\d+):(\d+): (warning|error): (.*)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def fail(message, code=2):
    print(f"check-tidy: {message}", file=sys.stderr)
    sys.exit(code)


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def recorded_base():
    with open(os.path.join(ROOT, BASE_FILE), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                return line
    fail(f"{BASE_FILE} names no commit")


def changed_lines(base):
    """{repo-relative path: [[first, last], ...]} of added or modified lines since base."""
    diff = git("diff", "-U0", "--no-color", "--diff-filter=AMR", base, "--", "*.cc", "*.h")
    changed = {}
    path = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            name = line[4:]
            path = name[2:] if name.startswith("b/") else None
            if path is not None and not path.startswith(CHECKED_DIRS):
                path = None
            continue
        match = HUNK.match(line)
        if match and path is not None:
            first = int(match.group(1))
            count = int(match.group(2)) if match.group(2) is not None else 1
            if count > 0:
                changed.setdefault(path, []).append([first, first + count - 1])
    return changed


def includes_of(path):
    try:
        with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
            return INCLUDE.findall(f.read())
    except OSError:
        return []


def header_matches(include, header):
    return header == include or header.endswith("/" + include)


def plan(changed, compiled):
    """[(tu, {path: ranges})]: the translation units to run and the lines each may report."""
    tus = {}
    for path, ranges in changed.items():
        if path.endswith(".cc") and path in compiled:
            tus.setdefault(path, {})[path] = ranges
    for header, ranges in changed.items():
        if not header.endswith(".h"):
            continue
        users = [tu for tu in tus if any(header_matches(i, header) for i in includes_of(tu))]
        if not users:
            stem = header[: -len(".h")] + ".cc"
            candidates = [stem] if stem in compiled else []
            candidates += sorted(tu for tu in compiled if any(header_matches(i, header) for i in includes_of(tu)))
            if not candidates:
                print(f"check-tidy: note: no compiled file includes {header}; not checked")
                continue
            users = [candidates[0]]
            tus.setdefault(users[0], {})
        for tu in users:
            tus[tu][header] = ranges
    return sorted(tus.items())


# A precompiled header's flags as CMake writes them: GCC's `-include .../cmake_pch.hxx` (with
# -Winvalid-pch), clang's `-Xclang -include-pch -Xclang X.pch -Xclang -include -Xclang X.hxx`.
PCH_FLAGS = re.compile(r"( -Xclang -include-pch -Xclang \S+| -Xclang -include -Xclang \S+cmake_pch\.hxx"
                       r"| -include \S+cmake_pch\.hxx| -Winvalid-pch)")


def arguments_without_pch(arguments):
    kept, i = [], 0
    while i < len(arguments):
        a = arguments[i]
        if a == "-Winvalid-pch":
            i += 1
        elif a == "-include" and i + 1 < len(arguments) and arguments[i + 1].endswith("cmake_pch.hxx"):
            i += 2
        elif (a == "-Xclang" and i + 3 < len(arguments) and arguments[i + 1] in ("-include-pch", "-include")
              and arguments[i + 2] == "-Xclang"
              and (arguments[i + 1] == "-include-pch" or arguments[i + 3].endswith("cmake_pch.hxx"))):
            i += 4
        else:
            kept.append(a)
            i += 1
    return kept


def write_database_without_pch(entries, folder):
    """Writes the compile database to folder/compile_commands.json without precompiled-header flags.

    clang-tidy cannot read GCC's .gch (runners/torch precompiles <torch/torch.h>,
    DLBENCH_TORCH_PCH); the sources include every header they need themselves, so it parses them
    as they are written."""
    cleaned = []
    for entry in entries:
        entry = dict(entry)
        if "command" in entry:
            entry["command"] = PCH_FLAGS.sub("", entry["command"])
        if "arguments" in entry:
            entry["arguments"] = arguments_without_pch(entry["arguments"])
        cleaned.append(entry)
    with open(os.path.join(folder, "compile_commands.json"), "w", encoding="utf-8") as f:
        json.dump(cleaned, f)


def run_one(clang_tidy, build, tu, lines):
    line_filter = json.dumps([{"name": os.path.join(ROOT, p), "lines": r} for p, r in sorted(lines.items())])
    header_filter = "^" + re.escape(ROOT) + "/(src|runners|tests|bench)/"
    cmd = [clang_tidy, "-p", build, "--quiet", f"--line-filter={line_filter}", f"--header-filter={header_filter}",
           os.path.join(ROOT, tu)]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    findings = []
    for line in proc.stdout.splitlines():
        match = DIAGNOSTIC.match(line)
        if match:
            findings.append(f"{os.path.relpath(match.group(1), ROOT)}:{match.group(2)}:{match.group(3)}: "
                            f"{match.group(4)}: {match.group(5)}")
    if proc.returncode != 0 and not findings:
        findings.append(f"{tu}: clang-tidy failed (exit {proc.returncode}): {proc.stderr.strip()[-400:]}")
    return tu, findings, time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--base", default=os.environ.get("DLBENCH_TIDY_BASE"))
    parser.add_argument("-j", type=int, default=int(os.environ.get("DLBENCH_JOBS", os.cpu_count() or 1)))
    args = parser.parse_args()

    clang_tidy = os.environ.get("CLANG_TIDY", "clang-tidy")
    if shutil.which(clang_tidy) is None:
        fail(f"{clang_tidy} not found (apt-get install clang-tidy; scripts/setup-debian.sh does)")
    version = subprocess.run([clang_tidy, "--version"], capture_output=True, text=True).stdout
    if f"version {WANT_MAJOR}." not in version:
        fail(f"need clang-tidy {WANT_MAJOR} (the checks' behaviour changes between versions), found: "
             f"{version.strip()} (set CLANG_TIDY)")
    database = os.path.join(args.build, "compile_commands.json")
    if not os.path.isfile(database):
        fail(f"{database} not found: configure the build first (scripts/build.sh)")
    with open(database, encoding="utf-8") as f:
        entries = json.load(f)
    compiled = {os.path.relpath(os.path.join(e["directory"], e["file"]), ROOT) for e in entries}

    base = args.base or recorded_base()
    if subprocess.run(["git", "cat-file", "-e", base + "^{commit}"], cwd=ROOT, capture_output=True).returncode != 0:
        fail(f"base commit {base} is not in this clone (a shallow clone? fetch more history, or set "
             f"DLBENCH_TIDY_BASE)")
    changed = changed_lines(base)
    work = plan(changed, compiled)
    if not work:
        print(f"check-tidy: no changed C++ lines since {base[:12]}")
        return 0
    started = time.monotonic()
    findings = []
    with tempfile.TemporaryDirectory(prefix="check-tidy-") as database_dir:
        write_database_without_pch(entries, database_dir)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
            for tu, found, _ in pool.map(lambda item: run_one(clang_tidy, database_dir, *item), work):
                findings.extend(found)
    elapsed = time.monotonic() - started
    for finding in sorted(set(findings)):
        print(finding)
    summary = (f"{len(work)} translation unit(s), {sum(len(r) for r in changed.values())} changed range(s) "
               f"since {base[:12]}, {elapsed:.0f} s with -j {args.j}")
    if findings:
        print(f"check-tidy: {len(set(findings))} warning(s) in changed code ({summary})")
        return 1
    print(f"check-tidy: clean ({summary})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

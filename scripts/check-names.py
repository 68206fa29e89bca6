#!/usr/bin/env python3
"""Fails when production code outside the data model spells a declared name as a literal.

The data model (src/record/) declares every metric name, MEMORY field and the names of outcomes,
verdicts and run statuses; producers and consumers must use its constants so a renamed or
misspelt name is a compile error, not a metric nobody reads (the MFU bug: the torch runner sent
"device_peak_flops_per_s", the orchestrator read "peak_flops_per_s").

Checked: every .cc/.h under src/ and runners/ except src/record/ and test code (*_test.cc,
test_*.h, *_test_util.h). Reported: a string literal equal to a declared metric or memory-field
name, and a comparison of an outcome/verdict/status with a string literal.

A line may carry "// names: <reason>" when the literal is deliberately something else (a
parameter that shares a metric's name).

Usage: scripts/check-names.py [REPO_ROOT]   (exit 0 clean, 1 with findings listed)
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
DECLARATION = re.compile(r'inline constexpr std::string_view k\w+ = "([^"]+)";')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
COMPARISON = re.compile(r'\b(outcome|verdict|status)\s*[!=]=\s*"')


def declared_names():
    with open(os.path.join(ROOT, "src", "record", "metrics.h"), encoding="utf-8") as f:
        names = set(DECLARATION.findall(f.read()))
    names.discard("label")  # the MEMORY label key: a plain word used in many other places
    names.discard("end")
    return names


def is_test_file(name):
    return name.endswith("_test.cc") or name.startswith("test_") or name.endswith("_test_util.h")


def production_files():
    for top in ("src", "runners"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            if os.path.relpath(dirpath, ROOT).startswith(os.path.join("src", "record")):
                continue
            for name in sorted(files):
                if name.endswith((".cc", ".h")) and not is_test_file(name):
                    yield os.path.join(dirpath, name)


def strip_comment(line):
    # Literals in comments document names; only code counts. A '//' inside a literal is rare
    # enough in this code base that a simple cut is right.
    cut = line.find("//")
    return line if cut < 0 else line[:cut]


def main():
    names = declared_names()
    findings = []
    for path in production_files():
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if "// names:" in line:  # a deliberate use, with its reason after the marker
                    continue
                code = strip_comment(line)
                for literal in LITERAL.findall(code):
                    if literal in names:
                        findings.append(f"{os.path.relpath(path, ROOT)}:{number}: metric name \"{literal}\" "
                                        "spelt as a literal; use its record::metric/record::memory constant")
                if COMPARISON.search(code):
                    findings.append(f"{os.path.relpath(path, ROOT)}:{number}: an outcome, verdict or status "
                                    "compared with a literal; use the record:: enum")
    for f in findings:
        print(f)
    if findings:
        print(f"check-names: {len(findings)} finding(s)", file=sys.stderr)
        return 1
    print(f"check-names: clean ({len(names)} declared names)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

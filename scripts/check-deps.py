#!/usr/bin/env python3
"""Fails when a module includes a module it may not use, as docs/architecture.md declares it.

The module table of docs/architecture.md ("## Modules") names each module (`src/<name>`,
`runners/<name>`) and, in its "depends on" column, the modules and libraries it builds on. A
module may include the headers of the modules it depends on, directly or through one of them
(the transitive closure), and its own; anything else is a layer reaching sideways or upward
(monitor including store) and fails here. "all of the above" means every module listed in an
earlier row. Names in the column that are not modules (std, fmt, LibTorch, ...) are libraries and
are not checked.

Checked: every .cc/.h under src/<module>/ and runners/<module>/ (clients/ hold no C++), tests included (a module's tests
may use only what the module may use; test helpers of another module are not theirs to reach).
An include counts when its first path component is a module of src/ (`#include "store/x.h"`).
Also reported: a directory under src/, runners/ or clients/ that the table does not list, a table row
naming a module that does not exist, a cycle in the declared dependencies, and production code (not
*_test.cc, test_*.h, *_test_util.h, fake_*) including a test double (fake_*.h, test_*.h,
*_test_util.h): fakes live in test-only libraries such as dlbench::monitor_fakes.

Usage: scripts/check-deps.py [REPO_ROOT]   (exit 0 clean, 1 with findings listed)
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
ARCHITECTURE = os.path.join("docs", "architecture.md")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
MODULE_CELL = re.compile(r"^`((?:src|runners|clients)/[A-Za-z0-9_]+)`$")


def parse_table():
    """The module table as an ordered list of (module path, [dependency words])."""
    path = os.path.join(ROOT, ARCHITECTURE)
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        start = lines.index("## Modules")
    except ValueError:
        sys.exit(f"{ARCHITECTURE}: no '## Modules' section")
    rows = []
    header_seen = False
    for number, line in enumerate(lines[start + 1 :], start + 2):
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not header_seen:
            if len(cells) < 3 or cells[-1] != "depends on":
                sys.exit(f"{ARCHITECTURE}:{number}: expected a table whose last column is 'depends on'")
            header_seen = True
            continue
        if set(cells[0]) <= set("-: "):
            continue
        match = MODULE_CELL.match(cells[0])
        if not match:
            sys.exit(f"{ARCHITECTURE}:{number}: expected `src/<module>`, `runners/<module>` or `clients/<name>`, got {cells[0]}")
        # "plan (cell keys)": a parenthesis says why; it must not hold a comma.
        deps = [re.sub(r"\s*\(.*\)$", "", d.strip()) for d in cells[-1].split(",") if d.strip()]
        rows.append((match.group(1), deps, number))
    if not rows:
        sys.exit(f"{ARCHITECTURE}: the module table is empty")
    return rows


def short(module):
    """The include prefix of a module: src/store -> store; runners keep their path."""
    return module[len("src/") :] if module.startswith("src/") else module


def declared_graph(rows, findings):
    names = [short(m) for m, _, _ in rows]
    graph = {}
    for index, (module, deps, number) in enumerate(rows):
        edges = set()
        for dep in deps:
            if dep == "all of the above":
                edges.update(names[:index])
            elif dep in names:
                edges.add(dep)
            elif dep.startswith(("src/", "runners/", "clients/")):
                findings.append(f"{ARCHITECTURE}:{number}: {module} depends on {dep}, which is not a row of the table")
        graph[short(module)] = edges
    return graph


def closure(graph, start):
    seen = set()
    stack = [start]
    while stack:
        node = stack.pop()
        for dep in graph.get(node, ()):
            if dep not in seen:
                seen.add(dep)
                stack.append(dep)
    return seen


def find_cycle(graph):
    state = {}
    path = []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                return path[path.index(dep) :] + [dep]
            if dep not in state:
                cycle = visit(dep)
                if cycle:
                    return cycle
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def module_dirs():
    """Every module directory that exists: src/<name>, runners/<name>, clients/<name>."""
    found = []
    for top in ("src", "runners", "clients"):
        base = os.path.join(ROOT, top)
        for name in sorted(os.listdir(base)):
            if os.path.isdir(os.path.join(base, name)) and not name.startswith((".", "__")):
                found.append(f"{top}/{name}")
    return found


def is_test_code(name):
    return name.endswith("_test.cc") or name.startswith(("test_", "fake_")) or name.endswith("_test_util.h")


def is_test_double(include):
    name = os.path.basename(include)
    return name.startswith(("fake_", "test_")) or name.endswith("_test_util.h")


def sources(module):
    for dirpath, dirs, files in os.walk(os.path.join(ROOT, module)):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        for name in sorted(files):
            if name.endswith((".cc", ".h", ".cu", ".in")):
                yield os.path.join(dirpath, name)


def main():
    findings = []
    rows = parse_table()
    graph = declared_graph(rows, findings)
    listed = [m for m, _, _ in rows]
    existing = module_dirs()
    for module in existing:
        if module not in listed:
            findings.append(f"{module}: a module directory that {ARCHITECTURE}'s module table does not list")
    for module, _, number in rows:
        if module not in existing:
            findings.append(f"{ARCHITECTURE}:{number}: {module} is listed but does not exist")
    cycle = find_cycle(graph)
    if cycle:
        findings.append(f"{ARCHITECTURE}: the declared dependencies have a cycle: {' -> '.join(cycle)}")

    src_modules = {short(m) for m in listed if m.startswith("src/")}
    for module in listed:
        if module not in existing:
            continue
        me = short(module)
        allowed = closure(graph, me) | {me}
        for path in sources(module):
            with open(path, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    target = match.group(1).split("/", 1)[0]
                    rel = os.path.relpath(path, ROOT)
                    if is_test_double(match.group(1)) and not is_test_code(os.path.basename(path)):
                        findings.append(f"{rel}:{number}: production code includes the test double "
                                        f"\"{match.group(1)}\"")
                    if "/" in match.group(1) and target in src_modules and target not in allowed:
                        findings.append(
                            f"{rel}:{number}: {module} includes \"{match.group(1)}\" but may not use "
                            f"src/{target} ({ARCHITECTURE}: {module} depends on "
                            f"{', '.join(sorted(closure(graph, me))) or 'no module'})"
                        )
    for finding in findings:
        print(finding)
    if findings:
        print(f"{len(findings)} finding(s); fix the include or, if the design changed, {ARCHITECTURE}'s table")
        return 1
    print(f"module dependencies follow {ARCHITECTURE} ({len(listed)} modules)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A real `dlbench run` (null runner: ok, crashed and too-short cells, a load cell) exported as JSON validates
against docs/schema/export-v2.schema.json, and every metric in it has its definition.

Usage: export_schema_test.py SOURCE_DIR BIN_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

MATRIX = """name: schema
runner: null
matrix:
  model: [tiny]
  step_ms: [0.2]
  inject: [none, crash]
include:
  - {model: short, step_ms: 0.2, inject: none, samples_per_step: 4}
  - {model: load, scenario: infer, load: server, target_qps: 200, latency_bound_ms: 10}
measure:
  min_steps: 20
  min_time_s: 0.05
  max_time_s: 0.4
  target_rel_ci: 0.05
"""


def main():
    source, bin_dir = sys.argv[1], sys.argv[2]
    with open(os.path.join(source, "docs", "schema", "export-v2.schema.json"), encoding="utf-8") as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    with tempfile.TemporaryDirectory(prefix="dlbench-schema-") as tmp:
        matrix = os.path.join(tmp, "m.yaml")
        with open(matrix, "w", encoding="utf-8") as f:
            f.write(MATRIX)
        db = os.path.join(tmp, "r.db")
        dlbench = os.path.join(bin_dir, "dlbench")
        run = subprocess.run([dlbench, "--db", db, "run", matrix, "--out", os.path.join(tmp, "out")],
                             cwd=tmp, capture_output=True, text=True, timeout=120)
        assert run.returncode in (0, 1), run.stderr
        export = subprocess.run([dlbench, "--db", db, "export", "latest", "--format", "json"], cwd=tmp,
                                capture_output=True, text=True, timeout=60, check=True)
        doc = json.loads(export.stdout)
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(doc), key=lambda e: list(e.path))
    for e in errors:
        print(f"{'/'.join(str(p) for p in e.path)}: {e.message}")
    assert not errors, f"{len(errors)} schema violation(s)"
    outcomes = sorted(c["outcome"] for c in doc["cells"])
    assert outcomes == ["crashed", "ok", "ok", "ok"], outcomes
    names = {n for c in doc["cells"] for n in c["metrics"]}
    missing = names - set(doc["metric_definitions"])
    assert not missing, f"metrics without a definition: {sorted(missing)}"
    assert "samples_per_s" in names
    assert "query_latency_p99_ns" in names  # the load cell's (null runner, virtual time)
    # The schema is strict: an unknown verdict is refused (the file would not describe itself).
    bad = json.loads(json.dumps(doc))
    bad["cells"][0]["verdict"] = "invalid"
    assert not jsonschema.Draft202012Validator(schema).is_valid(bad)
    print(f"ok: {len(doc['cells'])} cells, {len(names)} metric names, schema valid")


if __name__ == "__main__":
    main()

"""The peers under dlbench: one matrix with ``runner: torch`` and with the Python runner gives
cells with equal keys, so ``dlbench compare`` matches them and names the runner in the
environment diff; bench/peers/compare_runs.sh does both runs and the comparison."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import SOURCE_DIR, needs_torch, runner_env

pytestmark = needs_torch

BODY = ("matrix:\n  model: [mobilenet_v2]\n  scenario: infer\n  batch_size: 2\n  image_size: 32\n"
        "  width_mult: 0.25\n  threads: 1\n  memory_format: auto\n  cudnn_benchmark: true\n  deterministic: false\n"
        "measure: {min_steps: 3, min_time_s: 0, max_time_s: 1, min_warmup_steps: 0}\n")
PYTHON_RUNNER = "runner:\n  command: [%s, -m, dlbench_runners.torch]\n" % json.dumps(sys.executable)


def _keys(dlbench, path) -> list:
    return [c["key"] for c in json.loads(dlbench("plan", str(path), "--json", check=True).stdout)]


def test_the_example_peer_matrices_give_equal_cell_keys(dlbench):
    torch_keys = _keys(dlbench, SOURCE_DIR / "examples/peers-torch.yaml")
    python_keys = _keys(dlbench, SOURCE_DIR / "examples/peers-python.yaml")
    assert len(torch_keys) == 4 and torch_keys == python_keys
    torch_text = (SOURCE_DIR / "examples/peers-torch.yaml").read_text()
    python_text = (SOURCE_DIR / "examples/peers-python.yaml").read_text()
    body = lambda text: text[text.index("matrix:"):]  # noqa: E731
    assert body(torch_text) == body(python_text)  # they differ only above matrix: (comments, name, runner)


def _needs_torch_runner(dlbench) -> None:
    if not os.access(dlbench.bin_dir / "dlbench-torch", os.X_OK):
        pytest.skip("this build has no dlbench-torch (LibTorch not found at configure time)")


def test_compare_matches_cpp_and_python_cells_and_names_the_runner(dlbench):
    _needs_torch_runner(dlbench)
    for name, runner in (("cpp.yaml", "runner: torch\n"), ("py.yaml", PYTHON_RUNNER)):
        run = dlbench.run_matrix(runner + BODY, name)
        assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(dlbench("compare", "1", "2", "--format", "json", check=True).stdout)
    assert len(report["cells"]) == 1 and not report["only_in_base"] and not report["only_in_candidate"]
    assert report["cells"][0]["ratio"] > 0
    changes = {c["path"]: c for c in report["environment_changes"]}
    assert (changes["/runner/runner"]["before"], changes["/runner/runner"]["after"]) == ("torch", "python-torch")
    assert changes["/runner/runner"]["decides_comparability"] is True
    assert (changes["/runner/framework/name"]["before"], changes["/runner/framework/name"]["after"]) == (
        "libtorch", "pytorch")


def test_compare_runs_script_runs_both_sides_and_compares(dlbench):
    _needs_torch_runner(dlbench)
    (dlbench.work / "t.yaml").write_text("runner: torch\n" + BODY)
    (dlbench.work / "p.yaml").write_text("runner:\n  command: [python3, -m, dlbench_runners.torch]\n" + BODY)
    env = runner_env({"BUILD": str(dlbench.bin_dir.parent), "DB": str(dlbench.db), "OUT": str(dlbench.work),
                      "PYTHON": sys.executable, "TORCH_MATRIX": str(dlbench.work / "t.yaml"),
                      "PYTHON_MATRIX": str(dlbench.work / "p.yaml")})
    proc = subprocess.run(["bash", str(SOURCE_DIR / "bench/peers/compare_runs.sh"), "1"], env=env, cwd=dlbench.work,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "== round 1: base PyTorch eager from Python, candidate dlbench-torch" in proc.stdout
    assert "! /runner/runner: python-torch -> torch" in proc.stdout
    assert "mobilenet_v2 infer" in proc.stdout

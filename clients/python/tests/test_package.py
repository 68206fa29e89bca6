"""clients/python is a pip-installable package: a wheel builds offline from the checkout with no
dependency, carries the protocol version in its version, and once installed in a virtual
environment its console scripts are runners ``dlbench run`` can start without PYTHONPATH."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import CLIENT_DIR

import dlbench_client


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PIP_REQUIRE_VIRTUALENV")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of clients/python (setuptools writes build/ and egg-info beside
    the sources, which must not land in the checkout)."""
    src = tmp_path_factory.mktemp("src") / "python"
    shutil.copytree(CLIENT_DIR, src, ignore=shutil.ignore_patterns("__pycache__", "tests", "build", "*.egg-info"))
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                           "-w", str(out), str(src)], capture_output=True, text=True, env=_clean_env(), timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [built] = list(out.glob("*.whl"))
    return built


def test_the_wheel_is_versioned_with_the_protocol_and_has_no_dependency(wheel):
    assert wheel.name == "dlbench_client-%s-py3-none-any.whl" % dlbench_client.__version__
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = z.read(meta_name).decode()
        entry_points = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "Version: %s" % dlbench_client.__version__ in metadata
    assert "Requires-Dist" not in metadata
    for module in ("dlbench_client/__init__.py", "dlbench_client/wire.py", "dlbench_client/session.py",
                   "dlbench_client/runner.py", "dlbench_client/py.typed", "dlbench_runners/torch.py",
                   "dlbench_runners/jax.py", "dlbench_runners/onnxruntime.py", "dlbench_runners/spin.py"):
        assert module in names, module
    assert not any(n.startswith("tests/") for n in names)
    for script in ("dlbench-py-torch = dlbench_runners.torch:main", "dlbench-py-jax = dlbench_runners.jax:main",
                   "dlbench-py-onnxruntime = dlbench_runners.onnxruntime:main",
                   "dlbench-py-spin = dlbench_runners.spin:main"):
        assert script in entry_points, script


def test_installed_in_a_venv_its_console_script_is_a_runner(wheel, tmp_path):
    bin_dir = os.environ.get("DLBENCH_BIN_DIR")
    if not bin_dir:
        pytest.skip("DLBENCH_BIN_DIR is not set")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    proc = subprocess.run([str(venv / "bin/pip"), "install", "--no-deps", "--no-index", str(wheel)],
                          capture_output=True, text=True, env=_clean_env(), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    where = subprocess.run([str(venv / "bin/python"), "-c", "import dlbench_client; print(dlbench_client.__file__)"],
                           capture_output=True, text=True, env=_clean_env(), cwd=tmp_path, check=True).stdout
    assert where.startswith(str(venv)), where
    matrix = tmp_path / "m.yaml"
    matrix.write_text("runner:\n  command: [%s]\nmatrix:\n  model: spin\n  iterations: 100\n"
                      "measure:\n  min_steps: 5\n  min_time_s: 0.05\n  max_time_s: 0.5\n" %
                      json.dumps(str(venv / "bin/dlbench-py-spin")))
    run = subprocess.run([str(Path(bin_dir) / "dlbench"), "--db", str(tmp_path / "r.db"), "run", str(matrix),
                          "--no-monitor", "--out", str(tmp_path / "out")], capture_output=True, text=True,
                         env=_clean_env(), cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    export = json.loads(subprocess.run([str(Path(bin_dir) / "dlbench"), "--db", str(tmp_path / "r.db"), "export",
                                        "latest", "--format", "json"], capture_output=True, text=True, check=True,
                                       env=_clean_env()).stdout)
    [cell] = export["cells"]
    assert cell["outcome"] == "ok" and cell["runner"]["runner"] == "python-spin"
    assert cell["runner"]["runner_version"] == dlbench_client.__version__

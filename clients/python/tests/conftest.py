"""Fixtures of the client's tests.

Run from the checkout: ``python3 -m pytest clients/python/tests`` (CTest does it with
DLBENCH_BIN_DIR set to the build's bin folder: tests/e2e/python.cmake). Tests that drive the real
``dlbench`` binary need that variable; without it they are skipped and say why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest

CLIENT_DIR = Path(__file__).resolve().parent.parent  # clients/python
SOURCE_DIR = CLIENT_DIR.parent.parent  # the repository
sys.path.insert(0, str(CLIENT_DIR))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def runner_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment for a runner or dlbench process: the checkout's packages importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(CLIENT_DIR), str(Path(__file__).resolve().parent)] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("OMP_NUM_THREADS", "1")
    env.update(extra or {})
    return env


class Dlbench:
    """The real dlbench binary, on a database in a temporary folder."""

    def __init__(self, bin_dir: Path, work: Path) -> None:
        self.bin_dir = bin_dir
        self.binary = bin_dir / "dlbench"
        self.work = work
        self.db = work / "r.db"

    def __call__(self, *args: str, check: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(self.binary), "--db", str(self.db), *args], cwd=self.work, env=runner_env(),
                              capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError("dlbench %s exited %d\nstdout:\n%s\nstderr:\n%s"
                                 % (" ".join(args), proc.returncode, proc.stdout, proc.stderr))
        return proc

    def run_matrix(self, text: str, name: str = "m.yaml", *args: str) -> subprocess.CompletedProcess:
        """Writes the matrix and runs it (any exit code)."""
        path = self.work / name
        path.write_text(text)
        return self("run", str(path), "--out", str(self.work / "out"), "--no-monitor", *args)

    def export(self, run: str = "latest") -> Dict[str, Any]:
        """``dlbench export RUN --format json``, parsed."""
        return json.loads(self("export", run, "--format", "json", check=True).stdout)

    def cells(self, run: str = "latest") -> List[Dict[str, Any]]:
        return self.export(run)["cells"]

    def steps(self, cell_index: int, run_id: int = 1) -> List[Tuple[int, int, int, Optional[int], Optional[int],
                                                                      Optional[int]]]:
        """A stored cell's step rows (rank, start, end, samples, data_wait, compute), read-only
        from the SQLite store (docs/storage.md: table steps)."""
        import sqlite3
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True)
        try:
            return con.execute(
                "SELECT s.rank, s.start_ns, s.end_ns, s.samples, s.data_wait_ns, s.compute_ns FROM steps s "
                "JOIN cells c ON c.id = s.cell_id WHERE c.run_id = ? AND c.idx = ? ORDER BY s.idx",
                (run_id, cell_index)).fetchall()
        finally:
            con.close()


    def series(self, cell_index: int, name: str, run_id: int = 1) -> List[Tuple[int, Optional[float]]]:
        """A stored cell's series ``name`` as (t_ns, value) in time order, read-only from the
        SQLite store (docs/storage.md: table series; a load cell's query records are the
        ``load.*`` series at each query's scheduled time)."""
        import sqlite3
        con = sqlite3.connect("file:%s?mode=ro" % self.db, uri=True)
        try:
            return con.execute(
                "SELECT s.t_ns, s.value FROM series s JOIN cells c ON c.id = s.cell_id "
                "WHERE c.run_id = ? AND c.idx = ? AND s.series = ? ORDER BY s.t_ns, s.id",
                (run_id, cell_index, name)).fetchall()
        finally:
            con.close()


@pytest.fixture
def dlbench(tmp_path: Path) -> Dlbench:
    """The dlbench binary of DLBENCH_BIN_DIR, working in a fresh folder."""
    bin_dir = os.environ.get("DLBENCH_BIN_DIR")
    if not bin_dir:
        pytest.skip("DLBENCH_BIN_DIR is not set (CTest sets it; or export DLBENCH_BIN_DIR=build/bin)")
    binary = Path(bin_dir) / "dlbench"
    if not os.access(binary, os.X_OK):
        pytest.fail("DLBENCH_BIN_DIR=%s holds no dlbench binary" % bin_dir)
    return Dlbench(Path(bin_dir), tmp_path)


def python_runner(module: str) -> str:
    """The YAML runner line of a Python runner module, with this interpreter."""
    return "runner:\n  command: [%s, -m, %s]\n" % (json.dumps(sys.executable), module)


def metric(cell: Dict[str, Any], name: str) -> Optional[float]:
    """A stored metric's value by name (export's {"name": {"value", "unit"}}), or None."""
    entry = cell.get("metrics", {}).get(name)
    return None if entry is None else entry["value"]


def torch_available() -> bool:
    import importlib.util
    return importlib.util.find_spec("torch") is not None and importlib.util.find_spec("torchvision") is not None


needs_torch = pytest.mark.skipif(not torch_available(), reason="torch/torchvision not installed for %s "
                                 "(apt-get install python3-torch python3-torchvision)" % sys.executable)


def spawn_runner(argv: Sequence[str], env: Optional[Dict[str, str]] = None):
    """A runner process on a fresh pipe pair: (process, write-to-runner fd, read-from-runner fd)."""
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    environ = runner_env(env)
    environ.update({"DLBENCH_PROTOCOL_FD_IN": str(to_r), "DLBENCH_PROTOCOL_FD_OUT": str(from_w)})
    proc = subprocess.Popen(list(argv), env=environ, pass_fds=(to_r, from_w), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    os.close(to_r)
    os.close(from_w)
    return proc, to_w, from_r

"""The JAX and ONNX Runtime runners through ``dlbench run``. Where the framework is installed (the
GPU machine) tiny cells run on the CPU; where it is not (Debian has neither) the cell must end
``unsupported`` saying what is missing, which is the path CPU CI proves. The ONNX export script
is checked wherever torch and onnx are installed."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest
from conftest import SOURCE_DIR, metric, needs_torch, python_runner

MEASURE = "timeout_s: 300\nmeasure:\n  min_steps: 3\n  min_time_s: 0\n  max_time_s: 2\n  min_warmup_steps: 0\n"
EXPORT = SOURCE_DIR / "bench/peers/export_onnx.py"


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@pytest.mark.skipif(_has("jax"), reason="jax is installed: test_jax_cells_run covers it")
def test_without_jax_a_cell_is_unsupported_naming_it(dlbench):
    dlbench.run_matrix(python_runner("dlbench_runners.jax") + "matrix:\n  model: resnet50\n" + MEASURE)
    [cell] = dlbench.cells()
    assert cell["outcome"] == "unsupported"
    assert cell["message"].startswith("jax is not installed for %s (No module named 'jax')" % sys.executable)
    assert cell["runner"]["runner"] == "python-jax" and cell["runner"]["framework"]["available"] is False


@pytest.mark.skipif(not (_has("jax") and _has("flax")), reason="jax and flax are not installed here")
def test_jax_cells_run_jit_and_op_by_op(dlbench):
    tiny_bert = "layers: 1, hidden_size: 32, heads: 2, seq_len: 16, vocab_size: 100"
    run = dlbench.run_matrix(python_runner("dlbench_runners.jax") +
                             "matrix:\n  model: [resnet50, bert_base]\n  compile: [true, false]\n  batch_size: 2\n"
                             "include:\n  - {model: resnet50, scenario: infer, image_size: 32, num_classes: 10}\n"
                             "  - {model: bert_base, scenario: train, %s}\n" % tiny_bert + MEASURE)
    assert run.returncode == 0, run.stdout + run.stderr
    cells = dlbench.cells()
    assert len(cells) == 4
    for cell in cells:
        assert cell["outcome"] == "ok", cell["message"]
        compiled = cell["params"]["compile"]
        assert cell["effective"]["compile"] is compiled
        assert (metric(cell, "xla_compile_s") is not None) is compiled
    bert = [c for c in cells if c["params"]["model"] == "bert_base"]
    assert all("final_loss" in c["extras"]["info"] or c["extras"]["info"].get("final_loss_nonfinite") for c in bert)


@pytest.mark.skipif(_has("onnxruntime"), reason="onnxruntime is installed: test_onnxruntime_cells_run covers it")
def test_without_onnxruntime_a_cell_is_unsupported_naming_it(dlbench):
    dlbench.run_matrix(python_runner("dlbench_runners.onnxruntime") +
                       "matrix:\n  model: resnet50\n  scenario: infer\n  model_path: none.onnx\n" + MEASURE)
    [cell] = dlbench.cells()
    assert cell["outcome"] == "unsupported"
    assert cell["message"].startswith("onnxruntime is not installed for %s" % sys.executable), cell["message"]


def _export(tmp_path, size: int = 32, model: str = "mobilenet_v2"):
    out = tmp_path / ("%s.onnx" % model)
    proc = subprocess.run([sys.executable, str(EXPORT), "--out", str(out), "--model", model, "--image-size", str(size),
                           "--num-classes", "10"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out, json.loads(proc.stdout.strip().splitlines()[-1])


@needs_torch
@pytest.mark.skipif(not _has("onnx"), reason="onnx is not installed (apt-get install python3-onnx)")
def test_the_export_script_writes_a_checked_model_with_a_dynamic_batch_axis(tmp_path):
    import onnx
    out, report = _export(tmp_path)
    assert report["onnx_checked"] is True and report["opset"] == 17
    graph = onnx.load(str(out)).graph
    [images] = [i for i in graph.input if i.name == "images"]
    dims = images.type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and [d.dim_value for d in dims[1:]] == [3, 32, 32]


@needs_torch
@pytest.mark.skipif(not _has("onnxruntime"), reason="onnxruntime is not installed here")
def test_onnxruntime_cells_run_with_and_without_graph_optimisation(dlbench, tmp_path):
    out, _ = _export(tmp_path)
    run = dlbench.run_matrix(python_runner("dlbench_runners.onnxruntime") +
                             "matrix:\n  model: mobilenet_v2\n  scenario: infer\n  batch_size: [1, 3]\n"
                             "  compile: [true, false]\n  model_path: %s\n" % json.dumps(str(out)) + MEASURE)
    assert run.returncode == 0, run.stdout + run.stderr
    cells = dlbench.cells()
    assert [c["outcome"] for c in cells] == ["ok"] * 4, [c["message"] for c in cells]
    for cell in cells:
        assert cell["effective"]["inputs"][0]["shape"] == [cell["params"]["batch_size"], 3, 32, 32]
        assert cell["effective"]["execution_provider"] == "CPUExecutionProvider"


def test_cuda_uuids_are_formatted_as_nvml_prints_them():
    from dlbench_runners.host import device_uuids, format_uuid
    raw = bytes(range(16))
    assert format_uuid(raw) == "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f"
    with pytest.raises(ValueError, match="16 bytes"):
        format_uuid(b"\x00" * 15)
    assert device_uuids("cpu", [0]) == []


def test_onnx_input_shapes_take_the_batch_and_seq_len():
    from dlbench_client import InvalidParameter
    from dlbench_runners.onnxruntime import resolve_shape
    assert resolve_shape("images", ["batch", 3, 224, 224], 8, None) == (8, 3, 224, 224)
    assert resolve_shape("ids", [None, "sequence"], 4, 128) == (4, 128)
    assert resolve_shape("scalar", [], 4, None) == ()
    with pytest.raises(InvalidParameter, match="fixed batch dimension of 1"):
        resolve_shape("images", [1, 3, 224, 224], 8, None)
    with pytest.raises(InvalidParameter, match="set seq_len"):
        resolve_shape("ids", ["batch", "sequence"], 4, None)

"""The PyTorch runner (dlbench_runners.torch): tiny models train and infer through ``dlbench run``
on the CPU, refusals end with their kinds, and the FLOP count matches the zoo's references."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import metric, needs_torch, python_runner

pytestmark = needs_torch

TESTS = Path(__file__).resolve().parent
RUNNER = python_runner("dlbench_runners.torch")
MEASURE = ("timeout_s: 180\nmeasure:\n  min_steps: 3\n  min_time_s: 0\n  max_time_s: 3\n  min_warmup_steps: 0\n")
TINY_BERT = "layers: 1, hidden_size: 32, heads: 2, seq_len: 16, vocab_size: 100"


def test_tiny_models_train_and_infer_through_dlbench_run(dlbench):
    run = dlbench.run_matrix(RUNNER + "matrix:\n  model: [mobilenet_v2, resnet50, bert_base]\n  batch_size: 2\n"
                             "  threads: 1\ninclude:\n"
                             "  - {model: mobilenet_v2, scenario: train, image_size: 32, width_mult: 0.25, num_classes: 10}\n"
                             "  - {model: resnet50, scenario: infer, image_size: 32, num_classes: 10,"
                             " cudnn_benchmark_limit: 3}\n"
                             "  - {model: bert_base, scenario: train, %s}\n" % TINY_BERT + MEASURE)
    assert run.returncode == 0, run.stdout + run.stderr
    mobilenet, resnet, bert = dlbench.cells()
    for i, cell in enumerate((mobilenet, resnet, bert)):
        assert cell["outcome"] == "ok", cell["message"]
        assert cell["runner"]["runner"] == "python-torch"
        assert cell["runner"]["framework"]["name"] == "pytorch"
        assert len(dlbench.steps(i)) >= 3
        assert metric(cell, "host_rss_bytes") > 0 and metric(cell, "flops_per_sample") > 0
        assert cell["effective"]["device"] == "cpu" and cell["effective"]["device_uuids"] == []
        assert cell["effective"]["threads"] == 1
    assert mobilenet["effective"]["optimizer"] == "sgd" and mobilenet["effective"]["lr"] == 0.1
    assert mobilenet["effective"]["model_options"] == {"image_size": 32, "width_mult": 0.25, "num_classes": 10}
    # A training cell reports its last loss (at lr 0.1 and batch 2 it may have diverged).
    assert "final_loss" in mobilenet["extras"]["info"] or mobilenet["extras"]["info"]["final_loss_nonfinite"]
    assert resnet["effective"]["grad_mode"] == "inference_mode" and "final_loss" not in resnet["extras"]["info"]
    # The limit is recorded as it applied (process-wide in PyTorch; its library default otherwise).
    assert resnet["effective"]["cudnn_benchmark_limit"] == 3
    assert bert["effective"]["optimizer"] == "adamw" and bert["effective"]["lr"] == 1e-4
    expected_impl = "hf" if _transformers() else "own"
    assert bert["effective"]["bert_impl"] == expected_impl and bert["extras"]["info"]["bert_impl"] == expected_impl


def _transformers() -> bool:
    import importlib.util
    return importlib.util.find_spec("transformers") is not None


def test_own_modules_and_torchscript_files_run(dlbench):
    import torch
    scripted = torch.jit.script(torch.nn.Sequential(torch.nn.Linear(8, 3), torch.nn.ReLU()))
    ts_path = dlbench.work / "m.pt"
    scripted.save(str(ts_path))
    run = dlbench.run_matrix(RUNNER + "matrix:\n  model: [custom, torchscript]\n  scenario: [train, infer]\n"
                             "  batch_size: 4\nexclude:\n  - {model: torchscript, scenario: train}\ninclude:\n"
                             "  - {model: custom, module: %s}\n"
                             "  - {model: torchscript, model_path: %s, input_shapes: 'B,8'}\n"
                             % (json.dumps(str(TESTS / "custom_models.py") + ":mlp"), json.dumps(str(ts_path)))
                             + MEASURE)
    assert run.returncode == 0, run.stdout + run.stderr
    train, infer, script = dlbench.cells()
    for cell in (train, infer, script):
        assert cell["outcome"] == "ok", cell["message"]
        assert metric(cell, "flops_per_sample") is None  # no honest count for a user's model
    assert (train["params"]["scenario"], infer["params"]["scenario"], script["params"]["model"]) == (
        "train", "infer", "torchscript")
    assert train["effective"]["optimizer"] == "sgd" and train["effective"]["lr"] == 0.01
    assert script["effective"]["model_options"] == {"model_path": str(ts_path)}


def test_failures_in_the_users_code_and_refusals_are_recorded_outcomes(dlbench):
    fails = json.dumps(str(TESTS / "custom_models.py") + ":fails")
    huge = json.dumps(str(TESTS / "custom_models.py") + ":huge")
    # Each include entry has a batch_size the axis lacks, so each is a cell of its own; the axis's
    # own cell has no model.
    dlbench.run_matrix(RUNNER + "matrix:\n  batch_size: [1]\ninclude:\n"
                       "  - {batch_size: 2, model: custom, scenario: train, module: %s}\n"
                       "  - {batch_size: 3, model: custom, scenario: infer, module: %s}\n"
                       "  - {batch_size: 4, model: resnet50, image_size: big}\n"
                       "  - {batch_size: 5, model: resnet50, imagesize: 32}\n"
                       "  - {batch_size: 6, model: resnet50, compile: true, image_size: 32}\n"
                       "  - {batch_size: 7, model: ssd_mobilenet}\n"
                       "  - {batch_size: 8, model: resnet50, device: cuda}\n"
                       "  - {batch_size: 9, model: custom, module: 'custom_models:not_a_dict'}\n" % (fails, huge)
                       + MEASURE)
    cells = {c["params"]["batch_size"]: c for c in dlbench.cells()}
    got = {b: (c["outcome"], c["message"].split("\n")[0]) for b, c in cells.items()}
    import torch
    assert got[1] == ("error", "invalid configuration: model: required (resnet50, mobilenet_v2, bert_base, custom, "
                      "torchscript)")
    assert got[2] == ("error", "runner error: ValueError: the user's model gave up on call 3")
    # The stderr tail that follows shows the user's frame that raised.
    assert 'raise ValueError("the user\'s model gave up on call 3")' in cells[2]["message"]
    assert got[3][0] == "oom" and cells[3]["extras"]["oom_requested_bytes"] == 1 << 42, got[3]
    assert got[4] == ("error", "invalid configuration: image_size: expected an integer >= 1 and <= 1048576 (got 'big')")
    assert got[5][0] == "error" and got[5][1].startswith(
        "invalid configuration: unknown parameter 'imagesize' for runner python-torch (did you mean 'image_size'?)")
    if hasattr(torch, "compile"):
        assert got[6][0] == "ok", got[6]
        assert cells[6]["metrics"]["compile_time_s"]["value"] > 0
    else:
        assert got[6] == ("unsupported", "compile: true needs torch.compile (PyTorch >= 2.0); this is torch %s"
                          % torch.__version__)
    assert got[7][0] == "unsupported" and "MobileNetV3" in got[7][1]
    if not torch.cuda.is_available():
        assert got[8][0] == "unsupported" and got[8][1].startswith("device cuda: CUDA is not available"), got[8]
    assert got[9][0] == "error" and "the factory must return a dict" in got[9][1]


def test_forward_flops_match_the_zoos_references():
    import torch
    import torchvision

    from dlbench_runners.torch_models import OwnBert, count_forward_flops
    resnet = count_forward_flops(torchvision.models.resnet50(weights=None), (torch.randn(1, 3, 224, 224),))
    mobilenet = count_forward_flops(torchvision.models.mobilenet_v2(weights=None), (torch.randn(1, 3, 224, 224),))
    assert resnet == pytest.approx(2 * 4.089e9, rel=0.02)  # torchvision's model card: 4.089 G multiply-adds
    assert mobilenet == pytest.approx(2 * 0.301e9, rel=0.02)
    bert = OwnBert(12, 768, 12, 30522, 2)
    linear = count_forward_flops(bert, (torch.zeros(1, 128, dtype=torch.long), torch.ones(1, 128, dtype=torch.long)))
    attention = 4.0 * 12 * 128**2 * 768
    # 12 x (12 L h^2 + 2 L^2 h) multiply-adds (docs/models.md), plus the pooler and classifier.
    assert linear + attention == pytest.approx(2 * 12 * (12 * 128 * 768**2 + 2 * 128**2 * 768), rel=0.02)


def test_out_of_memory_messages_give_the_requested_size():
    from dlbench_runners.torch import classify_torch_error, requested_bytes
    assert requested_bytes("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.2 GiB total)") == 2 << 30
    assert requested_bytes("DefaultCPUAllocator: can't allocate memory: you tried to allocate 4398046511104 bytes."
                           ) == 4398046511104
    assert requested_bytes("something else") is None
    oom = classify_torch_error(RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB"))
    assert oom is not None and oom.kind == "oom" and oom.details == {"requested_bytes": 20 << 20}
    bn = classify_torch_error(ValueError("Expected more than 1 value per channel when training, got input size [1, 64]"))
    assert bn is not None and bn.kind == "unsupported" and "batch_size >= 2" in bn.message
    assert classify_torch_error(KeyError("x")) is None


def test_hello_describes_pytorch_and_the_devices(tmp_path):
    from dlbench_runners.torch import TorchRunner
    hello = TorchRunner().hello()
    import torch
    assert hello.runner == "python-torch"
    assert hello.framework["version"] == torch.__version__ and hello.framework["python"] == sys.version.split()[0]
    assert hello.devices[0]["type"] == "cpu"
    assert len(hello.devices) == 1 + (torch.cuda.device_count() if torch.cuda.is_available() else 0)


def test_load_scenarios_serve_queries_with_the_model(dlbench):
    # `runner: {command: [python3, -m, dlbench_runners.torch]}` with `load: server`: the dynamic
    # batcher over a small custom model (and MobileNetV2 in single stream), every batch size warmed
    # before READY, the gather and the forward timed per batch.
    mlp = json.dumps(str(TESTS / "custom_models.py") + ":mlp")
    run = dlbench.run_matrix(RUNNER + "timeout_s: 180\nmeasure:\n  min_time_s: 0.2\n  max_time_s: 3\n"
                             "matrix:\n  scenario: infer\n  threads: 1\n  load: server\n  model: custom\n"
                             "  module: %s\n  target_qps: 200\n  max_batch: 4\n  batch_timeout_us: 1000\n"
                             "include:\n  - {model: mobilenet_v2, image_size: 32, width_mult: 0.25, num_classes: 10,"
                             " scenario: infer, threads: 1, load: single_stream, sample_library_size: 8}\n" % mlp)
    server, single = sorted(dlbench.cells(), key=lambda c: c["params"]["load"])
    for cell in (server, single):
        assert cell["outcome"] == "ok", cell["message"]
        assert cell["runner"]["runner"] == "python-torch"
        info = cell["extras"]["load"]
        assert info["queries_received"] == info["queries_issued"] >= info["measured_queries"] > 0
        assert metric(cell, "query_pre_mean_ns") > 0 and metric(cell, "query_compute_mean_ns") > 0
        assert cell["effective"]["load"]["input_path"].startswith("host gather")
    assert server["effective"]["load"]["warmed_batch_sizes"] == [1, 2, 3, 4]
    assert server["effective"]["load"]["streams"] == 1 and server["effective"]["load"]["max_batch"] == 4
    assert all(1 <= v <= 4 for _, v in dlbench.series(0, "load.batch"))
    assert single["effective"]["load"]["warmed_batch_sizes"] == [1]
    assert single["effective"]["load"]["sample_library_size"] == 8
    assert single["extras"]["load"]["headline"]["metric"] == "query_latency_early_stopping_ns"


def test_consecutive_cells_share_one_process_under_runner_reuse_with_the_same_setup(dlbench):
    matrix = (RUNNER + "matrix:\n  model: mobilenet_v2\n  scenario: train\n  batch_size: [2, 4]\n  threads: 1\n"
              "  image_size: 32\n  width_mult: 0.25\n  num_classes: 10\n" + MEASURE)
    run = dlbench.run_matrix(matrix, "m.yaml")
    assert run.returncode == 0, run.stdout + run.stderr
    alone = dlbench.cells()
    run = dlbench.run_matrix(matrix, "m.yaml", "--runner-reuse")
    assert run.returncode == 0, run.stdout + run.stderr
    shared = dlbench.cells()
    assert all(c["outcome"] == "ok" for c in alone + shared), [c["message"] for c in alone + shared]
    assert alone[0]["runner"]["pid"] != alone[1]["runner"]["pid"]
    first, second = (c["extras"]["runner_process"] for c in shared)
    assert first["pid"] == second["pid"] and (first["cell_of_process"], second["cell_of_process"]) == (1, 2)
    assert [c["effective"]["process_cell"] for c in shared] == [1, 2]
    for a, b in zip(alone, shared):
        # What setup built is the same in a kept process: parameters, model options, FLOPs (a
        # figure a reused runner object would carry over if end_cell did not reset it).
        assert {k: v for k, v in b["effective"].items() if k != "process_cell"} == a["effective"]
        assert metric(b, "flops_per_sample") == metric(a, "flops_per_sample") > 0
        # The last loss depends on how many steps ran (at lr 0.1 it may have diverged: nonfinite).
        losses = {"final_loss", "final_loss_nonfinite"}
        assert set(b["extras"]["info"]) - losses == set(a["extras"]["info"]) - losses
        assert losses & set(b["extras"]["info"])


def test_bert_layers_stacked_projections_equal_three_linears():
    """BertLayer runs Q, K and V as one product over the stacked weights (as bert.cc); the outputs
    equal three separate Linear layers' (the previous form) on the same weights and inputs."""
    import math

    import torch
    import torch.nn.functional as F

    from dlbench_runners.torch_models import BertLayer
    torch.manual_seed(3)
    layer = BertLayer(32, 4, 64, 0.0).eval()
    x = torch.randn(2, 8, 32)
    bias = torch.zeros(2, 1, 1, 8)
    bias[1, ..., 6:] = -10000.0  # the second sequence padded after 6 tokens

    def previous(x: torch.Tensor) -> torch.Tensor:
        n, length, _ = x.shape

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(n, length, layer.heads, layer.head_dim).transpose(1, 2)

        q, k, v = split(layer.query(x)), split(layer.key(x)), split(layer.value(x))
        ctx = (q @ k.transpose(-2, -1) / math.sqrt(layer.head_dim) + bias).softmax(-1) @ v
        ctx = ctx.transpose(1, 2).reshape(n, length, -1)
        h = layer.attention_norm(x + layer.attention_out(ctx))
        return layer.output_norm(h + layer.output(F.gelu(layer.intermediate(h))))

    with torch.no_grad():
        got, want = layer(x, bias), previous(x)
    assert got.shape == want.shape
    assert torch.allclose(got, want, atol=1e-5, rtol=0), (got - want).abs().max().item()

"""Runners built on dlbench_client, each a program a matrix points at:

- ``python3 -m dlbench_runners.torch``: PyTorch from Python, eager or torch.compile (its zoo in
  torch_models, its other model builders in torch_builders, its load cells in torch_load);
- ``python3 -m dlbench_runners.jax``: JAX/Flax, jit-compiled or op by op (jax.disable_jit);
- ``python3 -m dlbench_runners.onnxruntime``: an .onnx file on ONNX Runtime's CPU or CUDA provider;
- ``python3 -m dlbench_runners.spin``: a fixed amount of pure-Python arithmetic per step (the
  harness overhead benchmark and the client's tests).

Each imports its framework lazily: without it the runner still says HELLO, and a cell ends as
ERROR unsupported naming what is missing. docs/python-client.md lists every runner's parameters.
"""

"""Factories for the PyTorch runner's ``model: custom`` (module: tests/custom_models.py:NAME),
following the contract in docs/python-client.md: factory(params) -> {"model", "inputs", ...}."""

from typing import Any, Dict

import torch
import torch.nn as nn


def mlp(params: Dict[str, Any]) -> Dict[str, Any]:
    """A two-layer perceptron on 16 features, classification target (cross-entropy)."""
    batch = params["batch_size"]
    g = torch.Generator().manual_seed(params["seed"])
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    return {"model": model, "inputs": (torch.randn(batch, 16, generator=g),),
            "target": torch.randint(4, (batch,), generator=g)}


class FailsAtCall(nn.Module):
    """Raises ValueError on its third forward call."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 1)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == 3:
            raise ValueError("the user's model gave up on call 3")
        return self.linear(x).mean()


def fails(params: Dict[str, Any]) -> Dict[str, Any]:
    """Forward returns the loss (no target); the third call raises."""
    return {"model": FailsAtCall(), "inputs": torch.randn(params["batch_size"], 4)}


class Huge(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.empty(1 << 40, dtype=torch.float32).sum() + x.sum()  # 4 TiB


def huge(params: Dict[str, Any]) -> Dict[str, Any]:
    """Asks the CPU allocator for 4 TiB in its first forward."""
    return {"model": Huge(), "inputs": torch.randn(2, 2)}


def not_a_dict(params: Dict[str, Any]) -> Any:
    return nn.Linear(2, 2)

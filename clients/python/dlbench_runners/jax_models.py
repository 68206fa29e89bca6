"""Flax (linen) equivalents of the zoo's ResNet-50 v1.5 and BERT-Base (docs/models.md), and the
optimizers of the zoo's recipes written with jax.tree_util (no optax dependency).

Imported only by dlbench_runners.jax once jax and flax are known to be importable. Images are
NHWC, JAX's layout; ``dtype`` is the compute dtype (bf16/fp16 mixed precision), parameters stay
float32.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Sequence, Tuple

import flax.linen as nn
import jax
import jax.numpy as jnp

RESNET50 = {"image_size": 224, "num_classes": 1000}
BERT_BASE = {"layers": 12, "hidden_size": 768, "heads": 12, "seq_len": 128, "vocab_size": 30522, "num_classes": 2}
BERT_MAX_POSITIONS = 512


class Bottleneck(nn.Module):
    """ResNet v1.5 bottleneck: 1x1, 3x3 (carrying the stride), 1x1 x4, projection shortcut."""

    features: int
    strides: int
    dtype: Any

    @nn.compact
    def __call__(self, x: jnp.ndarray, train: bool) -> jnp.ndarray:
        norm = lambda: nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=1e-5, dtype=self.dtype)  # noqa: E731
        y = nn.Conv(self.features, (1, 1), use_bias=False, dtype=self.dtype)(x)
        y = nn.relu(norm()(y))
        y = nn.Conv(self.features, (3, 3), (self.strides, self.strides), padding=((1, 1), (1, 1)), use_bias=False,
                    dtype=self.dtype)(y)
        y = nn.relu(norm()(y))
        y = nn.Conv(4 * self.features, (1, 1), use_bias=False, dtype=self.dtype)(y)
        y = norm()(y)
        if x.shape[-1] != 4 * self.features or self.strides != 1:
            x = nn.Conv(4 * self.features, (1, 1), (self.strides, self.strides), use_bias=False, dtype=self.dtype)(x)
            x = norm()(x)
        return nn.relu(x + y)


class ResNet50(nn.Module):
    """ResNet-50 v1.5 as torchvision builds it: 7x7 stem, max pool, [3, 4, 6, 3] bottlenecks."""

    num_classes: int
    dtype: Any = jnp.float32
    stages: Sequence[int] = (3, 4, 6, 3)

    @nn.compact
    def __call__(self, x: jnp.ndarray, train: bool = True) -> jnp.ndarray:
        x = x.astype(self.dtype)
        x = nn.Conv(64, (7, 7), (2, 2), padding=((3, 3), (3, 3)), use_bias=False, dtype=self.dtype)(x)
        x = nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=1e-5, dtype=self.dtype)(x)
        x = nn.relu(x)
        x = nn.max_pool(x, (3, 3), (2, 2), padding=((1, 1), (1, 1)))
        for i, blocks in enumerate(self.stages):
            for j in range(blocks):
                x = Bottleneck(64 * 2**i, 2 if (j == 0 and i > 0) else 1, self.dtype)(x, train)
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(self.num_classes, dtype=self.dtype)(x).astype(jnp.float32)


class BertLayer(nn.Module):
    """Post-LayerNorm encoder layer (self-attention, GELU feed-forward of 4 x hidden)."""

    hidden: int
    heads: int
    dtype: Any
    dropout: float = 0.1

    @nn.compact
    def __call__(self, x: jnp.ndarray, bias: jnp.ndarray, train: bool) -> jnp.ndarray:
        n, length, _ = x.shape
        head_dim = self.hidden // self.heads
        init = nn.initializers.normal(0.02)
        dense = lambda f: nn.Dense(f, dtype=self.dtype, kernel_init=init)  # noqa: E731
        drop = lambda t: nn.Dropout(self.dropout, deterministic=not train)(t)  # noqa: E731

        def split(t: jnp.ndarray) -> jnp.ndarray:
            return t.reshape(n, length, self.heads, head_dim).transpose(0, 2, 1, 3)

        q, k, v = split(dense(self.hidden)(x)), split(dense(self.hidden)(x)), split(dense(self.hidden)(x))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim) + bias.astype(q.dtype)
        probs = drop(jax.nn.softmax(scores.astype(jnp.float32), axis=-1).astype(self.dtype))
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(n, length, self.hidden)
        h = nn.LayerNorm(epsilon=1e-12, dtype=self.dtype)(x + drop(dense(self.hidden)(ctx)))
        ff = dense(self.hidden)(jax.nn.gelu(dense(4 * self.hidden)(h), approximate=False))
        return nn.LayerNorm(epsilon=1e-12, dtype=self.dtype)(h + drop(ff))


class Bert(nn.Module):
    """BERT for sequence classification: embeddings, encoder, tanh pooler, classifier."""

    layers: int
    hidden: int
    heads: int
    vocab: int
    num_classes: int
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, ids: jnp.ndarray, mask: jnp.ndarray, train: bool = True) -> jnp.ndarray:
        init = nn.initializers.normal(0.02)
        positions = jnp.arange(ids.shape[1])[None, :]
        x = (nn.Embed(self.vocab, self.hidden, embedding_init=init)(ids) +
             nn.Embed(BERT_MAX_POSITIONS, self.hidden, embedding_init=init)(positions) +
             nn.Embed(2, self.hidden, embedding_init=init)(jnp.zeros_like(ids)))
        x = nn.LayerNorm(epsilon=1e-12, dtype=self.dtype)(x.astype(self.dtype))
        x = nn.Dropout(0.1, deterministic=not train)(x)
        bias = ((1.0 - mask.astype(jnp.float32)) * -1e4)[:, None, None, :]
        for _ in range(self.layers):
            x = BertLayer(self.hidden, self.heads, self.dtype)(x, bias, train)
        pooled = jnp.tanh(nn.Dense(self.hidden, dtype=self.dtype, kernel_init=init)(x[:, 0]))
        pooled = nn.Dropout(0.1, deterministic=not train)(pooled)
        return nn.Dense(self.num_classes, dtype=self.dtype, kernel_init=init)(pooled).astype(jnp.float32)


def cross_entropy(logits: jnp.ndarray, labels: jnp.ndarray) -> jnp.ndarray:
    """Mean softmax cross-entropy of integer labels, in float32."""
    logp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=-1))


def sgd(lr: float, momentum: float = 0.9, weight_decay: float = 1e-4) -> Tuple[Callable, Callable]:
    """torch.optim.SGD's update (weight decay added to the gradient, then momentum)."""
    def init(params: Any) -> Any:
        return jax.tree_util.tree_map(jnp.zeros_like, params)

    def update(grads: Any, state: Any, params: Any) -> Tuple[Any, Any]:
        grads = jax.tree_util.tree_map(lambda g, p: g + weight_decay * p, grads, params)
        state = jax.tree_util.tree_map(lambda b, g: momentum * b + g, state, grads)
        params = jax.tree_util.tree_map(lambda p, b: p - lr * b, params, state)
        return params, state
    return init, update


def adamw(lr: float, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, weight_decay: float = 0.01
          ) -> Tuple[Callable, Callable]:
    """torch.optim.AdamW's update (decoupled weight decay, bias correction)."""
    def init(params: Any) -> Any:
        zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
        return {"m": zeros, "v": zeros, "t": jnp.zeros((), jnp.int32)}

    def update(grads: Any, state: Any, params: Any) -> Tuple[Any, Any]:
        t = state["t"] + 1
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, state["m"], grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, state["v"], grads)
        c1 = 1 - b1 ** t.astype(jnp.float32)
        c2 = 1 - b2 ** t.astype(jnp.float32)
        params = jax.tree_util.tree_map(
            lambda p, m, v: p * (1 - lr * weight_decay) - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
        return params, {"m": m, "v": v, "t": t}
    return init, update


def build(name: str, p: Dict[str, Any], batch: int, dtype: Any, seed: int) -> Dict[str, Any]:
    """The model, its inputs (NumPy-free: jax.random on the host's default device, moved later),
    labels, optimizer recipe and effective sizes. Raises ValueError naming a bad size."""
    key = jax.random.PRNGKey(seed % (2**32))
    k_data, k_label = jax.random.split(jax.random.fold_in(key, 1))
    if name == "resnet50":
        o = {k: (p[k] if p.get(k) is not None else v) for k, v in RESNET50.items()}
        if o["image_size"] < 32:
            raise ValueError("image_size: resnet50 needs at least 32 (its total stride), got %d" % o["image_size"])
        model = ResNet50(num_classes=o["num_classes"], dtype=dtype)
        images = jax.random.normal(k_data, (batch, o["image_size"], o["image_size"], 3), jnp.float32)
        labels = jax.random.randint(k_label, (batch,), 0, o["num_classes"])
        return {"model": model, "inputs": (images,), "labels": labels, "optimizer": "sgd", "lr": 0.1, "options": o,
                "layout": "NHWC"}
    if name == "bert_base":
        o = {k: (p[k] if p.get(k) is not None else v) for k, v in BERT_BASE.items()}
        if o["hidden_size"] % o["heads"]:
            raise ValueError("hidden_size %d must be divisible by heads %d" % (o["hidden_size"], o["heads"]))
        if o["seq_len"] > BERT_MAX_POSITIONS:
            raise ValueError("seq_len: at most %d, got %d" % (BERT_MAX_POSITIONS, o["seq_len"]))
        model = Bert(o["layers"], o["hidden_size"], o["heads"], o["vocab_size"], o["num_classes"], dtype)
        ids = jax.random.randint(k_data, (batch, o["seq_len"]), 0, o["vocab_size"])
        mask = jnp.ones((batch, o["seq_len"]), jnp.int32)
        labels = jax.random.randint(k_label, (batch,), 0, o["num_classes"])
        return {"model": model, "inputs": (ids, mask), "labels": labels, "optimizer": "adamw", "lr": 1e-4,
                "options": o, "layout": "tokens"}
    raise KeyError(name)

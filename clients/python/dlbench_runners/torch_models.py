"""Models of the PyTorch runner: torchvision's CNNs and BERT-Base (Hugging Face's or torch.nn's),
sized by the same parameters and defaults as dlbench-torch's zoo (runners/torch/models/zoo.cc,
docs/models.md), and the FLOP count with the zoo's convention.

Imported only by dlbench_runners.torch after torch is known to be importable.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from dlbench_client import InvalidParameter, Unsupported

#: The zoo's standard sizes (docs/models.md).
RESNET50 = {"image_size": 224, "base_width": 64, "num_classes": 1000}
MOBILENET_V2 = {"image_size": 224, "width_mult": 1.0, "num_classes": 1000}
BERT_BASE = {"layers": 12, "hidden_size": 768, "heads": 12, "seq_len": 128, "vocab_size": 30522, "num_classes": 2}
BERT_MAX_POSITIONS = 512


def _sized(defaults: Dict[str, Any], p: Dict[str, Any]) -> Dict[str, Any]:
    return {k: (p[k] if p.get(k) is not None else v) for k, v in defaults.items()}


class BertLayer(nn.Module):
    """A post-LayerNorm encoder layer, as runners/torch/models/bert.cc (and bench/peers' BERT)."""

    def __init__(self, hidden: int, heads: int, intermediate: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attention_out = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(dropout)
        self.p = dropout

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        n, length, _ = x.shape

        # One product over the three weights stacked, as runners/torch/models/bert.cc: under autocast
        # x is fp32 (a LayerNorm's output) and each Linear casts its input, so three projections
        # would cast it three times (docs/benchmarks.md "BERT-base against Hugging Face").
        projections = (self.query, self.key, self.value)
        qkv = F.linear(x, torch.cat([m.weight for m in projections]), torch.cat([m.bias for m in projections]))
        q, k, v = qkv.view(n, length, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        p = self.p if self.training else 0.0
        if hasattr(F, "scaled_dot_product_attention"):  # PyTorch >= 2.0: fused kernels where possible
            ctx = F.scaled_dot_product_attention(q, k, v, bias.to(q.dtype), dropout_p=p)
        else:  # the same math with matmul and softmax (PyTorch 1.13)
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim) + bias.to(q.dtype)
            ctx = F.dropout(scores.softmax(-1), p, self.training) @ v
        ctx = ctx.transpose(1, 2).reshape(n, length, -1)
        h = self.attention_norm(x + self.dropout(self.attention_out(ctx)))
        return self.output_norm(h + self.dropout(self.output(F.gelu(self.intermediate(h)))))


class OwnBert(nn.Module):
    """BERT for sequence classification in torch.nn: embeddings, encoder, tanh pooler on the first
    token, classifier; BERT's initialisation (normal 0.02). Inputs: ids and mask [N, L] int64."""

    def __init__(self, layers: int, hidden_size: int, heads: int, vocab_size: int, num_classes: int,
                 dropout: float = 0.1) -> None:
        super().__init__()
        self.word = nn.Embedding(vocab_size, hidden_size)
        self.position = nn.Embedding(BERT_MAX_POSITIONS, hidden_size)
        self.token_type = nn.Embedding(2, hidden_size)
        self.norm = nn.LayerNorm(hidden_size, eps=1e-12)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(BertLayer(hidden_size, heads, 4 * hidden_size, dropout) for _ in range(layers))
        self.pooler = nn.Linear(hidden_size, hidden_size)
        self.classifier = nn.Linear(hidden_size, num_classes)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.word(ids) + self.position(positions) + self.token_type(torch.zeros_like(ids))
        x = self.dropout(self.norm(x))
        # An additive -1e4 bias for padding, finite in fp16/bf16.
        bias = ((1.0 - mask.to(x.dtype)) * -1e4)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, bias)
        return self.classifier(self.dropout(torch.tanh(self.pooler(x[:, 0]))))


class HfBert(nn.Module):
    """Hugging Face's BertForSequenceClassification with BERT-Base's configuration, returning the
    logits so that it is called like OwnBert."""

    def __init__(self, layers: int, hidden_size: int, heads: int, vocab_size: int, num_classes: int) -> None:
        super().__init__()
        import transformers
        config = transformers.BertConfig(vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=layers,
                                         num_attention_heads=heads, intermediate_size=4 * hidden_size,
                                         max_position_embeddings=BERT_MAX_POSITIONS, num_labels=num_classes)
        self.bert = transformers.BertForSequenceClassification(config)
        self.attention_implementation = getattr(self.bert.config, "_attn_implementation", None)
        self.transformers_version = transformers.__version__

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.bert(input_ids=ids, attention_mask=mask).logits


def transformers_importable() -> bool:
    """Whether Hugging Face transformers can be imported here."""
    import importlib.util
    return importlib.util.find_spec("transformers") is not None


class Built:
    """A model with its fixed synthetic batch (on the CPU) and what was built."""

    def __init__(self, model: nn.Module, inputs: Tuple[torch.Tensor, ...], target: Optional[torch.Tensor],
                 convolutional: bool, options: Dict[str, Any], optimizer: str, info: Dict[str, Any]) -> None:
        self.model = model
        self.inputs = inputs
        self.target = target
        self.convolutional = convolutional
        self.options = options
        self.optimizer = optimizer  # "sgd" (the CNNs' recipe) or "adamw" (BERT's)
        self.info = info
        self.flops_attention_per_sample = 0.0  # attention matmuls, which no layer hook sees


def build_zoo(name: str, p: Dict[str, Any], batch: int, generator: torch.Generator) -> Built:
    """resnet50, mobilenet_v2 or bert_base at the zoo's sizes unless ``p`` says otherwise. Weights
    come from the global generator (seeded by the caller); the batch from ``generator``."""
    if name in ("resnet50", "mobilenet_v2"):
        import torchvision
        if name == "resnet50":
            o = _sized(RESNET50, p)
            if o["base_width"] != 64:
                raise Unsupported("base_width %d: torchvision's ResNet-50 has a fixed stem of 64 channels "
                                  "(runner: torch builds other widths)" % o["base_width"])
            model = torchvision.models.resnet50(weights=None, num_classes=o["num_classes"])
        else:
            o = _sized(MOBILENET_V2, p)
            model = torchvision.models.mobilenet_v2(weights=None, width_mult=o["width_mult"],
                                                    num_classes=o["num_classes"])
        if o["image_size"] < 32:
            raise InvalidParameter("image_size: %s needs at least 32 (its total stride), got %d" % (name, o["image_size"]))
        images = torch.randn(batch, 3, o["image_size"], o["image_size"], generator=generator)
        target = torch.randint(o["num_classes"], (batch,), generator=generator)
        return Built(model, (images,), target, True, o, "sgd", {"torchvision_version": torchvision.__version__})
    if name == "bert_base":
        o = _sized(BERT_BASE, p)
        if o["hidden_size"] % o["heads"]:
            raise InvalidParameter("hidden_size %d must be divisible by heads %d" % (o["hidden_size"], o["heads"]))
        if o["seq_len"] > BERT_MAX_POSITIONS:
            raise InvalidParameter("seq_len: at most %d (BERT's position table), got %d" % (BERT_MAX_POSITIONS, o["seq_len"]))
        impl = p.get("bert_impl") or "auto"
        if impl == "hf" and not transformers_importable():
            raise Unsupported("bert_impl hf: Hugging Face transformers is not installed (bert_impl own builds BERT in torch.nn)")
        use_hf = impl == "hf" or (impl == "auto" and transformers_importable())
        args = (o["layers"], o["hidden_size"], o["heads"], o["vocab_size"], o["num_classes"])
        info: Dict[str, Any] = {}
        if use_hf:
            model: nn.Module = HfBert(*args)
            info = {"bert_impl": "hf", "transformers_version": model.transformers_version,
                    "attention_implementation": model.attention_implementation}
        else:
            model = OwnBert(*args)
            info = {"bert_impl": "own", "attention_implementation":
                    "scaled_dot_product_attention" if hasattr(F, "scaled_dot_product_attention") else "matmul_softmax"}
        ids = torch.randint(o["vocab_size"], (batch, o["seq_len"]), generator=generator)
        mask = torch.ones(batch, o["seq_len"], dtype=torch.long)
        target = torch.randint(o["num_classes"], (batch,), generator=generator)
        built = Built(model, (ids, mask), target, False, o, "adamw", info)
        # QK^T and attention x V: 2 L^2 h multiply-adds per layer (docs/models.md), 2 FLOPs each.
        built.flops_attention_per_sample = 4.0 * o["layers"] * o["seq_len"] ** 2 * o["hidden_size"]
        return built
    if name == "ssd_mobilenet":
        raise Unsupported("ssd_mobilenet has no PyTorch-from-Python equivalent here: torchvision's SSDLite is built "
                          "on MobileNetV3, a different network (use runner: torch)")
    raise InvalidParameter("model: expected resnet50, mobilenet_v2, bert_base, custom or torchscript (got '%s')" % name)


def count_forward_flops(model: nn.Module, inputs: Tuple[torch.Tensor, ...]) -> float:
    """FLOPs of one forward pass over ``inputs`` with the zoo's convention: convolutions and
    linear layers from their actual shapes, one multiply-add = 2 FLOPs; normalisation,
    activations, pooling, embeddings not counted. Runs the forward under no_grad in eval mode."""
    total = [0.0]

    def conv_hook(m: nn.Module, args: Tuple[Any, ...], out: torch.Tensor) -> None:
        assert isinstance(m, nn.Conv2d)
        kh, kw = m.kernel_size
        total[0] += 2.0 * out.numel() * (m.in_channels // m.groups) * kh * kw

    def linear_hook(m: nn.Module, args: Tuple[Any, ...], out: torch.Tensor) -> None:
        assert isinstance(m, nn.Linear)
        total[0] += 2.0 * out.numel() * m.in_features

    def bert_layer_hook(m: nn.Module, args: Tuple[Any, ...], out: torch.Tensor) -> None:
        # Its Q, K and V projections run as one product over their stacked weights (F.linear), so
        # their Linear modules' hooks do not fire: three [hidden -> hidden] products of out's shape.
        assert isinstance(m, BertLayer)
        total[0] += 3 * 2.0 * out.numel() * m.query.in_features

    handles = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            handles.append(m.register_forward_hook(conv_hook))
        elif isinstance(m, nn.Linear):
            handles.append(m.register_forward_hook(linear_hook))
        elif isinstance(m, BertLayer):
            handles.append(m.register_forward_hook(bert_layer_hook))
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            model(*inputs)
    finally:
        model.train(was_training)
        for h in handles:
            h.remove()
    return total[0]

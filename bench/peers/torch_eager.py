#!/usr/bin/env python3
"""The dlbench-torch workloads in PyTorch eager from Python: the peer that dlbench-torch is compared
against (bench/peers/compare.py runs both on the same GPU in one call).

Same models (torchvision's ResNet-50 and MobileNetV2; BERT-Base written here in torch.nn with the
configuration of runners/torch/models/bert.cc), the same fixed synthetic batch resident on the
device, the same optimizers (SGD lr 0.1 momentum 0.9 weight decay 1e-4 for the CNNs, AdamW lr 1e-4
for BERT), autocast for bf16/fp16 (GradScaler for fp16 training), channels_last for the CNNs, and
the same timing method: every step ends with torch.cuda.synchronize() and is timed on the host's
monotonic clock; the first --warmup steps are dropped.

Prints one JSON object: the workload, samples_per_s (batch x timed steps / summed step time) and
step-time percentiles.

Kept to reproduce the figures recorded with it (docs/benchmarks.md). Its workloads now run under
dlbench as the Python runner dlbench_runners.torch; bench/peers/compare_runs.sh compares that with
dlbench-torch through `dlbench run` and `dlbench compare`.
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def attention(q, k, v, bias, dropout_p):
    """softmax(q k^T / sqrt(d) + bias) v over [N, heads, L, head_dim]: PyTorch's fused kernel where
    it has one (2.0 on), else the same arithmetic written out (1.13, the CPU machines' build)."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, bias, dropout_p=dropout_p)
    scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if bias is not None:
        scores = scores + bias
    return torch.matmul(F.dropout(torch.softmax(scores, -1), dropout_p), v)


class BertEncoderLayer(nn.Module):
    def __init__(self, hidden, heads, intermediate, dropout):
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

    def forward(self, x, mask_bias):
        n, length, _ = x.shape

        # One product over the stacked weights, as runners/torch/models/bert.cc: under autocast x is
        # fp32 and each Linear casts its input, so three projections would cast it three times.
        projections = (self.query, self.key, self.value)
        qkv = F.linear(x, torch.cat([p.weight for p in projections]), torch.cat([p.bias for p in projections]))
        q, k, v = qkv.view(n, length, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        ctx = attention(q, k, v, mask_bias.to(q.dtype), self.p if self.training else 0.0)
        ctx = ctx.transpose(1, 2).reshape(n, length, -1)
        h = self.attention_norm(x + self.dropout(self.attention_out(ctx)))
        return self.output_norm(h + self.dropout(self.output(F.gelu(self.intermediate(h)))))


class BertForClassification(nn.Module):
    def __init__(self, layers=12, hidden=768, heads=12, vocab=30522, max_positions=512, classes=2,
                 dropout=0.1):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_positions, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(BertEncoderLayer(hidden, heads, 4 * hidden, dropout) for _ in range(layers))
        self.pooler = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, classes)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, ids, mask):
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.word(ids) + self.position(positions) + self.token_type(torch.zeros_like(ids))
        x = self.dropout(self.norm(x))
        bias = ((1.0 - mask.to(x.dtype)) * -1e4)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, bias)
        return self.classifier(self.dropout(torch.tanh(self.pooler(x[:, 0]))))


def build(model, batch, device, seq_len):
    gen = torch.Generator().manual_seed(1)
    if model in ("resnet50", "mobilenet_v2"):
        import torchvision
        net = getattr(torchvision.models, model)(weights=None)
        inputs = (torch.randn(batch, 3, 224, 224, generator=gen).to(device),)
        target = torch.randint(1000, (batch,), generator=gen).to(device)
        return net, inputs, target, True
    if model == "bert_base":
        net = BertForClassification()
        ids = torch.randint(30522, (batch, seq_len), generator=gen).to(device)
        mask = torch.ones(batch, seq_len, dtype=torch.long, device=device)
        target = torch.randint(2, (batch,), generator=gen).to(device)
        return net, (ids, mask), target, False
    raise SystemExit(f"torch_eager.py: no peer for model '{model}' (resnet50, mobilenet_v2, bert_base)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--scenario", choices=["train", "infer"], default="train")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--precision", choices=["fp32", "tf32", "bf16", "fp16"], default="bf16")
    ap.add_argument("--memory-format", choices=["auto", "contiguous", "channels_last"], default="auto")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()

    torch.manual_seed(0)
    device = torch.device(args.device)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision != "fp32"
    net, inputs, target, conv = build(args.model, args.batch_size, device, args.seq_len)
    channels_last = args.memory_format == "channels_last" or (args.memory_format == "auto" and conv
                                                              and device.type == "cuda")
    net = net.to(device)
    if channels_last:
        net = net.to(memory_format=torch.channels_last)
        inputs = tuple(t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t for t in inputs)
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.precision)
    train = args.scenario == "train"
    net.train(train)
    opt = None
    scaler = None
    if train:
        if conv:
            opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
        else:
            opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
        if args.precision == "fp16":
            scaler = torch.amp.GradScaler("cuda")

    def step():
        if train:
            opt.zero_grad(set_to_none=True)
            with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
                loss = F.cross_entropy(net(*inputs), target)
            if scaler:
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
            else:
                loss.backward()
                opt.step()
        else:
            with torch.inference_mode(), torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
                net(*inputs)
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    times = []
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter_ns()
        step()
        t1 = time.perf_counter_ns()
        if i >= args.warmup:
            times.append((t1 - t0) * 1e-9)
    times.sort()
    out = {
        "peer": "pytorch-eager",
        "torch": torch.__version__,
        "model": args.model,
        "scenario": args.scenario,
        "batch_size": args.batch_size,
        "precision": args.precision,
        "memory_format": "channels_last" if channels_last else "contiguous",
        "timed_steps": len(times),
        "samples_per_s": args.batch_size * len(times) / sum(times),
        "step_ms_median": 1e3 * statistics.median(times),
        "step_ms_p90": 1e3 * times[min(len(times) - 1, math.floor(0.9 * len(times)))],
    }
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()

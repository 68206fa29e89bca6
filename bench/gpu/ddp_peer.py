"""PyTorch's own DistributedDataParallel as the peer of dlbench's ddp cells (bench/gpu/ddp_scaling.sh).

ResNet-50 training, bf16 autocast, channels_last, synthetic batch per rank, NCCL; the same
choices as the dlbench cells: SGD momentum 0.9, broadcast_buffers=False (dlbench broadcasts
buffers once, at the start), bucket_cap_mb 25. Run under torchrun; rank 0 prints one JSON line:
{"world_size", "batch_size", "steps", "seconds", "samples_per_s" (global), "per_rank_samples_per_s"}.
"""
import json
import os
import time

import torch
import torch.distributed as dist
import torchvision


def main():
    batch = int(os.environ.get("BATCH", "256"))
    warmup = int(os.environ.get("WARMUP", "20"))
    steps = int(os.environ.get("STEPS", "60"))
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local], broadcast_buffers=False,
                                                    bucket_cap_mb=25)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    g = torch.Generator(device="cuda").manual_seed(1 + rank)
    x = torch.randn(batch, 3, 224, 224, device="cuda", generator=g).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda", generator=g)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(ddp(x), y)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    seconds = time.perf_counter() - t0
    if rank == 0:
        per_rank = batch * steps / seconds
        print(json.dumps({"world_size": world, "batch_size": batch, "steps": steps, "seconds": seconds,
                          "samples_per_s": per_rank * world, "per_rank_samples_per_s": per_rank}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""A load cell of the PyTorch runner (dlbench_runners.torch, docs/load.md): its sample library served
through the client's load driver (dlbench_client.load), one query's samples gathered, run forward and
synchronised per ``issue``."""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from dlbench_client import QueryPhases, Unsupported
from dlbench_client.load import current_stream


class LoadServing:
    """TorchRunner's load serving (a mixin): ``_prepare_load`` reads the runner's ``torch`` and
    ``device`` and sets its ``_serve``, which ``issue`` calls."""

    torch: Any
    device: Any
    _serve: Optional[Callable[[List[int], int], QueryPhases]]

    def _prepare_load(self, load: Any, forward: Any, library: Tuple[Any, ...], autocast: Any,
                      memory_format: Any) -> Dict[str, Any]:
        """Makes ``issue`` for a load cell and runs every batch size it can be called with once per
        stream before READY (cuDNN's autotuning and lazy allocations stay out of the records, as
        dlbench-torch does); returns the effective cell's additions to ``load``."""
        torch = self.torch
        device = self.device
        cuda = device.type == "cuda"
        channels_last = memory_format is torch.channels_last
        host = load.input_residency == "host"
        streams = load.streams if load.scenario == "server" else 1
        if host:
            lib = tuple(t.contiguous() for t in library)
            if cuda:
                lib = tuple(t.pin_memory() for t in lib)
        else:
            lib = tuple(t.to(device) for t in library)
        clock = time.monotonic_ns
        largest = max(load.batch_sizes())
        if cuda:
            cuda_streams = [torch.cuda.Stream(device) for _ in range(streams)]
            # Page-locked staging buffers per stream, each for the largest batch.
            staging = [tuple(torch.empty((largest,) + tuple(t.shape[1:]), dtype=t.dtype).pin_memory() for t in lib)
                       for _ in range(streams)] if host else None

        def place(xs: Tuple[Any, ...]) -> Tuple[Any, ...]:
            if channels_last:
                return tuple(x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x for x in xs)
            return xs

        def run_forward(xs: Tuple[Any, ...]) -> None:
            with torch.inference_mode():
                if autocast is not None:
                    with autocast():
                        forward(*xs)
                else:
                    forward(*xs)

        def serve_cpu(samples: List[int], stream: int) -> QueryPhases:
            t0 = clock()
            idx = torch.tensor(samples, dtype=torch.long)
            xs = place(tuple(t.index_select(0, idx) for t in lib))
            t1 = clock()
            run_forward(xs)
            t2 = clock()
            return QueryPhases(host_pre_ns=t1 - t0, compute_ns=t2 - t1)

        def serve_cuda_host(samples: List[int], stream: int) -> QueryPhases:
            st = cuda_streams[stream]
            t0 = clock()
            n = len(samples)
            idx = torch.tensor(samples, dtype=torch.long)
            bufs = tuple(b[:n] for b in staging[stream])
            for t, b in zip(lib, bufs):
                torch.index_select(t, 0, idx, out=b)
            t1 = clock()
            with torch.cuda.stream(st):
                e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
                e0.record(st)
                xs = place(tuple(b.to(device, non_blocking=True) for b in bufs))
                e1.record(st)
                run_forward(xs)
                e2.record(st)
            st.synchronize()
            return QueryPhases(host_pre_ns=t1 - t0, h2d_ns=int(e0.elapsed_time(e1) * 1e6),
                               compute_ns=int(e1.elapsed_time(e2) * 1e6))

        def serve_cuda_device(samples: List[int], stream: int) -> QueryPhases:
            st = cuda_streams[stream]
            t0 = clock()
            with torch.cuda.stream(st):
                idx = torch.tensor(samples, dtype=torch.long, device=device)
                run_forward(place(tuple(t.index_select(0, idx) for t in lib)))
            st.synchronize()
            return QueryPhases(compute_ns=clock() - t0)

        self._serve = serve_cpu if not cuda else (serve_cuda_host if host else serve_cuda_device)
        warmed = load.batch_sizes()
        for stream in range(streams):
            for n in warmed:
                self._serve([j % load.sample_library_size for j in range(n)], stream)
        if not cuda:
            path = "host gather (index_select) -> forward (CPU: no copies)"
            timing = "host clock: host_pre (gather) and compute (forward) per batch"
        elif host:
            path = "host gather into a page-locked buffer -> H2D copy on the stream -> forward; outputs stay on the device"
            timing = ("host clock for the gather (host_pre); CUDA events on the query's stream around the H2D copy "
                      "and the forward; the host waits on the stream; latency from the host clock")
        else:
            path = "device-resident library: gather on the device -> forward (pure compute)"
            timing = "host clock from the gather to the stream's synchronize (compute)"
        return {"input_path": path, "timing": timing, "warmed_batch_sizes": warmed,
                "cuda_streams": streams if cuda else 0}

    def issue(self, samples: List[int]) -> Optional[QueryPhases]:
        """A load cell's batch: gather ``samples`` from the library, forward, synchronise."""
        if self._serve is None:
            raise Unsupported("this cell has no load")
        return self._serve(samples, current_stream())

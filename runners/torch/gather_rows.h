// The server's host gather (load_scenario.cc): a batch's samples copied from the query sample
// library into the stream's page-locked buffer, row by row with memcpy on the calling thread.
//
// torch::index_select_out does the same copy through ATen's intra-op thread pool (OpenMP, as many
// threads as cores on a GPU cell). The server calls it from every stream's thread at once when a
// queue has built, and concurrent parallel regions from several threads oversubscribe the cores;
// on an H200 (2026-12-06) the gather of 8 ResNet-50 samples took 0.83 ms a batch with a short queue
// and 2.0-2.9 ms once one had built (docs/benchmarks.md "H200 runs of 2026-12-06"). With this row
// copy on the stream's own thread, on an H100 (2026-12-06) the gather took 57-59 us a sample in every
// second of 15 s fixed-rate cells at the peak and at 4,000/s, and both kept up (docs/benchmarks.md
// "H100 runs of 2026-12-06").
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace dlbench::torchrunner {

// Whether each row (index along dimension 0) of `t` is one block of bytes, rows one after another:
// a dense CPU tensor whose dimension 0 is outermost (contiguous, or channels_last, whose samples
// are still whole blocks).
bool RowsAreBlocks(const torch::Tensor& t);

// Copies rows index[0, n) of `src` into rows [0, n) of `dst`, which have the same row shape,
// dtype and layout and RowsAreBlocks. Every index is below src.size(0) (the caller's library).
void GatherRows(const torch::Tensor& src, const std::int64_t* index, std::int64_t n,
                const torch::Tensor& dst);

}  // namespace dlbench::torchrunner

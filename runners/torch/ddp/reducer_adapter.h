// c10d::Reducer, the engine of PyTorch's DistributedDataParallel, built the way
// torch/nn/parallel/distributed.py builds it: buckets by size in reverse parameter order (the
// order backward produces gradients), the first one capped at 1 MiB. Its constructor differs
// across LibTorch versions; this is the one place that knows (reducer_adapter.cc).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <vector>

namespace c10d {
class Reducer;
}

namespace dlbench::torchrunner::ddp {

struct BucketPlan {
  std::vector<std::vector<std::size_t>> indices;  // parameter indices per bucket, in reduction order
  std::vector<std::size_t> size_limits;           // the cap each bucket was filled against
};

// PyTorch DDP's assignment: c10d::compute_bucket_assignment_by_size with caps {first, cap} on
// the parameters in reverse order, then the buckets reversed (torch/nn/parallel/distributed.py).
BucketPlan AssignBuckets(const std::vector<torch::Tensor>& params, std::int64_t first_cap_bytes,
                         std::int64_t cap_bytes);

// A Reducer over `params` (dense, all requiring gradients) with that plan. Throws c10::Error.
std::shared_ptr<c10d::Reducer> MakeReducer(const std::vector<torch::Tensor>& params, const BucketPlan& plan,
                                           const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                                           std::int64_t first_cap_bytes, std::int64_t cap_bytes);

}  // namespace dlbench::torchrunner::ddp

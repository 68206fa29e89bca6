#include "ddp/reducer_adapter.h"

#include <torch/version.h>

#include <algorithm>
#include <limits>
#include <string>
#include <torch/csrc/distributed/c10d/reducer.hpp>
#include <type_traits>
#include <unordered_map>

namespace dlbench::torchrunner::ddp {
namespace {

using ParamNames = std::unordered_map<std::size_t, std::string>;
using Indices = std::vector<std::vector<std::size_t>>;
using Group = c10::intrusive_ptr<c10d::ProcessGroup>;

// The constructor of the LibTorch compiled against, chosen at compile time. `R` is a template
// parameter so that the signatures this LibTorch lacks are never instantiated.
//   1.13:          params, indices, per_bucket_size_limits, group, expect_sparse, cap,
//                  find_unused, gradient_as_bucket_view, param_names, first_cap (10)
//   2.x:           params, indices, group, expect_sparse, cap, find_unused, gradient_as_bucket_view,
//                  param_names, first_cap, skip_all_reduce_unused_params, use_python_reducer (11)
//   2.11:          ... and bucket_bytes_cap_list (12; a later batched_grad_copy has a default)
template <class R>
std::shared_ptr<R> Construct(const std::vector<torch::Tensor>& params, const BucketPlan& plan,
                             const Group& group, std::int64_t first_cap, std::int64_t cap) {
  const std::vector<bool> sparse(params.size(), false);
  const bool find_unused = false;
  const bool as_view = false;  // DDP's default: gradients are copied into and out of the buckets
  if constexpr (std::is_constructible_v<R, std::vector<at::Tensor>, Indices, std::vector<std::size_t>, Group,
                                        std::vector<bool>, std::int64_t, bool, bool, ParamNames,
                                        std::int64_t>) {
    return std::make_shared<R>(params, plan.indices, plan.size_limits, group, sparse, cap, find_unused,
                               as_view, ParamNames{}, first_cap);
  } else if constexpr (std::is_constructible_v<R, std::vector<at::Tensor>, Indices, Group, std::vector<bool>,
                                               std::int64_t, bool, bool, ParamNames, std::int64_t, bool, bool,
                                               std::vector<std::int64_t>>) {
    std::vector<std::int64_t> caps(plan.size_limits.begin(), plan.size_limits.end());
    return std::make_shared<R>(params, plan.indices, group, sparse, cap, find_unused, as_view, ParamNames{},
                               first_cap, /*skip_all_reduce_unused_params=*/false,
                               /*use_python_reducer=*/false, caps);
  } else {
    return std::make_shared<R>(params, plan.indices, group, sparse, cap, find_unused, as_view, ParamNames{},
                               first_cap, /*skip_all_reduce_unused_params=*/false,
                               /*use_python_reducer=*/false);
  }
}

}  // namespace

BucketPlan AssignBuckets(const std::vector<torch::Tensor>& params, std::int64_t first_cap_bytes,
                         std::int64_t cap_bytes) {
  const std::vector<std::size_t> caps = {static_cast<std::size_t>(first_cap_bytes),
                                         static_cast<std::size_t>(cap_bytes)};
  auto [indices, limits] =
      c10d::compute_bucket_assignment_by_size(params, caps, std::vector<bool>(params.size(), false));
  // Buckets become ready in about the reverse of the parameters' order (backward runs the graph
  // backwards), so DDP hands them to the Reducer reversed.
  std::reverse(indices.begin(), indices.end());
  std::reverse(limits.begin(), limits.end());
  return {std::move(indices), std::move(limits)};
}

std::shared_ptr<c10d::Reducer> MakeReducer(const std::vector<torch::Tensor>& params, const BucketPlan& plan,
                                           const c10::intrusive_ptr<c10d::ProcessGroup>& group,
                                           std::int64_t first_cap_bytes, std::int64_t cap_bytes) {
  return Construct<c10d::Reducer>(params, plan, group, first_cap_bytes, cap_bytes);
}

}  // namespace dlbench::torchrunner::ddp

#include "ddp/rank.h"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include "common/clock.h"
#include "ddp/process_group.h"

namespace dlbench::torchrunner::ddp {
namespace {

// FNV-1a over the bytes, folded to 62 bits so that its negation (the MIN half of the check's
// all-reduce) never overflows.
std::uint64_t Fnv1a(const void* data, std::size_t n, std::uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

// Views of `flat` shaped as `tensors`, in order.
void CopyIn(torch::Tensor& flat, const std::vector<torch::Tensor>& tensors) {
  std::int64_t offset = 0;
  for (const torch::Tensor& t : tensors) {
    const std::int64_t n = t.numel();
    flat.narrow(0, offset, n).copy_(t.reshape(-1));
    offset += n;
  }
}

void CopyOut(const torch::Tensor& flat, std::vector<torch::Tensor>& tensors) {
  std::int64_t offset = 0;
  for (torch::Tensor& t : tensors) {
    const std::int64_t n = t.numel();
    t.copy_(flat.narrow(0, offset, n).view_as(t));
    offset += n;
  }
}

// One broadcast of many tensors from rank 0: flattened per dtype into one buffer each (a Gloo
// broadcast takes one tensor per device).
void BroadcastFromRankZero(c10d::ProcessGroup& group, std::vector<torch::Tensor> tensors) {
  torch::NoGradGuard no_grad;
  std::map<c10::ScalarType, std::vector<torch::Tensor>> by_dtype;
  for (const torch::Tensor& t : tensors) by_dtype[t.scalar_type()].push_back(t);
  for (auto& [dtype, group_tensors] : by_dtype) {
    std::int64_t total = 0;
    for (const torch::Tensor& t : group_tensors) total += t.numel();
    torch::Tensor flat = torch::empty({total}, group_tensors.front().options());
    CopyIn(flat, group_tensors);
    std::vector<torch::Tensor> io = {flat};
    group.broadcast(io, c10d::BroadcastOptions{})->wait();
    CopyOut(flat, group_tensors);
  }
}

std::optional<std::string> ConfiguredFault() {
  const char* env = std::getenv(kFaultEnv);
  if (env == nullptr || *env == '\0') return std::nullopt;
  return std::string(env);
}

}  // namespace

Rank::~Rank() = default;

std::unique_ptr<Rank> Rank::Join(const RankSetup& setup, std::vector<torch::Tensor> params,
                                 std::vector<torch::Tensor> buffers) {
  std::unique_ptr<Rank> r(new Rank());
  r->setup_ = setup;
  if (auto fault = ConfiguredFault()) {
    if (*fault != kSkipReductionFault)
      throw std::invalid_argument(
          fmt::format("{}: unknown fault '{}' (known: {})", kFaultEnv, *fault, kSkipReductionFault));
    r->skip_reduction_ = true;
    r->fault_ = *fault;
  }
  // A group of one needs no rendezvous: an in-process store. Ranks on one host meet in a file
  // (what `dlbench run` gives them); a TCP address is for launchers whose ranks span hosts.
  c10::intrusive_ptr<c10d::Store> store;
  std::string gloo_addr;  // empty: the loopback address
  if (setup.world_size == 1 && setup.rendezvous.port == 0 && setup.rendezvous.file.empty()) {
    store = c10::make_intrusive<c10d::HashStore>();
  } else if (!setup.rendezvous.file.empty()) {
    store = OpenFileStore(setup.rendezvous.file, setup.world_size, setup.timeout);
  } else {
    store = ConnectStore(setup.rendezvous.addr, setup.rendezvous.port, setup.rank, setup.world_size,
                         setup.timeout);
    // Ranks on several hosts: Gloo's pairs on the address this host reaches the store's host from.
    gloo_addr = LocalAddressToward(setup.rendezvous.addr, setup.rendezvous.port);
  }
  r->group_ = setup.nccl ? MakeNcclGroup(store, setup.rank, setup.world_size, setup.timeout)
                         : MakeGlooGroup(store, setup.rank, setup.world_size, setup.timeout, gloo_addr);
  for (const torch::Tensor& p : params) {
    if (p.requires_grad()) r->params_.push_back(p);
  }
  std::vector<torch::Tensor> state = r->params_;
  for (const torch::Tensor& b : buffers) state.push_back(b);
  BroadcastFromRankZero(*r->group_, state);

  if (!setup.collective_only)
    r->plan_ = AssignBuckets(r->params_, kFirstBucketCapBytes, setup.bucket_cap_bytes);
  for (const torch::Tensor& p : r->params_) r->gradient_bytes_ += p.numel() * p.element_size();
  if (setup.collective_only) {
    // model: allreduce: its steps call AllReduce themselves.
  } else if (setup.mode == DdpMode::kOverlap) {
    r->reducer_ = MakeReducer(r->params_, r->plan_, r->group_, kFirstBucketCapBytes, setup.bucket_cap_bytes);
  } else if (setup.mode == DdpMode::kComputeOnly) {
    r->barrier_ = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat).device(setup.device));
  } else {
    for (const auto& bucket : r->plan_.indices) {
      std::int64_t n = 0;
      for (std::size_t i : bucket) n += r->params_[i].numel();
      r->flat_buckets_.push_back(torch::empty({n}, r->params_[bucket.front()].options()));
    }
  }
  r->agree_ = torch::zeros({2}, torch::TensorOptions()
                                    .dtype(torch::kLong)
                                    .device(setup.nccl ? setup.device : torch::Device(torch::kCPU)));
  return r;
}

void Rank::AllReduceInPlace(torch::Tensor& flat) {
  std::vector<torch::Tensor> io = {flat};
  group_->allreduce(io, c10d::AllreduceOptions{})->wait();
}

void Rank::BeforeForward() {
  if (!reducer_) return;
  reducer_->prepare_for_forward();
  // What DDP's forward does first: after the first backward the Reducer regroups its buckets in
  // the order gradients became ready (a broadcast from rank 0, so a collective), once.
  if (!buckets_rebuilt_ && reducer_->rebuild_buckets()) buckets_rebuilt_ = true;
}

void Rank::BeforeBackward(const torch::Tensor& loss) {
  if (!reducer_ || skip_reduction_) return;
  reducer_->prepare_for_backward({loss});
}

std::optional<std::int64_t> Rank::AfterBackward() {
  if (reducer_) return std::nullopt;
  if (setup_.mode == DdpMode::kComputeOnly) {
    // The barrier after this rank's backward: a rank waits here for the slowest, as it would in
    // the gradients' all-reduce, but nothing of the gradients moves. The device finishes the
    // backward first, so that its time stays compute.
    if (setup_.device.is_cuda()) torch::cuda::synchronize(setup_.device.index());
    const std::int64_t b0 = MonotonicNowNs();
    AllReduceInPlace(barrier_);
    if (setup_.device.is_cuda()) torch::cuda::synchronize(setup_.device.index());
    return MonotonicNowNs() - b0;
  }
  const std::int64_t t0 = MonotonicNowNs();
  torch::NoGradGuard no_grad;
  const double scale = 1.0 / setup_.world_size;
  for (std::size_t b = 0; b < plan_.indices.size(); ++b) {
    std::vector<torch::Tensor> grads;
    grads.reserve(plan_.indices[b].size());
    for (std::size_t i : plan_.indices[b]) {
      torch::Tensor& g = params_[i].mutable_grad();
      if (!g.defined()) g = torch::zeros_like(params_[i]);
      grads.push_back(g);
    }
    torch::Tensor& flat = flat_buckets_[b];
    CopyIn(flat, grads);
    if (skip_reduction_) continue;
    AllReduceInPlace(flat);
    flat.mul_(scale);
    CopyOut(flat, grads);
  }
  // A NCCL work's wait() returns once the kernel is queued: the time counts to the device's end.
  if (setup_.device.is_cuda()) torch::cuda::synchronize(setup_.device.index());
  return MonotonicNowNs() - t0;
}

Rank::Wish Rank::Agree(Wish local) {
  agree_.fill_(static_cast<std::int64_t>(local));
  std::vector<torch::Tensor> io = {agree_};
  c10d::AllreduceOptions max;
  max.reduceOp = c10d::ReduceOp::MAX;
  group_->allreduce(io, max)->wait();
  return static_cast<Wish>(agree_[0].item<std::int64_t>());
}

ParameterCheck Rank::CheckParameters() {
  std::uint64_t h = 14695981039346656037ULL;
  for (const torch::Tensor& p : params_) {
    const torch::Tensor host = p.detach().to(torch::kCPU).contiguous();
    h = Fnv1a(host.data_ptr(), static_cast<std::size_t>(host.numel() * host.element_size()), h);
  }
  ParameterCheck check;
  check.local_hash = static_cast<std::int64_t>(h >> 2);
  torch::Tensor both = torch::tensor({check.local_hash, -check.local_hash}, torch::kLong);
  if (setup_.nccl) both = both.to(setup_.device);
  std::vector<torch::Tensor> io = {both};
  c10d::AllreduceOptions max;
  max.reduceOp = c10d::ReduceOp::MAX;
  group_->allreduce(io, max)->wait();
  const torch::Tensor host = both.to(torch::kCPU);
  check.max_hash = host[0].item<std::int64_t>();
  check.min_hash = -host[1].item<std::int64_t>();
  check.identical = check.min_hash == check.max_hash;
  return check;
}

nlohmann::json Rank::Effective() const {
  nlohmann::json e = {
      {"rank", setup_.rank},
      {"world_size", setup_.world_size},
      {"local_rank", setup_.rendezvous.local_rank},
      {"local_world_size", setup_.rendezvous.local_world_size},
      {"backend", setup_.nccl ? "nccl" : "gloo"},
      {"ddp_mode", DdpModeName(setup_.mode)},
      {"engine", setup_.collective_only ? "the process group alone: one all-reduce per step (model allreduce)"
                 : setup_.mode == DdpMode::kOverlap
                     ? "c10d::Reducer (bucketed all-reduce during backward, as PyTorch DDP)"
                 : setup_.mode == DdpMode::kSerial
                     ? "the same buckets flattened and all-reduced after backward, then averaged"
                     : "no gradient all-reduce; a one-element all-reduce after backward as a barrier"},
      {"bucket_cap_bytes", setup_.bucket_cap_bytes},
      {"first_bucket_cap_bytes", kFirstBucketCapBytes},
      {"buckets", plan_.indices.size()},
      {"gradient_bytes", gradient_bytes_},
      {"parameters", params_.size()},
      {"initial_state", "rank 0's parameters and buffers broadcast to every rank before the first step"},
      {"buffers", "not broadcast per step (PyTorch DDP's broadcast_buffers=False)"},
      {"stop", "the ranks agree after every step (a 2 x int64 MAX all-reduce outside the timed region)"},
  };
  if (!fault_.empty()) e["test_fault"] = fault_;
  return e;
}

}  // namespace dlbench::torchrunner::ddp

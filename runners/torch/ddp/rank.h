// One rank of a ddp cell (docs/distributed.md): the process group it joined, how its gradients
// are all-reduced (ddp_mode overlap: c10d's Reducer during backward; serial: the same buckets
// after backward; compute_only: not at all, a barrier per step instead), the agreement between steps on when
// to stop, and the end-of-cell check that every rank holds the same parameters.
//
// Calling rules: every method marked "collective" must be called by every rank of the group, in
// the same order, or the group hangs (until its timeout). Per training step, in this order:
// BeforeForward, forward, BeforeBackward(loss), backward, AfterBackward, optimizer step.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cell_options.h"
#include "ddp/reducer_adapter.h"
#include "protocol/runner_session.h"

namespace c10d {
class ProcessGroup;
class Reducer;
}  // namespace c10d

namespace dlbench::torchrunner::ddp {

// A test-only fault, read from the environment variable DLBENCH_TORCH_DDP_FAULT: the value
// `skip_reduction` makes every rank leave its gradients unreduced (overlap: no
// prepare_for_backward, so the Reducer's hooks stay unarmed; serial: no bucket all-reduce), the
// silent bug of forgetting that call. It exists so that a test proves the end-of-cell check fails
// a cell whose ranks stopped synchronising; no configuration key reaches it.
inline constexpr char kFaultEnv[] = "DLBENCH_TORCH_DDP_FAULT";
inline constexpr char kSkipReductionFault[] = "skip_reduction";

struct RankSetup {
  int rank = 0;
  int world_size = 1;
  protocol::Rendezvous rendezvous;
  DdpMode mode = DdpMode::kOverlap;
  bool nccl = false;  // else Gloo
  std::int64_t bucket_cap_bytes = kDefaultBucketCapBytes;
  std::chrono::milliseconds timeout{300'000};  // joining the group, and any one collective
  torch::Device device{torch::kCPU};
  // model: allreduce (ddp/allreduce_cell.h): the group alone, no gradients, buckets or Reducer.
  bool collective_only = false;
};

// What the end-of-cell check found: a 62-bit hash of every parameter's bytes, its minimum and
// maximum over the ranks.
struct ParameterCheck {
  bool identical = true;
  std::int64_t min_hash = 0;
  std::int64_t max_hash = 0;
  std::int64_t local_hash = 0;
};

class Rank {
 public:
  // Joins the group through the rendezvous (collective), then makes every rank start from rank
  // 0's parameters and buffers (a broadcast, as DDP's construction does). Throws c10::Error on a
  // failed rendezvous or collective, UnsupportedError for a backend this build lacks.
  static std::unique_ptr<Rank> Join(const RankSetup& setup, std::vector<torch::Tensor> params,
                                    std::vector<torch::Tensor> buffers);
  ~Rank();

  // overlap: the Reducer's prepare_for_forward and, once after the first step, its bucket
  // rebuild (collective). serial: nothing.
  void BeforeForward();
  // overlap: prepare_for_backward({loss}), which arms the Reducer's autograd hooks. serial: nothing.
  void BeforeBackward(const torch::Tensor& loss);
  // serial: all-reduces the gradients bucket by bucket and averages them (collective); returns
  // the nanoseconds it took, the device synchronised. compute_only: a barrier (a one-element
  // all-reduce, collective) in place of the gradients' all-reduce, so that a rank still waits for
  // the slowest; returns its nanoseconds. overlap: the Reducer has already done it inside
  // backward; returns nullopt (its communication is not separable from backward's compute).
  std::optional<std::int64_t> AfterBackward();

  // Between steps, outside the timed region (collective): the loop's end that every rank agrees
  // on, given this rank's wish (kStopped over kMaxTime over running on).
  enum class Wish : std::int64_t { kContinue = 0, kMaxTime = 1, kStop = 2 };
  Wish Agree(Wish local);

  // Sums `t` over the ranks in place (collective); on CUDA the caller synchronises.
  void AllReduce(torch::Tensor& t) { AllReduceInPlace(t); }

  // After the last step (collective): whether all ranks hold bitwise identical parameters.
  ParameterCheck CheckParameters();
  // Whether the ranks are meant to hold the same parameters: not in compute_only, which reduces
  // no gradients.
  bool Synchronises() const { return setup_.mode != DdpMode::kComputeOnly; }

  // The effective cell's "ddp" object: rank, world size, backend, mode, buckets, gradient bytes.
  nlohmann::json Effective() const;

 private:
  Rank() = default;
  void AllReduceInPlace(torch::Tensor& flat);

  RankSetup setup_;
  std::vector<torch::Tensor> params_;
  BucketPlan plan_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  std::shared_ptr<c10d::Reducer> reducer_;   // overlap only
  std::vector<torch::Tensor> flat_buckets_;  // serial only: one buffer per bucket
  torch::Tensor agree_;                      // the stop agreement's two int64s
  torch::Tensor barrier_;                    // compute_only: the per-step barrier's one element
  std::int64_t gradient_bytes_ = 0;
  bool skip_reduction_ = false;  // the test-only fault
  bool buckets_rebuilt_ = false;
  std::string fault_;  // the fault as configured, for the effective cell
};

// protocol::RunStepLoop for a rank: after each step (outside its timed region) the ranks agree
// whether to go on, so that all of them run the same number of collectives and stop together.
// max_steps is the same on every rank; STOP and max_time are each rank's own and are agreed.
template <class StepFn>
protocol::LoopResult RunRankStepLoop(protocol::RunnerSession& session, const protocol::RunnerLimits& limits,
                                     Rank& rank, StepFn&& step) {
  const std::int64_t begin_ns = MonotonicNowNs();
  const std::int64_t max_time_ns = static_cast<std::int64_t>(limits.max_time_s * 1e9);
  protocol::LoopResult result;
  for (;;) {
    protocol::StepRecord record;
    const std::int64_t t0 = MonotonicNowNs();
    const bool ok = step(record);
    const std::int64_t t1 = MonotonicNowNs();
    record.start_ns = t0;
    record.end_ns = t1;
    session.Record(record);
    ++result.steps;
    if (!ok) {
      result.end = protocol::LoopEnd::kStepFailed;
      break;
    }
    if (result.steps >= limits.max_steps) {
      result.end = protocol::LoopEnd::kMaxSteps;
      break;
    }
    Rank::Wish wish = Rank::Wish::kContinue;
    if (session.stop_requested()) {
      wish = Rank::Wish::kStop;
    } else if (t1 - begin_ns >= max_time_ns) {
      wish = Rank::Wish::kMaxTime;
    }
    const Rank::Wish agreed = rank.Agree(wish);
    if (agreed == Rank::Wish::kStop) {
      result.end = protocol::LoopEnd::kStopped;
      break;
    }
    if (agreed == Rank::Wish::kMaxTime) {
      result.end = protocol::LoopEnd::kMaxTime;
      break;
    }
  }
  session.FlushSteps(MonotonicNowNs());
  return result;
}

}  // namespace dlbench::torchrunner::ddp

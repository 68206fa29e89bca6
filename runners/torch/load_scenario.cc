#include "load_scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "cuda_graph.h"
#include "gather_rows.h"
#include "load/batcher.h"
#include "load/load_generator.h"
#include "load/peak_search.h"
#include "load/protocol_sink.h"
#include "load_device.h"
#include "precision.h"

namespace dlbench::torchrunner {
namespace {

using load::EffectiveLoadSettings;
using load::InputResidency;
using load::Query;
using load::QueryTiming;
using load::Scenario;

// CPU stream: the host clock at the compute marks; no copies to time.
class CpuLoadStream final : public LoadStream {
 public:
  std::shared_ptr<void> Enter() override { return nullptr; }
  void MarkCopyInStart() override {}
  void MarkComputeStart() override { compute_start_ns_ = MonotonicNowNs(); }
  void MarkComputeEnd() override { compute_end_ns_ = MonotonicNowNs(); }
  void MarkCopyOutEnd() override {}
  void Synchronize() override {}
  void ReadTimes(QueryTiming& timing) override {
    timing.compute_ns = compute_end_ns_ - compute_start_ns_;
    timing.present |= record::kQueryHasCompute;
  }

 private:
  std::int64_t compute_start_ns_ = 0;
  std::int64_t compute_end_ns_ = 0;
};

class Library final : public load::QuerySampleLibrary {
 public:
  explicit Library(std::uint32_t samples) : samples_(samples) {}
  std::uint32_t SampleCount() const override { return samples_; }

 private:
  std::uint32_t samples_;
};

// One stream's buffers: a batch's sample indices, its gathered input (page-locked on CUDA), the
// device copy of the input, and the host copy of the outputs. Sized for max_batch samples at
// construction and warm-up, so serving a query allocates nothing of its own.
struct StreamState {
  std::unique_ptr<LoadStream> stream;
  torch::Tensor index;
  std::vector<torch::Tensor> host_in;
  std::vector<torch::Tensor> device_in;
  std::vector<torch::Tensor> host_out;
  // cuda_graph: the forward of n samples from device_in (or the device batch), captured after
  // warm-up, at index n; empty otherwise.
  std::vector<std::unique_ptr<CapturedForward>> graphs;
};

// Serves batches of samples for every scenario: the closed-loop ones on the issue thread, the
// server's from the dynamic batcher's stream threads (one StreamState each).
class TorchExecutor final : public load::BatchExecutor {
 public:
  TorchExecutor(const EffectiveLoadSettings& settings, const LoadTarget& target, std::uint64_t seed,
                std::uint32_t streams)
      : settings_(settings), target_(target), cuda_(target.device.is_cuda()) {
    const std::int64_t max_batch = settings_.max_batch;
    if (settings_.input_residency == InputResidency::kHost) {
      // The library lives on the host, in the layout the model takes (so a gather and a copy are
      // all that stand between a sample and the model).
      library_ = target_.workload->MakeInputs(settings_.sample_library_size, torch::kCPU, seed);
      for (torch::Tensor& t : library_) t = ToMemoryFormat(t.contiguous(), target_.memory_format);
    } else {
      device_batch_ = target_.workload->MakeInputs(max_batch, target_.device, seed);
      for (torch::Tensor& t : device_batch_) t = ToMemoryFormat(t, target_.memory_format);
    }
    for (std::uint32_t i = 0; i < streams; ++i) {
      StreamState s;
      s.stream = MakeLoadStream(target_.device);
      s.index = torch::zeros({max_batch}, torch::TensorOptions().dtype(torch::kLong));
      for (const torch::Tensor& t : library_) {
        std::vector<std::int64_t> shape = t.sizes().vec();
        shape[0] = max_batch;
        const torch::MemoryFormat layout = t.suggest_memory_format();
        s.host_in.push_back(HostBuffer(shape, t.scalar_type(), layout, target_.device));
        if (cuda_) {
          s.device_in.push_back(torch::empty(
              shape,
              torch::TensorOptions().dtype(t.scalar_type()).device(target_.device).memory_format(layout)));
        }
      }
      streams_.push_back(std::move(s));
    }
    // The gather copies whole rows when the library and the buffers allow it (gather_rows.h).
    rows_are_blocks_ = !library_.empty();
    for (std::size_t i = 0; i < library_.size(); ++i) {
      for (const StreamState& st : streams_) {
        const torch::Tensor& h = st.host_in[i];
        rows_are_blocks_ = rows_are_blocks_ && RowsAreBlocks(library_[i]) && RowsAreBlocks(h) &&
                           h.scalar_type() == library_[i].scalar_type() &&
                           h.strides().slice(1) == library_[i].strides().slice(1) &&
                           h.sizes().slice(1) == library_[i].sizes().slice(1);
      }
    }
  }

  // Runs every batch size `sizes` names once on every stream, largest first (so the output
  // buffers are sized for the largest), before any query is timed.
  void WarmUp(std::vector<std::uint32_t> sizes) {
    std::sort(sizes.rbegin(), sizes.rend());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    for (StreamState& s : streams_) {
      for (std::uint32_t n : sizes) {
        auto index = s.index.accessor<std::int64_t, 1>();
        for (std::uint32_t j = 0; j < n; ++j)
          index[j] = j % std::max<std::uint32_t>(settings_.sample_library_size, 1);
        Serve(s, n);
      }
    }
    warmed_ = sizes;
    if (!target_.cuda_graph) return;
    // After the eager warm-up (cuDNN has chosen its algorithms): each size's forward on each
    // stream's own buffers, so streams never share a graph's intermediates.
    for (StreamState& s : streams_) {
      s.graphs.resize(static_cast<std::size_t>(settings_.max_batch) + 1);
      for (std::uint32_t n : sizes) {
        std::vector<torch::Tensor> inputs = DeviceInputs(s, n);
        s.graphs.at(n) = CaptureForward(target_.device, /*warmup_runs=*/1, [this, inputs] {
          c10::InferenceMode inference;
          AutocastRegion region(target_.device.type(), target_.autocast_dtype);
          return target_.workload->ForwardInputs(inputs);
        });
      }
    }
  }

  std::optional<QueryTiming> RunBatch(std::uint32_t stream, const load::Batch& batch) noexcept override {
    StreamState& s = streams_.at(stream);
    auto index = s.index.accessor<std::int64_t, 1>();
    std::uint32_t k = 0;
    for (std::size_t i = 0; i < batch.count; ++i) {
      for (std::uint32_t j = 0; j < batch.queries[i].samples && k < settings_.max_batch; ++j) {
        index[k++] = batch.queries[i].SampleIndex(j);
      }
    }
    return Guarded(s, k);
  }

  // `count` samples of `query` from its `offset`-th, on stream 0 (the closed-loop scenarios).
  std::optional<QueryTiming> RunPart(const Query& query, std::uint32_t offset, std::uint32_t count) noexcept {
    StreamState& s = streams_.front();
    auto index = s.index.accessor<std::int64_t, 1>();
    for (std::uint32_t j = 0; j < count; ++j) index[j] = query.SampleIndex(offset + j);
    return Guarded(s, count);
  }

  bool failed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_.has_value();
  }
  std::optional<Failure> failure() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }
  const std::vector<std::uint32_t>& warmed() const { return warmed_; }

 private:
  std::optional<QueryTiming> Guarded(StreamState& s, std::uint32_t n) noexcept {
    if (failed()) return std::nullopt;
    try {
      return Serve(s, n);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!failure_) failure_ = ClassifyException(std::current_exception());
      return std::nullopt;
    }
  }

  // The device tensors a batch of n samples is read from: the device batch (device residency) or
  // the stream's device copy of its gathered input (host residency on CUDA).
  std::vector<torch::Tensor> DeviceInputs(StreamState& s, std::uint32_t n) const {
    const std::vector<torch::Tensor>& from =
        settings_.input_residency == InputResidency::kDevice ? device_batch_ : s.device_in;
    std::vector<torch::Tensor> inputs;
    inputs.reserve(from.size());
    for (const torch::Tensor& t : from) inputs.push_back(t.narrow(0, 0, n));
    return inputs;
  }

  // The forward of n samples: the stream's captured graph for n when there is one, else eager.
  std::vector<torch::Tensor> Forward(StreamState& s, std::uint32_t n,
                                     const std::vector<torch::Tensor>& inputs) {
    if (n < s.graphs.size() && s.graphs[n]) return s.graphs[n]->Replay();
    return target_.workload->ForwardInputs(inputs);
  }

  // One batch of the n samples named by s.index[0, n). Throws what LibTorch throws.
  QueryTiming Serve(StreamState& s, std::uint32_t n) {
    QueryTiming timing;
    timing.batch_samples = n;
    const std::shared_ptr<void> stream_guard = s.stream->Enter();
    c10::InferenceMode inference;
    std::vector<torch::Tensor> inputs;
    inputs.reserve(std::max(library_.size(), device_batch_.size()));
    if (settings_.input_residency == InputResidency::kDevice) {
      for (const torch::Tensor& t : device_batch_) inputs.push_back(t.narrow(0, 0, n));
      AutocastRegion region(target_.device.type(), target_.autocast_dtype);
      s.stream->MarkCopyInStart();
      s.stream->MarkComputeStart();
      const std::vector<torch::Tensor> outputs = Forward(s, n, inputs);
      target_.workload->PostProcess(outputs);
      s.stream->MarkComputeEnd();
      s.stream->MarkCopyOutEnd();
      s.stream->Synchronize();
      s.stream->ReadTimes(timing);
      timing.present = record::kQueryHasCompute;  // no copies: the input is already there
      return timing;
    }

    const std::int64_t pre_start = MonotonicNowNs();
    if (rows_are_blocks_) {
      const std::int64_t* rows = s.index.data_ptr<std::int64_t>();
      for (std::size_t i = 0; i < library_.size(); ++i) GatherRows(library_[i], rows, n, s.host_in[i]);
    } else {
      const torch::Tensor index = s.index.narrow(0, 0, n);
      for (std::size_t i = 0; i < library_.size(); ++i) {
        torch::Tensor dst = s.host_in[i].narrow(0, 0, n);
        torch::index_select_out(dst, library_[i], 0, index);
      }
    }
    const std::int64_t pre_end = MonotonicNowNs();
    timing.host_pre_ns = pre_end - pre_start;

    std::vector<torch::Tensor> host_outputs;
    {
      AutocastRegion region(target_.device.type(), target_.autocast_dtype);
      s.stream->MarkCopyInStart();
      for (std::size_t i = 0; i < library_.size(); ++i) {
        if (cuda_) {
          torch::Tensor dst = s.device_in[i].narrow(0, 0, n);
          dst.copy_(s.host_in[i].narrow(0, 0, n), /*non_blocking=*/true);
          inputs.push_back(dst);
        } else {
          inputs.push_back(s.host_in[i].narrow(0, 0, n));
        }
      }
      s.stream->MarkComputeStart();
      const std::vector<torch::Tensor> outputs = Forward(s, n, inputs);
      s.stream->MarkComputeEnd();
      if (cuda_) {
        if (s.host_out.size() < outputs.size()) s.host_out.resize(outputs.size());
        for (std::size_t j = 0; j < outputs.size(); ++j) {
          const torch::Tensor& out = outputs[j];
          torch::Tensor& buffer = s.host_out[j];
          // Sized at warm-up for the largest batch; a shape never seen there gets its buffer here.
          if (!buffer.defined() || out.dim() == 0 || buffer.dim() != out.dim() ||
              buffer.size(0) < out.size(0) ||
              !std::equal(out.sizes().begin() + 1, out.sizes().end(), buffer.sizes().begin() + 1) ||
              buffer.scalar_type() != out.scalar_type()) {
            buffer = HostBuffer(out.sizes().vec(), out.scalar_type(), torch::MemoryFormat::Contiguous,
                                target_.device);
          }
          torch::Tensor dst = buffer.narrow(0, 0, out.size(0));
          dst.copy_(out, /*non_blocking=*/true);
          host_outputs.push_back(dst);
        }
      } else {
        host_outputs = outputs;
      }
      s.stream->MarkCopyOutEnd();
      s.stream->Synchronize();
      s.stream->ReadTimes(timing);
    }
    const std::int64_t post_start = MonotonicNowNs();
    target_.workload->PostProcess(host_outputs);
    const std::int64_t post_end = MonotonicNowNs();
    timing.host_post_ns = post_end - post_start;
    timing.present |= record::kQueryHasHostPre | record::kQueryHasHostPost;
    return timing;
  }

  EffectiveLoadSettings settings_;
  LoadTarget target_;
  bool cuda_;
  std::vector<torch::Tensor> library_;       // host residency: [library, ...] per input
  std::vector<torch::Tensor> device_batch_;  // device residency: [max_batch, ...] per input
  bool rows_are_blocks_ = false;             // the gather copies whole rows (gather_rows.h)
  std::vector<StreamState> streams_;
  std::vector<std::uint32_t> warmed_;
  mutable std::mutex mutex_;
  std::optional<Failure> failure_;
};

// single_stream, multi_stream and offline: the query is served on the issue thread, offline in
// parts of max_batch (batch_size) samples. After a failure every query completes at once, so the
// run drains while the sink reports the stop.
class InlineSut final : public load::SystemUnderTest {
 public:
  InlineSut(TorchExecutor& executor, std::uint32_t part) : executor_(executor), part_(part) {}
  void IssueQuery(const Query& query, load::QueryCompleter& completer) override {
    if (query.samples <= part_) {
      const std::optional<QueryTiming> timing = executor_.RunPart(query, 0, query.samples);
      completer.Complete(query.id, timing.value_or(QueryTiming{}));
      return;
    }
    for (std::uint32_t offset = 0; offset < query.samples;) {
      // 2 s after STOP the rest of a long query (offline's parts) is given up: it stays outstanding
      // and DropQueued reports it, so the runner answers STOP within the orchestrator's grace (the
      // same 2 s as the load generator's drain after STOP; a short query simply finishes).
      if (offset > 0 && completer.StopRequested()) {
        const std::int64_t now = MonotonicNowNs();
        if (stop_seen_ns_ < 0) stop_seen_ns_ = now;
        if (now - stop_seen_ns_ >= load::RunLimits{}.stop_drain_timeout_ns) {
          abandoned_ = 1;
          return;
        }
      }
      const std::uint32_t n = std::min(part_, query.samples - offset);
      const std::optional<QueryTiming> timing = executor_.RunPart(query, offset, n);
      if (!timing) {
        completer.CompleteSamples(query.id, query.samples - offset, QueryTiming{});
        return;
      }
      completer.CompleteSamples(query.id, n, *timing);
      offset += n;
    }
  }
  void FlushQueries() override {}
  std::uint64_t DropQueued() override { return std::exchange(abandoned_, 0); }

 private:
  TorchExecutor& executor_;
  std::uint32_t part_;
  std::uint64_t abandoned_ = 0;  // a query given up after STOP (its issue thread has returned)
  std::int64_t stop_seen_ns_ = -1;
};

// The batch sizes a scenario runs: what warm-up must cover.
std::vector<std::uint32_t> BatchSizes(const EffectiveLoadSettings& s) {
  switch (s.scenario) {
    case Scenario::kSingleStream:
      return {1};
    case Scenario::kMultiStream:
      return {s.samples_per_query};
    case Scenario::kServer: {
      std::vector<std::uint32_t> sizes;
      for (std::uint32_t n = 1; n <= s.max_batch; ++n) sizes.push_back(n);
      return sizes;
    }
    case Scenario::kOffline: {
      std::vector<std::uint32_t> sizes = {std::min(s.max_batch, s.samples_per_query)};
      if (s.samples_per_query % s.max_batch != 0 && s.samples_per_query > s.max_batch) {
        sizes.push_back(s.samples_per_query % s.max_batch);
      }
      return sizes;
    }
  }
  return {1};
}

class TorchLoadCell final : public LoadCell {
 public:
  TorchLoadCell(const EffectiveLoadSettings& settings, const LoadTarget& target, std::uint64_t seed,
                std::uint32_t rank)
      : settings_(settings),
        target_(target),
        rank_(rank),
        executor_(settings, target, seed, settings.scenario == Scenario::kServer ? settings.streams : 1) {
    executor_.WarmUp(BatchSizes(settings_));
  }

  nlohmann::json Effective() const override {
    nlohmann::json j = settings_.ToJson();
    const bool host = settings_.input_residency == InputResidency::kHost;
    j["input_path"] =
        host ? (target_.device.is_cuda()
                    ? "host gather -> page-locked host buffer -> H2D copy -> compute -> D2H copy "
                      "-> host post-processing"
                    : "host gather -> compute -> post-processing (CPU: no copies)")
             : "device-resident pre-made batch (pure compute; post-processing on the device)";
    j["timing"] =
        target_.device.is_cuda()
            ? "CUDA events on the query's stream around H2D, compute, D2H; host clock for gather and "
              "post-processing; latency from the host clock"
            : "host clock";
    j["warmed_batch_sizes"] = executor_.warmed();
    return j;
  }

  LoadOutcome Run(protocol::RunnerSession& session, const protocol::RunnerLimits& limits) override {
    LoadOutcome outcome;
    // The protocol's output fd, as docs/protocol.md names it; QUERIES frames are written there
    // from the load generator's flush thread while no other thread writes to it.
    const char* out_fd_text = std::getenv(protocol::kFdOutEnv);
    if (out_fd_text == nullptr) {
      outcome.failure = Failure{record::RunnerErrorKind::kInternal,
                                std::string(protocol::kFdOutEnv) + " is not set", nlohmann::json::object()};
      return outcome;
    }
    load::ProtocolQuerySink sink(std::atoi(out_fd_text), rank_, [this, &session] {
      session.FlushSteps(MonotonicNowNs());  // polls for STOP without sending anything
      return session.stop_requested() || executor_.failed();
    });
    load::MonotonicLoadClock clock;
    load::LoadGenerator generator(settings_, clock);
    const Library library(settings_.sample_library_size);
    load::RunLimits run_limits;
    run_limits.max_queries = static_cast<std::uint64_t>(std::max<std::int64_t>(limits.max_steps, 1));
    run_limits.max_duration_ns = SecondsToNs(limits.max_time_s);
    load::RunResult result;
    if (settings_.scenario == Scenario::kServer) {
      load::BatcherSettings b;
      b.max_batch = settings_.max_batch;
      b.batch_timeout_ns = settings_.batch_timeout_ns;
      b.streams = settings_.streams;
      b.capacity = settings_.max_outstanding;
      load::DynamicBatcher batcher(b, executor_, clock);
      if (settings_.peak_search) {
        std::int64_t budget_ns = run_limits.max_duration_ns;
        if (settings_.peak_max_time_ns) budget_ns = std::min(budget_ns, *settings_.peak_max_time_ns);
        const load::PeakSearchOutcome search = load::RunPeakSearch(settings_, generator, batcher, library,
                                                                   sink, clock, clock.NowNs() + budget_ns);
        outcome.info = {{"peak_search", search.ToJson()}};
        outcome.queries = static_cast<std::int64_t>(search.issued);
        outcome.reason = search.reason;
        if (!search.error.empty())
          outcome.failure =
              Failure{record::RunnerErrorKind::kInternal, search.error, nlohmann::json::object()};
        if (auto failure = executor_.failure()) outcome.failure = *failure;
        return outcome;
      }
      result = generator.Run(batcher, library, sink, run_limits);
    } else {
      InlineSut sut(executor_, settings_.max_batch);
      result = generator.Run(sut, library, sink, run_limits);
    }
    outcome.queries = static_cast<std::int64_t>(result.issued);
    if (auto failure = executor_.failure()) {
      outcome.failure = *failure;
      return outcome;
    }
    if (std::optional<std::string> reason = load::DoneReason(result.end)) {
      outcome.reason = *reason;
    } else {
      outcome.failure = Failure{record::RunnerErrorKind::kInternal, result.error, nlohmann::json::object()};
    }
    return outcome;
  }

 private:
  EffectiveLoadSettings settings_;
  LoadTarget target_;
  std::uint32_t rank_;
  TorchExecutor executor_;
};

}  // namespace

std::unique_ptr<LoadStream> MakeCpuLoadStream() { return std::make_unique<CpuLoadStream>(); }

std::unique_ptr<LoadCell> MakeLoadCell(const load::EffectiveLoadSettings& settings, const LoadTarget& target,
                                       std::uint64_t seed, std::uint32_t rank) {
  return std::make_unique<TorchLoadCell>(settings, target, seed, rank);
}

}  // namespace dlbench::torchrunner

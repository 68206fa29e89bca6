// Feeds each step its batch from the cell's data source (docs/input-pipeline.md) and measures the
// step's phases. The runner calls it inside the timed step, at the start (BeginStep) and after the
// compute and its synchronisation (EndStep); what it records:
//   data_wait_ns  the time the step waited for its host batch (0 for device and host),
//   compute_ns    from the batch being on the device to the end of the compute,
//   the rest of the step (end - start - data_wait - compute) is the host-to-device copy, or with
//   async_copy the wait for the copy started during the previous step.
// The step record has no copy field (it is 48 bytes of the wire format): the effective cell's
// "step_phases" declares this convention for readers.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "cell_options.h"
#include "data/device_copier.h"
#include "data/pipeline.h"
#include "protocol/wire.h"
#include "workload.h"

namespace dlbench::torchrunner::data {

class Feeder {
 public:
  // After workload.Prepare: takes the workload's input tensors, opens the data source and starts
  // its workers, and, with async_copy, puts the first batch on the device. Throws UnsupportedError
  // when the model cannot take the source (jpeg_dir and tfrecord feed image models),
  // std::invalid_argument or DataError for bad data (an empty folder, a broken TFRecord), with a
  // message naming the path.
  Feeder(const TorchCell& cell, Workload& workload, torch::Device device, std::uint64_t seed);
  ~Feeder();
  Feeder(const Feeder&) = delete;
  Feeder& operator=(const Feeder&) = delete;

  // First thing in a timed step: the step's batch into the workload's inputs. Sets data_wait_ns.
  // Rethrows a pipeline failure (DataError for corrupt input). No allocation.
  void BeginStep(protocol::StepRecord& record);
  // Last thing in a timed step, after the compute and Synchronize: sets compute_ns (not with
  // pipeline_only, which computes nothing).
  void EndStep(protocol::StepRecord& record);
  // The step's closing synchronisation: the whole device, or with async_copy only the compute
  // stream, so the next batch's copy may go on.
  void Synchronize();
  bool async() const { return copier_ != nullptr; }
  bool pipeline_only() const { return options_.pipeline_only; }

  // Outside any timed step: the steady part of the loop starts here; the workers' EXTRAS count
  // from this point.
  void MarkSteady();
  // Outside any timed step, right after the loop: the workers' EXTRAS count up to this point.
  void MarkEnd();
  // Keys for READY's effective cell (what ran: the resolved worker count, the source's contents,
  // the transform, the step-phase convention).
  nlohmann::json Effective() const;
  // EXTRAS: metrics (declared in record/metrics.h) and info (per-worker counts, corrupt inputs).
  void AddExtras(nlohmann::json& metrics, nlohmann::json& info) const;

 private:
  void Load(const std::vector<torch::Tensor>& host);

  DataOptions options_;
  torch::Device device_;
  std::vector<torch::Tensor> feed_;     // the workload's inputs (images[, labels]), refilled in place
  std::vector<torch::Tensor> host_;     // host: the fixed host tensors the copy reads
  std::vector<torch::Tensor> scratch_;  // async_copy from a pipeline: the batch's tensors, sized once
  std::shared_ptr<const SampleSource> source_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<DeviceCopier> copier_;
  std::vector<torch::Tensor> device_buffers_[2];  // async_copy: the batch computing, the batch arriving
  HostBatch* held_[2] = {nullptr, nullptr};       // the host batch each device buffer was copied from
  int current_ = 0;
  std::int64_t compute_begin_ns_ = 0;
  int workers_ = 0;
  int usable_cores_ = 1;
  bool train_ = true;
  std::optional<PipelineCounters> steady_;
  std::optional<PipelineCounters> end_;
};

}  // namespace dlbench::torchrunner::data

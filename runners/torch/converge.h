// scenario: converge (docs/convergence.md): train a zoo model on Fashion-MNIST until a target
// quality on the held-out test set. Each training step is a timed step record like train's; the
// evaluations run between steps, outside them, and their time is counted apart. The dataset sits
// in memory on the device; each epoch visits the training samples in a permutation drawn from the
// cell's seed and the epoch, in whole batches (a last partial batch is left out of that epoch).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cell_options.h"
#include "common/error.h"
#include "protocol/runner_session.h"
#include "workload.h"

namespace dlbench::torchrunner {

inline constexpr char kDefaultDatasetDir[] = "/usr/share/datasets/fashion-mnist";

// The converge keys of a cell, with the registry's documented defaults applied.
struct ConvergeOptions {
  std::optional<double> target_accuracy;  // exactly one of the two targets is set
  std::optional<double> target_loss;
  std::optional<std::int64_t> eval_every;  // absent: once per epoch
  std::int64_t max_epochs = 100;
  double max_train_time_s = 3600;
  std::string dataset_dir = kDefaultDatasetDir;
  std::optional<std::int64_t> train_samples, eval_samples;  // absent: the whole set
  std::string TargetText() const;                           // "accuracy >= 0.85", "loss <= 0.3"
};

// Reads the converge keys of CONFIGURE's params (types and ranges are the registry's, checked by
// ParseTorchCell already). kInvalidInput when neither or both targets are set.
Result<ConvergeOptions> ParseConvergeOptions(const nlohmann::json& params);

// A series thinned to a bounded number of points: once it holds kMaxPoints, adjacent pairs merge
// (their values' mean, stamped at the later point's time), so a long training keeps its whole
// shape in at most kMaxPoints points, each the mean of the same number of raw values (but the last).
class ThinnedCurve {
 public:
  static constexpr std::size_t kMaxPoints = 2048;
  void Add(std::int64_t t_ns, double value);
  // {"t_ns": [...], "value": [...], "per_point": raw values per point (the last may have fewer)}.
  nlohmann::json ToJson() const;
  std::size_t size() const { return t_ns_.size(); }

 private:
  std::vector<std::int64_t> t_ns_;
  std::vector<double> sum_;
  std::vector<std::int64_t> count_;
  std::int64_t per_point_ = 1;
};

// What the converge loop needs of the runner's built cell.
struct ConvergeContext {
  Workload* workload = nullptr;
  torch::optim::Optimizer* optimizer = nullptr;
  torch::Device device{torch::kCPU};
  torch::MemoryFormat memory_format = torch::MemoryFormat::Contiguous;
  std::optional<torch::ScalarType> autocast_dtype;
  // One training step on the workload's fed tensors, ending with the device synchronised;
  // returns the step's loss (detached).
  std::function<torch::Tensor()> train_step;
};

// Calibration images of the int8 evaluation: the first this many training samples (fewer when the
// training subset is smaller), as PyTorch's post-training quantization tutorials calibrate on a
// few hundred to a few thousand images.
inline constexpr std::int64_t kInt8CalibrationSamples = 1000;

// The trained model at each of eval_precisions (EXTRAS metrics eval_accuracy_<p> and
// eval_accuracy_delta_<p>; info.precision_eval: eval_samples, reference, and under "precisions"
// per precision its accuracy, loss, delta, time and device, and for int8 the form, engine,
// calibration and weight bytes).
struct PrecisionEvalResult {
  nlohmann::json metrics = nlohmann::json::array();
  nlohmann::json info = nlohmann::json::object();
};

struct ConvergeResult {
  std::string
      done_reason;  // DONE's reason: "converged", "max_epochs", "max_train_time", "max_steps", "stopped"
  std::int64_t steps = 0;
  nlohmann::json metrics = nlohmann::json::array();  // EXTRAS metrics (record/metrics.h's converge block)
  nlohmann::json info = nlohmann::json::object();    // EXTRAS info.converge, with the curves
};

class ConvergeCell {
 public:
  // Reads the dataset into memory on `device`. Throws std::invalid_argument (the runner reports
  // it as invalid) for a bad target, a dataset that is missing or corrupt (naming the file), a
  // model whose input is not 1 x 28 x 28 with 10 classes, or a batch larger than the training set.
  ConvergeCell(const TorchCell& cell, Workload& workload, torch::Device device, std::uint64_t seed);

  // What the cell trains on and until when, for READY's effective.converge.
  nlohmann::json Effective() const;

  // The bytes of the training and held-out sets it keeps on the device (each storage once): the
  // memory breakdown's dataset_bytes (memory_accounting.h).
  std::int64_t DatasetBytes() const;

  // Trains until the target, max_epochs, max_train_time_s or the runner's limits, or STOP,
  // streaming a step record per training step. Throws what the steps throw.
  ConvergeResult Run(protocol::RunnerSession& session, const protocol::RunnerLimits& limits,
                     ConvergeContext& context);

  // After Run, between no steps: the trained model evaluated on the held-out set at each of the
  // cell's eval_precisions (fp32 first), each with the switches its precision sets (TF32 on only
  // for tf32; autocast for bf16 and fp16) and restored after. int8 evaluates a copy of the trained
  // model on the CPU, quantized after training (ZooModel::QuantizeCalibratedInt8, calibrated on the
  // first kInt8CalibrationSamples training images); the trained model is left as it was. Empty
  // when the cell has no eval_precisions. Throws what building or running a model throws.
  PrecisionEvalResult EvaluatePrecisions(ConvergeContext& context);

 private:
  struct Quality {
    double accuracy = 0, loss = 0;
  };
  // `workload` on `device` over the held-out set `x`, `y` (on the same device), in eval mode,
  // without gradients, under `autocast`.
  static Quality Evaluate(Workload& workload, torch::Device device, torch::MemoryFormat format,
                          std::optional<torch::ScalarType> autocast, const torch::Tensor& x,
                          const torch::Tensor& y);
  Quality Evaluate(ConvergeContext& context);
  // The int8 evaluation (EvaluatePrecisions); fills `entry` with what it ran.
  Quality EvaluateInt8(ConvergeContext& context, nlohmann::json& entry);

  TorchCell cell_;
  ConvergeOptions options_;
  std::int64_t batch_size_ = 1;
  std::uint64_t seed_ = 0;
  torch::Tensor train_x_, train_y_, eval_x_, eval_y_;  // on the device; images float in [0, 1]
};

}  // namespace dlbench::torchrunner

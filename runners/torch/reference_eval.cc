#include "reference_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "layer_fault.h"
#include "precision.h"
#include "workload.h"

namespace dlbench::torchrunner {
namespace {

constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;

// Argmax over the last dimension of `out` (double, on the CPU), per row.
torch::Tensor Top1(const torch::Tensor& out) {
  const std::int64_t width = out.dim() == 0 ? 1 : out.size(-1);
  const std::int64_t rows = width == 0 ? 0 : out.numel() / width;
  if (rows == 0) return torch::empty({0}, torch::kLong);
  return out.reshape({rows, width}).argmax(1);
}

// Detections [K, 7] (image, x1, y1, x2, y2, score, class), sorted by score within each image:
// the first `per_image` rows of each image, as JSON rows with integral image and class.
nlohmann::json DetectionRows(const torch::Tensor& detections, std::int64_t per_image) {
  nlohmann::json rows = nlohmann::json::array();
  const torch::Tensor d = detections.to(torch::kCPU, torch::kDouble).contiguous();
  if (d.dim() != 2 || d.size(1) != 7) return rows;
  const double* data = d.data_ptr<double>();
  std::int64_t image = -1;
  std::int64_t taken = 0;
  for (std::int64_t r = 0; r < d.size(0); ++r) {
    const double* row = data + r * 7;
    const auto this_image = static_cast<std::int64_t>(row[0]);
    if (this_image != image) {
      image = this_image;
      taken = 0;
    }
    if (taken++ >= per_image) continue;
    nlohmann::json j = nlohmann::json::array({this_image});
    for (int k = 1; k <= 5; ++k)
      j.push_back(std::isfinite(row[k]) ? nlohmann::json(row[k]) : nlohmann::json(nullptr));
    j.push_back(static_cast<std::int64_t>(row[6]));
    rows.push_back(std::move(j));
  }
  return rows;
}

// cuDNN autotuning off while the evaluation runs, restored after (the thread's context is the
// process's): its forward at reference_samples is a shape the window never ran, so autotuning would
// time every candidate algorithm for it after the window, in the cell's wall time, and pick by
// timing, which can pick differently in two runs of the same cell. The heuristics pick without
// running any, the same way every time.
class NoCudnnAutotune {
 public:
  NoCudnnAutotune() : was_(at::globalContext().benchmarkCuDNN()) {
    at::globalContext().setBenchmarkCuDNN(false);
  }
  ~NoCudnnAutotune() { at::globalContext().setBenchmarkCuDNN(was_); }
  NoCudnnAutotune(const NoCudnnAutotune&) = delete;
  NoCudnnAutotune& operator=(const NoCudnnAutotune&) = delete;
  NoCudnnAutotune(NoCudnnAutotune&&) = delete;
  NoCudnnAutotune& operator=(NoCudnnAutotune&&) = delete;

 private:
  bool was_;
};

}  // namespace

bool RunsReferenceEval(const TorchCell& cell) {
  return cell.scenario == Scenario::kInfer && cell.model != kTorchScriptModel && cell.model != kAotiModel &&
         cell.reference_samples > 0;
}

std::string HashTensors(const std::vector<torch::Tensor>& tensors) {
  std::uint64_t h = kFnvOffset;
  for (const torch::Tensor& t : tensors) {
    if (!t.defined()) continue;
    const torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
    const std::size_t n = static_cast<std::size_t>(c.numel()) * c.element_size();
    for (std::size_t i = 0; i < n; ++i) {
      h ^= bytes[i];
      h *= kFnvPrime;
    }
  }
  return fmt::format("{:016x}", h);
}

nlohmann::json RunReferenceEval(const TorchCell& cell, torch::Device device, torch::MemoryFormat format) {
  const NoCudnnAutotune heuristics;
  TorchCell eval = cell;
  eval.batch_size = cell.reference_samples;
  torch::manual_seed(kEvalWeightsSeed);
  std::unique_ptr<Workload> workload = MakeWorkload(eval);
  workload->Prepare(eval, device, format, kEvalInputsSeed);
  std::vector<torch::Tensor> weights = workload->Parameters();
  for (const torch::Tensor& b : workload->Buffers()) weights.push_back(b);
  const std::string weights_hash = HashTensors(weights);
  const std::string inputs_hash = HashTensors(workload->FeedTensors());
  workload->SetTraining(false);
  // With a tolerance, the same copy's fp32 forward first (before int8 packs it): the runner's own
  // check of its precision against fp32, and the trigger of the search for the layer at fault.
  const bool self_check = cell.has_tolerance() && cell.precision != Precision::kFp32;
  torch::Tensor fp32_out;
  if (self_check) {
    c10::InferenceMode inference;
    fp32_out = workload->Forward().at(0).to(torch::kCPU, torch::kDouble).contiguous();
  }
  if (cell.precision == Precision::kInt8) workload->QuantizeDynamicInt8();

  torch::Tensor out;
  torch::Tensor detections;
  {
    c10::InferenceMode inference;
    std::vector<torch::Tensor> outputs;
    {
      AutocastRegion region(device.type(), AutocastDtype(cell.precision));
      outputs = workload->Forward();
    }
    out = outputs.at(0);
    // A detection model's post-processing (SSD: decoding, NMS) returns its boxes; a classifier's
    // returns its first output itself. Outside autocast, as the step loop runs it.
    const torch::Tensor post = workload->PostProcess(outputs);
    if (!post.is_same(out)) detections = post;
  }
  out = out.to(torch::kCPU, torch::kDouble).contiguous();
  const std::int64_t width = out.dim() == 0 ? 1 : out.size(-1);
  const std::int64_t rows = width == 0 ? 0 : out.numel() / width;
  const torch::Tensor flat = out.reshape({-1});

  nlohmann::json top1 = nlohmann::json::array();
  const torch::Tensor argmax = Top1(out);
  for (std::int64_t r = 0; r < std::min(argmax.size(0), kEvalMaxRows); ++r)
    top1.push_back(argmax[r].item<std::int64_t>());
  nlohmann::json values = nlohmann::json::array();
  const double* data = flat.data_ptr<double>();
  for (std::int64_t i = 0; i < std::min<std::int64_t>(flat.numel(), kEvalMaxValues); ++i) {
    values.push_back(std::isfinite(data[i]) ? nlohmann::json(data[i]) : nlohmann::json(nullptr));
  }
  nlohmann::json result = {{"weights_seed", kEvalWeightsSeed},
                           {"inputs_seed", kEvalInputsSeed},
                           {"samples", cell.reference_samples},
                           {"weights_hash", weights_hash},
                           {"inputs_hash", inputs_hash},
                           {"output_shape", out.sizes().vec()},
                           {"rows", rows},
                           {"top1", top1},
                           {"values", values},
                           {"values_total", flat.numel()},
                           {"cudnn_benchmark", at::globalContext().benchmarkCuDNN()}};
  if (detections.defined()) {
    result["detections"] =
        DetectionRows(detections, kEvalMaxDetections / std::max(1, cell.reference_samples));
    result["detections_total"] = detections.size(0);
  }
  if (!self_check) return result;
  const torch::Tensor fp32_top1 = Top1(fp32_out);
  const double agreement =
      argmax.size(0) == 0 ? 1.0 : argmax.eq(fp32_top1).to(torch::kDouble).mean().item<double>();
  const torch::Tensor abs_diff = (out - fp32_out).abs();
  const double max_diff = abs_diff.numel() == 0 ? 0.0 : abs_diff.max().item<double>();
  const double mean_diff = abs_diff.numel() == 0 ? 0.0 : abs_diff.mean().item<double>();
  auto finite_or_null = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  result["self_check"] = {{"top1_agreement", agreement},
                          {"rows", argmax.size(0)},
                          {"max_abs_diff", finite_or_null(max_diff)},
                          {"mean_abs_diff", finite_or_null(mean_diff)}};
  bool beyond = false;
  if (cell.min_agreement) {
    result["min_agreement"] = *cell.min_agreement;
    beyond = beyond || agreement < *cell.min_agreement;
  }
  // A non-finite difference (NaN included) is beyond every bound.
  if (cell.max_abs_diff) {
    result["max_abs_diff"] = *cell.max_abs_diff;
    beyond = beyond || !(max_diff <= *cell.max_abs_diff);
  }
  if (cell.max_mean_abs_diff) {
    result["max_mean_abs_diff"] = *cell.max_mean_abs_diff;
    beyond = beyond || !(mean_diff <= *cell.max_mean_abs_diff);
  }
  if (!beyond) return result;
  result["fault"] = LocateFault(cell, *workload, device, format).ToJson();
  return result;
}

LayerFault LocateFault(const TorchCell& cell, Workload& workload, torch::Device device,
                       torch::MemoryFormat format) {
  std::vector<ForwardStage> candidate = workload.ForwardStages();
  if (candidate.empty()) {
    LayerFault none;
    none.why_none = fmt::format(
        "{} does not expose its forward as a chain of layers (bert_base, resnet50, mobilenet_v2 and "
        "ssd_mobilenet do)",
        cell.model);
    return none;
  }
  // int8 changed the copy in place: the fp32 chain runs on a second copy of the same seeds.
  // An autocast precision leaves the model as it is: the same copy runs both chains.
  std::unique_ptr<Workload> fp32_copy;
  std::vector<ForwardStage> reference = workload.ForwardStages();  // a chain of its own
  if (cell.precision == Precision::kInt8) {
    TorchCell eval = cell;
    eval.batch_size = cell.reference_samples;
    torch::manual_seed(kEvalWeightsSeed);
    fp32_copy = MakeWorkload(eval);
    fp32_copy->Prepare(eval, device, format, kEvalInputsSeed);
    fp32_copy->SetTraining(false);
    reference = fp32_copy->ForwardStages();
  }
  return LocateLayerAtFault(reference, candidate, device.type(), AutocastDtype(cell.precision));
}

}  // namespace dlbench::torchrunner

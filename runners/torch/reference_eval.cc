#include "reference_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "precision.h"
#include "workload.h"

namespace dlbench::torchrunner {
namespace {

constexpr std::uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr std::uint64_t kFnvPrime = 0x100000001b3ULL;

}  // namespace

bool RunsReferenceEval(const TorchCell& cell) {
  return cell.scenario == Scenario::kInfer && cell.model != kTorchScriptModel && cell.reference_samples > 0;
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
  TorchCell eval = cell;
  eval.batch_size = cell.reference_samples;
  torch::manual_seed(kEvalWeightsSeed);
  std::unique_ptr<Workload> workload = MakeWorkload(eval);
  workload->Prepare(eval, device, format, kEvalInputsSeed);
  std::vector<torch::Tensor> weights = workload->Parameters();
  for (const torch::Tensor& b : workload->Buffers()) weights.push_back(b);
  const std::string weights_hash = HashTensors(weights);
  const std::string inputs_hash = HashTensors(workload->FeedTensors());
  if (cell.precision == Precision::kInt8) workload->QuantizeDynamicInt8();
  workload->SetTraining(false);

  torch::Tensor out;
  {
    c10::InferenceMode inference;
    AutocastRegion region(device.type(), AutocastDtype(cell.precision));
    out = workload->Forward().at(0);
  }
  out = out.to(torch::kCPU, torch::kDouble).contiguous();
  const std::int64_t width = out.dim() == 0 ? 1 : out.size(-1);
  const std::int64_t rows = width == 0 ? 0 : out.numel() / width;
  const torch::Tensor flat = out.reshape({-1});

  nlohmann::json top1 = nlohmann::json::array();
  if (rows > 0) {
    const torch::Tensor argmax = out.reshape({rows, width}).argmax(1);
    for (std::int64_t r = 0; r < std::min(rows, kEvalMaxRows); ++r)
      top1.push_back(argmax[r].item<std::int64_t>());
  }
  nlohmann::json values = nlohmann::json::array();
  const double* data = flat.data_ptr<double>();
  for (std::int64_t i = 0; i < std::min<std::int64_t>(flat.numel(), kEvalMaxValues); ++i) {
    values.push_back(std::isfinite(data[i]) ? nlohmann::json(data[i]) : nlohmann::json(nullptr));
  }
  return {{"weights_seed", kEvalWeightsSeed},
          {"inputs_seed", kEvalInputsSeed},
          {"samples", cell.reference_samples},
          {"weights_hash", weights_hash},
          {"inputs_hash", inputs_hash},
          {"output_shape", out.sizes().vec()},
          {"rows", rows},
          {"top1", top1},
          {"values", values},
          {"values_total", flat.numel()}};
}

}  // namespace dlbench::torchrunner

#include "layer_fault.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "precision.h"

namespace dlbench::torchrunner {

nlohmann::json LayerFault::ToJson() const {
  if (!why_none.empty()) return {{"why_none", why_none}};
  nlohmann::json stages = nlohmann::json::array();
  for (std::size_t i = 0; i < paths.size() && i < kMaxFaultStages; ++i) {
    const double e = relative_errors[i];
    stages.push_back({{"path", paths[i]},
                      {"relative_error", std::isfinite(e) ? nlohmann::json(e) : nlohmann::json(nullptr)}});
  }
  return {{"layer", layer},
          {"growth", std::isfinite(growth) ? nlohmann::json(growth) : nlohmann::json(nullptr)},
          {"stages", stages},
          {"stages_total", paths.size()}};
}

double RelativeError(const torch::Tensor& reference, const torch::Tensor& candidate) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!reference.defined() || !candidate.defined() || !reference.sizes().equals(candidate.sizes()))
    return kInf;
  const torch::Tensor ref = reference.detach().to(torch::kCPU, torch::kDouble);
  const torch::Tensor cand = candidate.detach().to(torch::kCPU, torch::kDouble);
  if (!torch::isfinite(ref).all().item<bool>() || !torch::isfinite(cand).all().item<bool>()) return kInf;
  const double diff = (cand - ref).norm().item<double>();
  const double norm = ref.norm().item<double>();
  if (norm == 0.0) return diff == 0.0 ? 0.0 : kInf;
  return diff / norm;
}

LayerFault FaultFromErrors(const std::vector<std::string>& paths, const std::vector<double>& errors) {
  LayerFault f;
  f.paths = paths;
  f.relative_errors = errors;
  if (paths.empty() || paths.size() != errors.size()) {
    f.why_none = "no stages to compare";
    return f;
  }
  double previous = 0.0;
  std::optional<std::size_t> best;
  for (std::size_t i = 0; i < errors.size(); ++i) {
    const double growth =
        std::isfinite(errors[i]) ? errors[i] - previous : std::numeric_limits<double>::infinity();
    if (!best || growth > f.growth) {
      best = i;
      f.growth = growth;
    }
    if (!std::isfinite(errors[i])) break;  // later stages inherit the non-finite values
    previous = errors[i];
  }
  f.layer = paths[*best];
  return f;
}

LayerFault LocateLayerAtFault(const std::vector<ForwardStage>& reference,
                              const std::vector<ForwardStage>& candidate, torch::DeviceType device_type,
                              std::optional<torch::ScalarType> autocast_dtype) {
  if (reference.size() != candidate.size()) throw std::logic_error("the two stage chains differ in length");
  std::vector<std::string> paths;
  std::vector<double> errors;
  c10::InferenceMode inference;
  torch::Tensor ref;
  torch::Tensor cand;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    if (reference[i].path != candidate[i].path)
      throw std::logic_error("the two stage chains name other stages");
    ref = reference[i].run(ref);
    {
      AutocastRegion region(device_type, autocast_dtype);
      cand = candidate[i].run(cand);
    }
    paths.push_back(reference[i].path);
    errors.push_back(RelativeError(ref, cand));
  }
  return FaultFromErrors(paths, errors);
}

}  // namespace dlbench::torchrunner

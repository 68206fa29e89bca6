// The layer most likely at fault when a precision's outputs disagree with fp32's beyond the cell's
// tolerance (min_agreement, docs/precisions.md): the model's forward as a chain of named stages
// (ZooModel::ForwardStages), run once at fp32 and once at the precision from the same input,
// side by side, outside every timed step. Each stage's output is compared with its fp32 twin
// (relative error, Frobenius norms); the stage whose relative error grows most over the stage
// before it (the first of equal growths) is named. Each chain is fed its own previous output, so a
// stage's error includes what it inherited; the growth is what the stage added.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/zoo.h"

namespace dlbench::torchrunner {

// At most this many stages' errors are recorded (the growth is computed over all).
inline constexpr std::size_t kMaxFaultStages = 64;

struct LayerFault {
  std::string layer;                    // the stage path named; empty when why_none is set
  double growth = 0.0;                  // its relative error minus the previous stage's
  std::vector<double> relative_errors;  // per stage, in order (+inf where the output is not finite)
  std::vector<std::string> paths;
  std::string why_none;
  nlohmann::json ToJson() const;
};

// ||candidate - reference||_F / ||reference||_F, both in double. When the reference's norm is 0:
// 0 if the candidate's is too, else +inf. +inf when either holds a non-finite value, or their
// shapes differ.
double RelativeError(const torch::Tensor& reference, const torch::Tensor& candidate);

// The stage of largest growth err[i] - err[i-1] (err[-1] = 0; +inf growth from a finite error
// counts as the largest; after the first non-finite error, no later stage is a candidate): the
// first of equal growths. why_none when there are no stages.
LayerFault FaultFromErrors(const std::vector<std::string>& paths, const std::vector<double>& errors);

// Runs `reference` (fp32: no autocast) and `candidate` (under autocast to `autocast_dtype` on
// `device_type` when set) stage by stage in inference mode, and names the stage at fault. The two
// lists must have the same paths (the same model, one copy per precision for int8, which changes
// its model in place; the same model twice for an autocast precision).
LayerFault LocateLayerAtFault(const std::vector<ForwardStage>& reference,
                              const std::vector<ForwardStage>& candidate, torch::DeviceType device_type,
                              std::optional<torch::ScalarType> autocast_dtype);

}  // namespace dlbench::torchrunner

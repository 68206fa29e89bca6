// A profile of a cell's own steps, for finding where its time goes (issue 21: dlbench-torch's
// BERT step against the same model in Python). Asked for through the environment, so no stored
// cell and no timed step changes: with DLBENCH_TORCH_PROFILE=DIR, a step-loop cell (train or
// infer) runs DLBENCH_TORCH_PROFILE_STEPS more steps (default 10) after its measured loop and its
// end-of-cell memory snapshot, under LibTorch's profiler: every ATen operator on the host and,
// with CUDA (a LibTorch with Kineto and CUPTI), every kernel on the device. The summary (per step:
// the wall time, the kernels' total, and the top operators and kernels by time) goes to
// DIR/<stem>.json and to the cell's extras.info.step_profile; where LibTorch can save a Chrome
// trace, it goes beside it as DIR/<stem>.trace.json. docs/torch-runner.md "Profiling a cell's steps".
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.h"

namespace dlbench::torchrunner {

inline constexpr const char* kStepProfileDirEnv = "DLBENCH_TORCH_PROFILE";
inline constexpr const char* kStepProfileStepsEnv = "DLBENCH_TORCH_PROFILE_STEPS";
inline constexpr int kStepProfileDefaultSteps = 10;
inline constexpr int kStepProfileMaxSteps = 1000;
// The operators and the kernels listed, each, by total time.
inline constexpr std::size_t kStepProfileTop = 40;

struct StepProfileRequest {
  std::string dir;
  int steps = kStepProfileDefaultSteps;
};

// From the two variables: nullopt when DLBENCH_TORCH_PROFILE is unset or empty; kInvalidInput
// when it is not a directory or the step count is not a whole number in [1, 1000].
Result<std::optional<StepProfileRequest>> StepProfileRequestFrom(const char* dir, const char* steps);
Result<std::optional<StepProfileRequest>> StepProfileRequestFromEnv();

// Runs `step` (which synchronises the device, as a timed step does) request.steps times under the
// profiler, then writes DIR/<file_stem>.json; returns the summary. Throws what the step or
// LibTorch throws; a file that cannot be written is the summary's "write_error".
nlohmann::json ProfileSteps(const StepProfileRequest& request, const std::string& file_stem, bool cuda,
                            const std::function<void()>& step);

}  // namespace dlbench::torchrunner

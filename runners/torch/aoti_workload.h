// model: aoti: an AOTInductor package (.pt2) run through LibTorch's AOTIModelPackageLoader
// (LibTorch 2.6+; docs/torch-runner.md "AOTInductor packages").
//
// A package is a compiled inference graph whose weights are packaged constants: it has no
// backward, no parameters the runner can see, and runs at the precision it was compiled at (the
// runner applies no autocast around it). Its inputs must have the dtypes, strides and sizes it was
// exported with, apart from the dynamic batch dimension, so the workload builds contiguous inputs
// whatever memory_format asks (CheckSupported refuses channels_last).
//
// Two implementations, chosen by CMake: aoti_workload_aoti.cc when the loader's header is in the
// Torch include directories (DLBENCH_HAVE_AOTI=1), aoti_workload_none.cc otherwise (Debian's
// LibTorch 1.13), where CheckSupported refuses the cell before this is reached.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>

#include "cell_options.h"
#include "workload.h"

namespace dlbench::torchrunner {

// Whether this runner was compiled with the package loader (Capabilities::aoti_built).
bool AotiBuilt();

// Loads the package at spec.path for `device` (its CUDA ordinal, or -1 for the CPU). `file_bytes`
// is the package's size; `package` is what its sidecar says (AotiSidecar::package), or null.
// Throws std::invalid_argument with the loader's message when the package cannot be loaded or was
// compiled for another device type; UnsupportedError when the loader is not compiled in.
std::unique_ptr<Workload> MakeAotiWorkload(const TorchScriptSpec& spec, torch::Device device,
                                           std::int64_t file_bytes, nlohmann::json package);

}  // namespace dlbench::torchrunner

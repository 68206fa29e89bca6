// Datasheet peak arithmetic rates of known GPUs, so a cell can report the fraction of peak it
// reached (MFU). A table, not a measurement: docs/torch-runner.md names the sources.
#pragma once

#include <optional>
#include <string>

#include "cell_options.h"

namespace dlbench::torchrunner {

// Dense (no structured sparsity) peak FLOP/s of the device named `device_name` (as CUDA reports
// it, e.g. "NVIDIA H200") for the matrix units `precision` uses; nullopt when the device is not
// in the table or the precision has no entry (int8 is counted in OPS, not FLOP/s).
std::optional<double> PeakFlopsPerS(const std::string& device_name, Precision precision);

}  // namespace dlbench::torchrunner

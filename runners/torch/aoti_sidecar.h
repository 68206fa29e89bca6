// The sidecar of an AOTInductor package: the JSON file bench/gpu/aoti_package.py writes beside the
// package (<model_path>.json) saying how the package was made (source model, precision and recipe,
// the dynamic batch range, export and compile times, torch and CUDA versions).
//
// A package's precision is fixed when it is compiled (the runner applies no autocast around it),
// so a cell that names another precision would be labelled wrongly; the sidecar is how the runner
// knows. A package made another way has no sidecar and runs as packaged, unchecked.
// No LibTorch here: the checks are unit-tested on the CPU build, which has no package loader.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cell_options.h"
#include "common/error.h"

namespace dlbench::torchrunner {

// A sidecar larger than this is refused (aoti_package.py writes well under 1 KiB).
inline constexpr std::int64_t kAotiSidecarMaxBytes = std::int64_t{64} * 1024;

// The implicit moves are nlohmann::json's, string's and optional's, all noexcept.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct AotiSidecar {
  std::string path;  // where it was read
  // The fields the runner checks, when the sidecar has them.
  std::optional<Precision> precision;
  std::optional<std::int64_t> batch_min;
  std::optional<std::int64_t> batch_max;
  std::optional<std::vector<InputDtype>> input_dtypes;
  // The effective cell's model_options.package: the sidecar's known fields as written (unknown
  // ones are left out) and its path.
  nlohmann::json package;
};

// "<model_path>.json".
std::string AotiSidecarPath(const std::string& model_path);

// Parses a sidecar's text. kInvalidInput naming `path` when it is not a JSON object, or when
// precision, batch_min/batch_max or input_dtypes are present with the wrong type or an unknown
// value (precision must be a registry precision name; input_dtypes as the input_dtypes key).
Result<AotiSidecar> ParseAotiSidecar(const std::string& text, const std::string& path);

// Reads the sidecar of the package at `model_path`: nullopt when there is none; kInvalidInput
// when it is not a regular file, is larger than kAotiSidecarMaxBytes, cannot be read, or does not
// parse (ParseAotiSidecar).
Result<std::optional<AotiSidecar>> ReadAotiSidecar(const std::string& model_path);

// Whether the cell matches the package its sidecar describes: the same precision ("this package
// was compiled at bf16 (its sidecar X.json); set precision: bf16"), a batch size inside the
// package's dynamic batch range, and the packaged input dtypes. kInvalidInput naming the fix.
Status CheckAotiCell(const AotiSidecar& sidecar, const TorchCell& cell);

}  // namespace dlbench::torchrunner

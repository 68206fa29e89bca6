// A runner's reading of CONFIGURE's params, checked against the parameter registry.
//
// The specs that validated the matrix file (type, range, allowed values, string format, default,
// required-with) validate what a runner receives, so a matrix the planner accepts is a cell the
// runner accepts and the other way round. What stays in a runner are its support rules (what this
// build or device can do: fp16 training on the CPU, ddp) and rules across parameters that the
// registry cannot state (a TorchScript model needs model_path).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/error.h"
#include "config/registry.h"

namespace dlbench::config {

class RunnerParams {
 public:
  // Checks `params` (CONFIGURE's params object) for the runner `runner` ("null", "torch"):
  //   - every key is a cell parameter valid with that runner (a key of another runner's scope or
  //     an unknown key is an error; the matrix could not have sent it);
  //   - every value satisfies its spec (ValidateParamValue; JSON null is a wrong type);
  //   - every parameter required with the runner is present.
  // kInvalidInput with a message that names the parameter: "parameter 'lr': expected a number > 0
  // (got '0')", "unknown parameter 'stepms' for runner null (did you mean 'step_ms'?)".
  static Result<RunnerParams> Parse(const nlohmann::json& params, std::string_view runner);

  // The cell's value of a parameter: as given, else the registry default (or the value of the
  // parameter it defaults from, e.g. samples_per_step from batch_size), else nullopt. A
  // parameter with a constant registry default is never nullopt. Asking for a name that is not a
  // cell parameter of the runner, or through the accessor of another type, is a programmer error
  // (DLBENCH_CHECK): a runner reads only what the registry declares for it. An integer parameter
  // given as its spec's keyword (`data_workers: auto`) reads as nullopt from Int(); Given() and
  // Keyword() tell it from absent.
  std::optional<std::int64_t> Int(std::string_view name) const;
  std::optional<double> Number(std::string_view name) const;     // kNumber
  std::optional<std::string> Text(std::string_view name) const;  // kString and kEnum
  std::optional<bool> Bool(std::string_view name) const;
  // Whether CONFIGURE named the parameter (a default does not count).
  bool Given(std::string_view name) const;
  // Whether the cell gave the parameter as its spec's keyword (`auto`).
  bool Keyword(std::string_view name) const;

  // The runner the params were checked for.
  const std::string& Runner() const { return runner_; }

 private:
  RunnerParams() = default;
  // The cell's value for `name` or nullptr; DLBENCH_CHECKs that `name` is a cell parameter of the
  // runner whose type is `type` (or `also`).
  const nlohmann::json* Lookup(std::string_view name, ParamType type, ParamType also) const;

  std::string runner_;
  nlohmann::json given_ = nlohmann::json::object();   // as received
  nlohmann::json values_ = nlohmann::json::object();  // given, then defaults filled in
};

}  // namespace dlbench::config

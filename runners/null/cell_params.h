// dlbench-null's view of one cell's parameters: what the registry validates and defaults
// (ParseParams) and the step shape, virtual clock and fault arguments it reads as they come
// (ParseShapeAndFaultParams). The serving loop (main.cc) and the fault injection (inject.h) both
// read a Params.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "runners/null/faults.h"
#include "runners/null/memory_model.h"
#include "runners/null/synthetic_steps.h"

namespace dlbench::nullrunner {

struct Params {
  double step_ms = 1.0;
  double jitter_pct = 0.0;
  std::string jitter_dist = "normal";
  Fault inject = Fault::kNone;
  std::int64_t inject_at_step = 20;
  std::optional<std::int64_t> inject_rank;  // only this rank injects; absent: every rank
  std::int64_t leak_bytes_per_step = 65536;
  int exit_code = 3;
  std::int64_t samples_per_step = 1;
  double setup_ms = 0.0;
  std::int64_t warmup_steps = 0;
  double warmup_factor = 3.0;
  // Read by ParseShapeAndFaultParams.
  bool virtual_time = false;
  double virtual_speedup = 1000.0;
  double bimodal_fraction = 0.0;
  double bimodal_factor = 2.0;
  double drift_pct_per_s = 0.0;
  std::optional<std::int64_t> shift_at_step;
  double shift_factor = 1.0;
  std::optional<std::int64_t> shift_attempts;  // the shift in the first this many attempts only
  std::string fault_field;
  std::int64_t flood_bytes = std::int64_t{80} << 20;
  // The memory model: present when the cell sets either of its keys.
  std::optional<synthetic::MemoryModel> memory_model;
  std::int64_t batch_size = 1;
  std::int64_t seq_len = 0;     // 0: the cell sets none
  std::int64_t image_size = 0;  // 0: the cell sets none
  std::optional<std::int64_t> memory_cap_bytes;
};

// Reads the parameters this runner knows. The registry validates them here too (a runner must
// not trust its input) with the same specs that validated the matrix, and supplies the defaults.
bool ParseParams(const nlohmann::json& p, Params& out, std::string& error);

// The parameters of the step-time shape beyond ParseParams', the virtual clock and the faults'
// arguments. Absent keys keep their defaults (none of them has a registry default, so cells that do
// not use them keep their keys).
bool ParseShapeAndFaultParams(const nlohmann::json& p, Params& out, std::string& error);

synthetic::StepShape ShapeOf(const Params& p);

}  // namespace dlbench::nullrunner

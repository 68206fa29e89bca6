// dlbench-null's cell parameters (cell_params.h): the registry's validation and defaults, then the
// keys it reads as they come.
#include "runners/null/cell_params.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "config/registry.h"
#include "config/runner_params.h"

namespace dlbench::nullrunner {

bool ParseParams(const nlohmann::json& p, Params& out, std::string& error) {
  auto parsed = config::RunnerParams::Parse(p, "null");
  if (!parsed.ok()) {
    error = parsed.error().message;
    return false;
  }
  const config::RunnerParams& params = *parsed;
  const std::string inject = params.Text("inject").value();
  const std::optional<Fault> fault = ParseFault(inject);
  if (fault) out.inject = *fault;
  if (!fault) {
    // The registry allows a failure this runner cannot inject: a drift runner_params_test finds.
    error = "parameter 'inject': '" + inject + "' is not implemented by this runner";
    return false;
  }
  out.step_ms = params.Number("step_ms").value();
  out.jitter_pct = params.Number("jitter_pct").value();
  out.jitter_dist = params.Text("jitter_dist").value();
  if (out.jitter_dist != "normal" && out.jitter_dist != "uniform" && out.jitter_dist != "lognormal") {
    error = "parameter 'jitter_dist': '" + out.jitter_dist + "' is not implemented by this runner";
    return false;
  }
  out.inject_at_step = params.Int("inject_at_step").value();
  out.inject_rank = params.Int("inject_rank");
  out.leak_bytes_per_step = params.Int("leak_bytes_per_step").value();
  out.exit_code = static_cast<int>(params.Int("exit_code").value());  // 1..255
  out.samples_per_step = params.Int("samples_per_step").value();      // defaults to batch_size
  out.setup_ms = params.Number("setup_ms").value();
  out.warmup_steps = params.Int("warmup_steps").value();  // names: a parameter, not the metric
  out.warmup_factor = params.Number("warmup_factor").value();
  out.batch_size = params.Int("batch_size").value();
  if (params.Given("memory_base_bytes") || params.Given("memory_per_sample_bytes") ||
      params.Given("memory_per_token_bytes") || params.Given("memory_per_pixel_bytes")) {
    out.memory_model = synthetic::MemoryModel{
        params.Int("memory_base_bytes").value_or(0), params.Int("memory_per_sample_bytes").value_or(0),
        params.Int("memory_per_token_bytes").value_or(0), params.Int("memory_per_pixel_bytes").value_or(0)};
  }
  out.seq_len = params.Int("seq_len").value_or(0);
  out.image_size = params.Int("image_size").value_or(0);
  // The registry validated the text; ParseByteSize reads it.
  if (const std::optional<std::string> cap = params.Text("memory_cap")) {
    out.memory_cap_bytes = config::ParseByteSize(*cap);
  }
  return true;
}

bool ParseShapeAndFaultParams(const nlohmann::json& p, Params& out, std::string& error) {
  try {
    out.virtual_time = p.value("virtual_time", out.virtual_time);
    out.virtual_speedup = p.value("virtual_speedup", out.virtual_speedup);
    out.bimodal_fraction = p.value("bimodal_fraction", out.bimodal_fraction);
    out.bimodal_factor = p.value("bimodal_factor", out.bimodal_factor);
    out.drift_pct_per_s = p.value("drift_pct_per_s", out.drift_pct_per_s);
    if (p.contains("shift_at_step")) out.shift_at_step = p.at("shift_at_step").get<std::int64_t>();
    out.shift_factor = p.value("shift_factor", out.shift_factor);
    if (p.contains("shift_attempts")) out.shift_attempts = p.at("shift_attempts").get<std::int64_t>();
    out.fault_field = p.value("fault_field", out.fault_field);
    out.flood_bytes = p.value("flood_bytes", out.flood_bytes);
  } catch (const nlohmann::json::exception& e) {
    error = std::string("bad parameter type: ") + e.what();
    return false;
  }
  if (!(out.virtual_speedup > 0) || !std::isfinite(out.virtual_speedup)) {
    error = "virtual_speedup must be a finite number > 0";
    return false;
  }
  if (out.flood_bytes < 0) {
    error = "flood_bytes must be >= 0";
    return false;
  }
  if (out.inject == Fault::kWrongType) {
    const auto& fields = WrongTypeFields();
    if (std::find(fields.begin(), fields.end(), out.fault_field) == fields.end()) {
      error = "inject: wrong_type needs fault_field, one of the FRAME.field names (got '" + out.fault_field +
              "')";
      return false;
    }
  }
  return true;
}

synthetic::StepShape ShapeOf(const Params& p) {
  synthetic::StepShape s;
  s.step_ms = p.step_ms;
  s.jitter_pct = p.jitter_pct;
  s.jitter_dist = synthetic::ParseJitterDist(p.jitter_dist).value_or(synthetic::JitterDist::kNormal);
  s.warmup_steps = p.warmup_steps;
  s.warmup_factor = p.warmup_factor;
  s.bimodal_fraction = p.bimodal_fraction;
  s.bimodal_factor = p.bimodal_factor;
  s.drift_pct_per_s = p.drift_pct_per_s;
  s.shift_at_step = p.shift_at_step;
  s.shift_factor = p.shift_factor;
  s.samples_per_step = static_cast<std::uint32_t>(std::min<std::int64_t>(p.samples_per_step, UINT32_MAX));
  return s;
}

}  // namespace dlbench::nullrunner

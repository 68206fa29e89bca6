#include "runners/null/synthetic_steps.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dlbench::synthetic {
namespace {

// SplitMix64's finaliser: a seed for the mode generator that is unrelated to the jitter's.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::int64_t SaturatingAdd(std::int64_t a, std::int64_t b) {
  if (b > 0 && a > std::numeric_limits<std::int64_t>::max() - b)
    return std::numeric_limits<std::int64_t>::max();
  return a + b;
}

}  // namespace

std::optional<JitterDist> ParseJitterDist(const std::string& name) {
  if (name == "normal") return JitterDist::kNormal;
  if (name == "uniform") return JitterDist::kUniform;
  if (name == "lognormal") return JitterDist::kLognormal;
  return std::nullopt;
}

Status ValidateShape(const StepShape& s) {
  auto bad = [](const char* field, const char* expected) {
    return MakeError(ErrorKind::kInvalidInput, std::string(field) + " must be " + expected);
  };
  const struct {
    const char* name;
    double value;
  } finite[] = {{"step_ms", s.step_ms},
                {"jitter_pct", s.jitter_pct},
                {"warmup_factor", s.warmup_factor},
                {"bimodal_fraction", s.bimodal_fraction},
                {"bimodal_factor", s.bimodal_factor},
                {"drift_pct_per_s", s.drift_pct_per_s},
                {"shift_factor", s.shift_factor}};
  for (const auto& f : finite) {
    if (!std::isfinite(f.value)) return bad(f.name, "a finite number");
  }
  if (s.step_ms < 0) return bad("step_ms", ">= 0");
  if (s.jitter_pct < 0) return bad("jitter_pct", ">= 0");
  if (s.warmup_steps < 0) return bad("warmup_steps", ">= 0");  // names: the null runner's parameter
  if (s.warmup_factor < 1) return bad("warmup_factor", ">= 1");
  if (s.bimodal_fraction < 0 || s.bimodal_fraction > 1) return bad("bimodal_fraction", "between 0 and 1");
  if (s.bimodal_factor < 0) return bad("bimodal_factor", ">= 0");
  if (s.shift_at_step && *s.shift_at_step < 0) return bad("shift_at_step", ">= 0");
  if (s.shift_factor < 0) return bad("shift_factor", ">= 0");
  if (s.samples_per_step < 1) return bad("samples_per_step", ">= 1");
  return Status::Ok();
}

StepTimeGenerator::StepTimeGenerator(const StepShape& shape, std::uint64_t seed)
    : shape_(shape),
      jitter_rng_(seed),
      mode_rng_(Mix(seed)),
      uniform_(-std::sqrt(3.0), std::sqrt(3.0)),
      sd_(shape.jitter_pct / 100.0),
      sigma_(std::sqrt(std::log1p(sd_ * sd_))) {
  DLBENCH_CHECK(ValidateShape(shape).ok(), "a StepShape passes ValidateShape before it is used");
}

std::int64_t StepTimeGenerator::NextDurationNs(std::int64_t elapsed_ns) {
  const std::int64_t k = steps_++;
  double m = 1.0;
  if (sd_ > 0) {
    switch (shape_.jitter_dist) {
      case JitterDist::kNormal:
        m = 1.0 + sd_ * normal_(jitter_rng_);
        break;
      case JitterDist::kUniform:
        m = 1.0 + sd_ * uniform_(jitter_rng_);
        break;
      case JitterDist::kLognormal:
        m = std::exp(sigma_ * normal_(jitter_rng_) - sigma_ * sigma_ / 2);
        break;
    }
  }
  if (k < shape_.warmup_steps) m *= shape_.warmup_factor;
  if (shape_.bimodal_fraction > 0 && unit_(mode_rng_) < shape_.bimodal_fraction) m *= shape_.bimodal_factor;
  if (shape_.shift_at_step && k >= *shape_.shift_at_step) m *= shape_.shift_factor;
  if (shape_.drift_pct_per_s != 0) {
    m *= std::max(0.0, 1.0 + shape_.drift_pct_per_s / 100.0 * (static_cast<double>(elapsed_ns) * 1e-9));
  }
  const double ns = std::clamp(shape_.step_ms * 1e6 * m, 0.0, static_cast<double>(kMaxStepNs));
  return std::llround(ns);
}

VirtualClockSteps::VirtualClockSteps(const StepShape& shape, std::uint64_t seed, std::int64_t start_ns)
    : generator_(shape, seed), start_ns_(start_ns), now_ns_(start_ns) {}

record::StepRecord VirtualClockSteps::Next() {
  record::StepRecord r;
  r.start_ns = now_ns_;
  r.end_ns = SaturatingAdd(now_ns_, generator_.NextDurationNs(now_ns_ - start_ns_));
  r.samples = generator_.shape().samples_per_step;
  now_ns_ = r.end_ns;
  return r;
}

std::vector<record::StepRecord> GenerateSteps(const StepShape& shape, std::uint64_t seed,
                                              std::int64_t start_ns, std::size_t count) {
  VirtualClockSteps steps(shape, seed, start_ns);
  std::vector<record::StepRecord> out(count);
  for (auto& r : out) r = steps.Next();
  return out;
}

}  // namespace dlbench::synthetic

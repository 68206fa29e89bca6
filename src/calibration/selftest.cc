#include "calibration/selftest.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <functional>

#include "common/human_text.h"
#include "config/matrix.h"
#include "history/compare.h"
#include "history/text_table.h"
#include "measure/policy.h"
#include "orchestrator/cell_metrics.h"
#include "record/metrics.h"
#include "record/outcome.h"
#include "runners/null/synthetic_steps.h"
#include "stats/descriptive.h"
#include "stats/distributions.h"

namespace dlbench::calibration {
namespace {

// Virtual time starts at a CLOCK_MONOTONIC-like offset, as real step records do.
constexpr std::int64_t kStartNs = std::int64_t{1'000'000'000'000};
// Steps per STEPS frame, as a runner batches them.
constexpr std::size_t kFrameSteps = 16;
constexpr double kStepMs = 1.0;

struct SimulatedCell {
  record::CellRecord rec;
  measure::Outcome measured;
};

// One cell through the orchestrator's measurement path, on the virtual clock.
SimulatedCell Simulate(const synthetic::StepShape& shape, std::uint64_t seed,
                       const config::MeasureSettings& settings, SelftestReport& report) {
  measure::MeasurePolicy policy(settings);
  synthetic::VirtualClockSteps clock(shape, seed, kStartNs);
  std::vector<record::StepRecord> frame(kFrameSteps);
  std::string reason;
  while (reason.empty()) {
    for (auto& r : frame) r = clock.Next();
    policy.Add(frame.data(), frame.size());
    if (const measure::Decision d = policy.Evaluate(); d.stop) reason = d.reason;
  }
  SimulatedCell cell;
  cell.measured = policy.Finish(reason);
  record::CellRecord& rec = cell.rec;
  rec.steps.reserve(policy.records().size());
  for (const auto& r : policy.records()) rec.steps.push_back(record::StepRow{0, r});
  rec.warmup_rule = cell.measured.warmup_rule;
  rec.stop_reason = cell.measured.stop_reason;
  rec.seed = seed;
  rec.outcome = cell.measured.enough_data ? record::Outcome::kOk : record::Outcome::kInvalid;
  orchestrator::AddStepMetrics(cell.measured, rec);
  if (rec.outcome == record::Outcome::kOk) orchestrator::ApplyVerdict(cell.measured, settings, rec);
  ++report.simulated_cells;
  report.simulated_steps += policy.steps_seen();
  report.simulated_s += static_cast<double>(clock.now_ns() - kStartNs) * 1e-9;
  return cell;
}

std::uint64_t SeedOf(const SelftestOptions& o, int check, int i) {
  return o.seed + std::uint64_t{1'000'003} * static_cast<std::uint64_t>(check) +
         static_cast<std::uint64_t>(i);
}

std::string Pct(double share) { return fmt::format("{:.1f}%", 100 * share); }

// A share check: successes of n against [low, high].
Check ShareCheck(std::string name, std::int64_t successes, std::int64_t n, double low, double high,
                 std::string target) {
  Check c;
  c.name = std::move(name);
  c.value = n > 0 ? static_cast<double>(successes) / static_cast<double>(n) : NAN;
  const ShareInterval w = WilsonInterval(successes, n);
  c.figure = fmt::format("{} of {} (95% interval {}-{})", Pct(c.value), n, Pct(w.low), Pct(w.high));
  c.target = std::move(target);
  c.pass = n > 0 && c.value >= low && c.value <= high;
  return c;
}

synthetic::StepShape Stationary(synthetic::JitterDist dist, double jitter_pct) {
  synthetic::StepShape s;
  s.step_ms = kStepMs;
  s.jitter_pct = jitter_pct;
  s.jitter_dist = dist;
  s.samples_per_step = 8;
  return s;
}

synthetic::StepShape Bimodal() {
  synthetic::StepShape s = Stationary(synthetic::JitterDist::kNormal, 3);
  s.bimodal_fraction = 0.1;
  s.bimodal_factor = 2.0;
  return s;
}

// The true mean step time of a stationary shape, in ns (every jitter has mean 1; the clamp at 0
// is 20 standard deviations away for the shapes used here).
double TrueMeanNs(const synthetic::StepShape& s) {
  return s.step_ms * 1e6 * (1 + s.bimodal_fraction * (s.bimodal_factor - 1));
}

bool IsStabilityAlarm(record::Verdict v) {
  return v == record::Verdict::kDrifting || v == record::Verdict::kShifted;
}

struct StationaryCase {
  std::string name;
  synthetic::StepShape shape;
};

std::vector<StationaryCase> StationaryCases() {
  return {{"normal jitter 5%", Stationary(synthetic::JitterDist::kNormal, 5)},
          {"lognormal jitter 20%", Stationary(synthetic::JitterDist::kLognormal, 20)},
          {"bimodal: 10% of steps 2x", Bimodal()}};
}

void CoverageAndFalseAlarms(const SelftestOptions& o, SelftestReport& report) {
  const config::MeasureSettings settings;  // the defaults a user gets
  std::int64_t alarms = 0, judged = 0;
  int check = 0;
  for (const StationaryCase& c : StationaryCases()) {
    const double truth = TrueMeanNs(c.shape);
    std::int64_t covered = 0, n = 0;
    for (int i = 0; i < o.seeds; ++i) {
      const SimulatedCell cell = Simulate(c.shape, SeedOf(o, check, i), settings, report);
      const measure::StepSummary& s = cell.measured.summary;
      if (cell.rec.outcome != record::Outcome::kOk || !std::isfinite(s.ci_low_ns)) continue;
      ++n;
      if (s.ci_low_ns <= truth && truth <= s.ci_high_ns) ++covered;
      ++judged;
      if (IsStabilityAlarm(cell.rec.verdict)) ++alarms;
    }
    Check cov = ShareCheck("coverage of the 95% interval, " + c.name, covered, n, 0.93, 0.97, "93-97%");
    if (n < o.seeds) cov.detail = fmt::format("{} of {} cells gave no interval", o.seeds - n, o.seeds);
    report.checks.push_back(std::move(cov));
    ++check;
  }
  // Two tests (trend, level shift) at alpha = 0.01 each: at most about 2% by chance.
  report.checks.push_back(
      ShareCheck("drift/shift false alarms on the stationary cells above", alarms, judged, 0, 0.02, "<= 2%"));
}

void WarmupCut(const SelftestOptions& o, SelftestReport& report) {
  synthetic::StepShape shape = Stationary(synthetic::JitterDist::kNormal, 5);
  constexpr std::int64_t kTransient = 100;
  shape.warmup_steps = kTransient;
  shape.warmup_factor = 3;
  const config::MeasureSettings settings;
  std::vector<double> offsets;
  std::int64_t not_early = 0, close = 0;
  for (int i = 0; i < o.seeds; ++i) {
    const SimulatedCell cell = Simulate(shape, SeedOf(o, 10, i), settings, report);
    const std::int64_t offset = cell.measured.warmup_steps - kTransient;
    offsets.push_back(static_cast<double>(offset));
    if (offset >= 0) ++not_early;
    if (offset >= 0 && offset <= 10) ++close;  // MSER-5 cuts at a batch of 5: the end or the next
  }
  // A cut before the transient's end measures warm-up steps and biases the mean: it must not
  // happen. A later cut only discards steady steps (MSER-5 sometimes drops a few batches of noise).
  Check c = ShareCheck(fmt::format("warm-up cut not before the end of a {}-step 3x transient", kTransient),
                       not_early, o.seeds, 0.99, 1.0, ">= 99%");
  if (!offsets.empty()) {
    std::sort(offsets.begin(), offsets.end());
    c.detail = fmt::format("cut - transient: min {:+.0f}, median {:+.0f}, p90 {:+.0f}, max {:+.0f} steps",
                           offsets.front(), stats::QuantileSorted(offsets, 0.5),
                           stats::QuantileSorted(offsets, 0.9), offsets.back());
  }
  report.checks.push_back(std::move(c));
  report.checks.push_back(ShareCheck("warm-up cut within 10 steps after the transient's end", close, o.seeds,
                                     0.8, 1.0, ">= 80%"));
}

void Percentiles(const SelftestOptions& o, SelftestReport& report) {
  const synthetic::StepShape shape = Stationary(synthetic::JitterDist::kLognormal, 20);
  const double sd = shape.jitter_pct / 100;
  const double sigma = std::sqrt(std::log(1 + sd * sd));
  const config::MeasureSettings settings;
  struct Q {
    double p;
    double measure::StepSummary::*field;
    double tolerance;
    std::vector<double> errors;
  };
  std::vector<Q> qs = {{0.5, &measure::StepSummary::p50_ns, 0.01, {}},
                       {0.9, &measure::StepSummary::p90_ns, 0.01, {}},
                       {0.99, &measure::StepSummary::p99_ns, 0.02, {}}};
  for (int i = 0; i < o.seeds; ++i) {
    const SimulatedCell cell = Simulate(shape, SeedOf(o, 20, i), settings, report);
    if (cell.rec.outcome != record::Outcome::kOk) continue;
    for (Q& q : qs) {
      const double truth =
          shape.step_ms * 1e6 * std::exp(sigma * stats::NormalQuantile(q.p) - sigma * sigma / 2);
      q.errors.push_back(cell.measured.summary.*q.field / truth - 1);
    }
  }
  for (Q& q : qs) {
    Check c;
    c.name = fmt::format("p{:g} estimate, lognormal jitter 20% (median error over seeds)", 100 * q.p);
    c.target = fmt::format("within ±{:g}%", 100 * q.tolerance);
    if (q.errors.empty()) {
      c.figure = "no cell ended ok";
    } else {
      std::sort(q.errors.begin(), q.errors.end());
      c.value = stats::QuantileSorted(q.errors, 0.5);
      c.figure = fmt::format("{:+.2f}%", 100 * c.value);
      c.detail = fmt::format("middle 90% of seeds: {:+.2f}% to {:+.2f}%",
                             100 * stats::QuantileSorted(q.errors, 0.05),
                             100 * stats::QuantileSorted(q.errors, 0.95));
      c.pass = std::abs(c.value) <= q.tolerance;
    }
    report.checks.push_back(std::move(c));
  }
}

void Detectors(const SelftestOptions& o, SelftestReport& report) {
  // At least 3 s of measured steps, so the movements below are several times the smallest one
  // reported (max(1%, 2 x target_rel_ci) = 4% by default).
  config::MeasureSettings settings;
  settings.min_time_s = 3;
  synthetic::StepShape drift = Stationary(synthetic::JitterDist::kNormal, 5);
  drift.drift_pct_per_s = 5;  // about +15% across the window
  std::int64_t drifting = 0, drift_shifted = 0;
  for (int i = 0; i < o.seeds; ++i) {
    const SimulatedCell cell = Simulate(drift, SeedOf(o, 30, i), settings, report);
    if (cell.rec.verdict == record::Verdict::kDrifting) ++drifting;
    if (cell.rec.verdict == record::Verdict::kShifted) ++drift_shifted;
  }
  Check d = ShareCheck("drift of +5 %/s detected as drifting", drifting, o.seeds, 0.9, 1.0, ">= 90%");
  if (drift_shifted > 0)
    d.detail = fmt::format("{} called shifted instead", CountNoun(drift_shifted, "cell was", "cells were"));
  report.checks.push_back(std::move(d));

  // A level shift is handled when the verdict reports it, or when the warm-up cut lies past it so
  // that no step of the old level is measured (MSER-5 searches the first half of the records, so a
  // shift there is indistinguishable from a long warm-up transient and is cut as one). It is
  // missed when the measured window holds both levels and the verdict says nothing.
  struct Case {
    std::int64_t at;
    int check;
  };
  for (const Case c : {Case{800, 31}, Case{2300, 32}}) {
    synthetic::StepShape shift = Stationary(synthetic::JitterDist::kNormal, 5);
    shift.shift_at_step = c.at;
    shift.shift_factor = 1.10;
    std::int64_t reported = 0, cut = 0, missed = 0;
    for (int i = 0; i < o.seeds; ++i) {
      const SimulatedCell cell = Simulate(shift, SeedOf(o, c.check, i), settings, report);
      if (cell.measured.warmup_steps >= c.at) {
        ++cut;
      } else if (cell.rec.verdict == record::Verdict::kShifted) {
        ++reported;
      } else {
        ++missed;
      }
    }
    Check check =
        ShareCheck(fmt::format("level shift of +10% at step {}: reported as shifted or cut away", c.at),
                   reported + cut, o.seeds, 0.9, 1.0, ">= 90%");
    check.detail = fmt::format("{} shifted, {} cut as warm-up, {} missed", reported, cut, missed);
    report.checks.push_back(std::move(check));
  }
}

// Pairs of identical simulated runs through compare: every "faster" or "slower" is a false alarm.
void CompareFalseAlarms(const SelftestOptions& o, SelftestReport& report) {
  const config::MeasureSettings settings;
  std::vector<StationaryCase> cases = StationaryCases();
  cases.push_back({"normal jitter 1%", Stationary(synthetic::JitterDist::kNormal, 1)});
  auto make_run = [&](std::int64_t id, int pair, int side) {
    history::RunData run;
    run.run.id = id;
    run.run.name = fmt::format("selftest-{}-{}", pair, side);
    run.run.status = record::RunStatus::kCompleted;
    run.run.environment = {{"selftest", true}};
    run.run.environment_hash = "selftest";
    for (std::size_t k = 0; k < cases.size(); ++k) {
      SimulatedCell cell =
          Simulate(cases[k].shape, SeedOf(o, 40 + side, pair * 16 + static_cast<int>(k)), settings, report);
      cell.rec.run_id = id;
      cell.rec.index = static_cast<int>(k);
      cell.rec.key = "shape=" + std::to_string(k);
      cell.rec.cell_id = cell.rec.key + "#r0";
      cell.rec.label = cases[k].name;
      cell.rec.params = {{"shape", static_cast<int>(k)}};
      run.cells.push_back(std::move(cell.rec));
    }
    return run;
  };
  struct Threshold {
    double threshold;
    std::int64_t alarms = 0, compared = 0;
  };
  std::vector<Threshold> thresholds = {{0.01}, {0.0}};
  for (int pair = 0; pair < o.compare_pairs; ++pair) {
    const history::RunData base = make_run(2 * pair + 1, pair, 0);
    const history::RunData candidate = make_run(2 * pair + 2, pair, 1);
    for (Threshold& t : thresholds) {
      history::CompareOptions options;
      options.threshold = t.threshold;
      options.use_history_noise = false;
      auto cmp = history::CompareRunData(base, candidate, options);
      if (!cmp.ok()) continue;
      for (const auto& cell : cmp->cells) {
        if (cell.verdict == history::Verdict::kNotComparable) continue;
        ++t.compared;
        if (cell.verdict == history::Verdict::kFaster || cell.verdict == history::Verdict::kSlower)
          ++t.alarms;
      }
    }
  }
  for (const Threshold& t : thresholds) {
    report.checks.push_back(
        ShareCheck(fmt::format("compare of identical runs at --threshold {:g}: cells called faster or slower",
                               100 * t.threshold),
                   t.alarms, t.compared, 0, 0.05, "<= 5%"));
  }
}

}  // namespace

Status ValidateOptions(const SelftestOptions& o) {
  if (o.seeds < 10 || o.seeds > kMaxSeeds)
    return Error{ErrorKind::kInvalidInput, fmt::format("--seeds must be 10..{}, got {}", kMaxSeeds, o.seeds)};
  if (o.compare_pairs < 1 || o.compare_pairs > kMaxComparePairs)
    return Error{ErrorKind::kInvalidInput,
                 fmt::format("--compare-pairs must be 1..{}, got {}", kMaxComparePairs, o.compare_pairs)};
  return {};
}

bool SelftestReport::Passed() const {
  return !checks.empty() && std::all_of(checks.begin(), checks.end(), [](const Check& c) { return c.pass; });
}

ShareInterval WilsonInterval(std::int64_t successes, std::int64_t n) {
  if (n <= 0) return {};
  const double z = stats::NormalQuantile(0.975);
  const double nn = static_cast<double>(n);
  const double p = static_cast<double>(successes) / nn;
  const double denom = 1 + z * z / nn;
  const double centre = (p + z * z / (2 * nn)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / denom;
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

SelftestReport RunSelftest(const SelftestOptions& options) {
  const Status valid = ValidateOptions(options);
  if (!valid.ok()) throw std::invalid_argument(valid.error().message);
  const auto t0 = std::chrono::steady_clock::now();
  SelftestReport report;
  report.options = options;
  CoverageAndFalseAlarms(options, report);
  WarmupCut(options, report);
  Percentiles(options, report);
  Detectors(options, report);
  CompareFalseAlarms(options, report);
  report.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

std::string FormatSelftest(const SelftestReport& r) {
  std::string out = fmt::format(
      "selftest: the measurement method on simulated cells whose truth is known ({} seeds per check, "
      "first seed {}; {} cells, {} steps, {:.0f} virtual s in {:.1f} s)\n\n",
      r.options.seeds, r.options.seed, r.simulated_cells, r.simulated_steps, r.simulated_s, r.wall_s);
  std::vector<std::vector<std::string>> rows = {{"check", "figure", "target", "result"}};
  for (const Check& c : r.checks) rows.push_back({c.name, c.figure, c.target, c.pass ? "pass" : "FAIL"});
  out += history::RenderTextTable(
      rows, {history::Align::kLeft, history::Align::kLeft, history::Align::kLeft, history::Align::kLeft});
  bool any_detail = false;
  for (const Check& c : r.checks) {
    if (c.detail.empty()) continue;
    if (!any_detail) out += "\n";
    any_detail = true;
    out += fmt::format("{}: {}\n", c.name, c.detail);
  }
  const auto failed = std::count_if(r.checks.begin(), r.checks.end(), [](const Check& c) { return !c.pass; });
  out += failed == 0 ? fmt::format("\nall {} checks passed\n", r.checks.size())
                     : fmt::format("\n{} of {} checks FAILED\n", failed, r.checks.size());
  return out;
}

nlohmann::json SelftestToJson(const SelftestReport& r) {
  nlohmann::json j = {{"seeds", r.options.seeds},
                      {"compare_pairs", r.options.compare_pairs},
                      {"seed", r.options.seed},
                      {"simulated_cells", r.simulated_cells},
                      {"simulated_steps", r.simulated_steps},
                      {"simulated_s", r.simulated_s},
                      {"wall_s", r.wall_s},
                      {"passed", r.Passed()}};
  j["checks"] = nlohmann::json::array();
  for (const Check& c : r.checks) {
    j["checks"].push_back({{"name", c.name},
                           {"figure", c.figure},
                           {"target", c.target},
                           {"value", std::isfinite(c.value) ? nlohmann::json(c.value) : nlohmann::json()},
                           {"pass", c.pass},
                           {"detail", c.detail}});
  }
  return j;
}

}  // namespace dlbench::calibration

#include "history/noise.h"

#include <fmt/core.h>

#include <cmath>
#include <map>

#include "common/human_text.h"
#include "history/samples.h"
#include "history/text_table.h"
#include "record/metrics.h"
#include "stats/descriptive.h"
#include "stats/distributions.h"

namespace dlbench::history {
namespace {

// A repetition's figure by the stored metric's definition (compare's Pool does the same).
std::optional<double> Figure(const record::CellRecord& cell, Metric metric) {
  const auto v = record::MetricValue(cell, StoredMetricName(metric));
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return *v * StoredMetricScale(metric);
}

}  // namespace

Result<NoiseReport> MeasureNoise(store::ResultStore& store, const std::string& run_ref, Metric metric,
                                 double confidence_level) {
  auto id = store.ResolveRun(run_ref);
  if (!id.ok()) return id.error();
  auto run = store.GetRun(*id);
  if (!run.ok()) return run.error();
  auto cells = store.GetCells(*id, store::CellQuery{});
  if (!cells.ok()) return cells.error();
  NoiseReport report;
  report.run_id = run->id;
  report.run_name = run->name;
  report.metric = metric;
  std::map<std::string, std::vector<const record::CellRecord*>> by_key;
  for (const auto& c : *cells) by_key[c.key].push_back(&c);
  for (const auto& [key, reps] : by_key) {
    std::vector<double> figures, within;
    for (const auto* c : reps) {
      if (c->outcome != record::Outcome::kOk) continue;
      if (auto f = Figure(*c, metric)) figures.push_back(*f);
      if (auto w = record::MetricValue(*c, record::metric::kStepTimeCiRelHalfwidth); w && std::isfinite(*w))
        within.push_back(*w);
    }
    const std::string label = reps.front()->label.empty() ? key : reps.front()->label;
    if (figures.size() < 2) {
      report.skipped.push_back(label);
      continue;
    }
    const stats::Moments m = stats::ComputeMoments(figures);
    CellNoise n;
    n.key = key;
    n.label = label;
    n.repetitions = static_cast<int>(figures.size());
    n.mean = m.mean;
    n.between_cv = m.stddev / m.mean;
    const double t =
        stats::StudentTQuantile((1 + confidence_level) / 2, static_cast<double>(figures.size() - 1));
    n.between_rel_halfwidth = t * m.stddev / std::sqrt(static_cast<double>(figures.size())) / m.mean;
    if (!within.empty()) {
      n.within_rel_halfwidth = stats::ComputeMoments(within).mean;
      if (*n.within_rel_halfwidth > 0) n.between_over_within = n.between_cv / *n.within_rel_halfwidth;
    }
    report.cells.push_back(std::move(n));
  }
  return report;
}

std::string FormatNoiseTable(const NoiseReport& r) {
  std::string out = fmt::format("noise: run {} ({}), {} ({})\n", r.run_id, r.run_name, MetricName(r.metric),
                                MetricUnit(r.metric));
  out +=
      "within: the mean half-width of each repetition's own interval (what one process claims); between: "
      "the spread of the repetitions' figures (fresh processes)\n\n";
  std::vector<std::vector<std::string>> rows = {
      {"cell", "reps", "mean", "within ±", "between CV", "between ±", "between / within"}};
  auto pct = [](double v) { return fmt::format("{:.2f}%", 100 * v); };
  for (const CellNoise& c : r.cells) {
    rows.push_back({c.label, std::to_string(c.repetitions), FormatSignificant(c.mean, 4),
                    c.within_rel_halfwidth ? pct(*c.within_rel_halfwidth) : "-", pct(c.between_cv),
                    pct(c.between_rel_halfwidth),
                    c.between_over_within ? fmt::format("{:.1f}x", *c.between_over_within) : "-"});
  }
  if (r.cells.empty()) {
    out += "no cell has 2 or more ok repetitions (set repetitions: N in the matrix)\n";
  } else {
    out += RenderTextTable(rows, {Align::kLeft, Align::kRight, Align::kRight, Align::kRight, Align::kRight,
                                  Align::kRight, Align::kRight});
  }
  if (!r.skipped.empty())
    out += fmt::format("{} with fewer than 2 ok repetitions left out\n",
                       CountNoun(static_cast<std::int64_t>(r.skipped.size()), "cell"));
  return out;
}

nlohmann::json NoiseToJson(const NoiseReport& r) {
  nlohmann::json j = {{"run_id", r.run_id},
                      {"run_name", r.run_name},
                      {"metric", MetricName(r.metric)},
                      {"unit", MetricUnit(r.metric)},
                      {"skipped", r.skipped}};
  j["cells"] = nlohmann::json::array();
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  for (const CellNoise& c : r.cells) {
    j["cells"].push_back({{"key", c.key},
                          {"label", c.label},
                          {"repetitions", c.repetitions},
                          {"mean", c.mean},
                          {"between_cv", c.between_cv},
                          {"between_rel_halfwidth", c.between_rel_halfwidth},
                          {"within_rel_halfwidth", opt(c.within_rel_halfwidth)},
                          {"between_over_within", opt(c.between_over_within)}});
  }
  return j;
}

}  // namespace dlbench::history

#include "orchestrator/ddp_analysis.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "record/metrics.h"
#include "record/outcome.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;
using nlohmann::json;

std::string ParamText(const record::CellRecord& cell, const char* key) {
  auto it = cell.params.find(key);
  return it != cell.params.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool IsDdp(const record::CellRecord& cell) { return ParamText(cell, "strategy") == "ddp"; }

bool IsAllReduceCell(const record::CellRecord& cell) { return ParamText(cell, "model") == "allreduce"; }

// The bytes one all-reduce of an allreduce cell moves: what the runner reports it ran
// (effective.allreduce.bytes), else the parameter.
std::optional<double> AllReduceBytes(const record::CellRecord& cell) {
  const json* e = &cell.effective;
  if (e->is_object() && e->contains("allreduce") && (*e)["allreduce"].is_object() &&
      (*e)["allreduce"].contains("bytes") && (*e)["allreduce"]["bytes"].is_number()) {
    return (*e)["allreduce"]["bytes"].get<double>();
  }
  auto it = cell.params.find("allreduce_bytes");
  if (it != cell.params.end() && it->is_number()) return it->get<double>();
  return std::nullopt;
}

json& Extras(record::CellRecord& cell) {
  json& x = cell.extras[record::kDdpScalingExtrasKey];
  if (!x.is_object()) x = json::object();
  return x;
}

// Why a reference cannot be compared with, or an empty string when it can.
std::string Unusable(const std::string& id, const record::CellRecord* ref, const std::string& what,
                     const std::string& add) {
  if (id.empty()) return fmt::format("the run has no {} with every other parameter equal ({})", what, add);
  if (ref == nullptr) {
    return fmt::format("its {} {} did not run in this invocation (with --shard it may be in another shard)",
                       what, id);
  }
  if (ref->outcome != record::Outcome::kOk)
    return fmt::format("its {} {} ended {}", what, ref->label, record::Name(ref->outcome));
  return "";
}

}  // namespace

int DdpWorldSize(const record::CellRecord& cell) {
  auto it = cell.params.find("world_size");
  return it != cell.params.end() && it->is_number_integer() ? it->get<int>() : 1;
}

std::string DdpModeOf(const record::CellRecord& cell) {
  const std::string mode = ParamText(cell, "ddp_mode");
  return mode.empty() ? "overlap" : mode;
}

double SamplesInSpan(const std::vector<record::StepRecord>& steps, std::int64_t from_ns, std::int64_t to_ns) {
  double samples = 0;
  for (const record::StepRecord& s : steps) {
    const std::int64_t duration = s.end_ns - s.start_ns;
    if (duration <= 0) {
      if (s.start_ns >= from_ns && s.start_ns <= to_ns) samples += s.samples;
      continue;
    }
    const std::int64_t inside = std::min(s.end_ns, to_ns) - std::max(s.start_ns, from_ns);
    if (inside <= 0) continue;
    samples += static_cast<double>(s.samples) * static_cast<double>(inside) / static_cast<double>(duration);
  }
  return samples;
}

double OwnStepNs(const record::StepRecord& step) {
  double own = static_cast<double>(step.end_ns - step.start_ns);
  if ((step.present & record::kHasComm) != 0) own -= static_cast<double>(step.comm_ns);
  return own;
}

std::vector<RankFigures> RankFiguresInSpan(const std::vector<record::StepRow>& rows, std::int64_t from_ns,
                                           std::int64_t to_ns) {
  std::map<std::uint32_t, std::vector<record::StepRecord>> by_rank;
  for (const record::StepRow& row : rows) by_rank[row.rank].push_back(row.record);
  const double span_s = static_cast<double>(to_ns - from_ns) / 1e9;
  std::vector<RankFigures> out;
  for (const auto& [rank, steps] : by_rank) {
    RankFigures f;
    f.rank = rank;
    f.samples_per_s = span_s > 0 ? SamplesInSpan(steps, from_ns, to_ns) / span_s : 0;
    double own = 0;
    for (const record::StepRecord& s : steps) {
      if (s.start_ns < from_ns || s.end_ns > to_ns) continue;
      ++f.steps_inside;
      own += OwnStepNs(s);
    }
    if (f.steps_inside > 0) f.own_step_mean_ns = own / static_cast<double>(f.steps_inside);
    out.push_back(f);
  }
  return out;
}

std::optional<Straggler> FindStraggler(const std::vector<RankFigures>& ranks) {
  const RankFigures* slowest = nullptr;
  const RankFigures* fastest = nullptr;
  int with_mean = 0;
  for (const RankFigures& r : ranks) {
    if (!r.own_step_mean_ns) continue;
    ++with_mean;
    auto before = [](const RankFigures& a, const RankFigures* b) { return a.rank < b->rank; };
    if (slowest == nullptr || *r.own_step_mean_ns > *slowest->own_step_mean_ns ||
        (*r.own_step_mean_ns == *slowest->own_step_mean_ns && before(r, slowest)))
      slowest = &r;
    if (fastest == nullptr || *r.own_step_mean_ns < *fastest->own_step_mean_ns ||
        (*r.own_step_mean_ns == *fastest->own_step_mean_ns && before(r, fastest)))
      fastest = &r;
  }
  if (with_mean < 2 || *fastest->own_step_mean_ns <= 0) return std::nullopt;
  Straggler s;
  s.slowest_rank = slowest->rank;
  s.fastest_rank = fastest->rank;
  s.lag_ns = *slowest->own_step_mean_ns - *fastest->own_step_mean_ns;
  s.lag_pct = s.lag_ns / *fastest->own_step_mean_ns * 100.0;
  return s;
}

std::optional<double> CommShare(const std::vector<record::StepRecord>& steps) {
  double comm = 0;
  double total = 0;
  bool any = false;
  for (const record::StepRecord& s : steps) {
    if ((s.present & record::kHasComm) == 0) continue;
    any = true;
    comm += static_cast<double>(s.comm_ns);
    total += static_cast<double>(s.end_ns - s.start_ns);
  }
  if (!any || total <= 0) return std::nullopt;
  return comm / total;
}

std::optional<double> CommMeanNs(const std::vector<record::StepRecord>& steps) {
  double comm = 0;
  std::int64_t n = 0;
  for (const record::StepRecord& s : steps) {
    if ((s.present & record::kHasComm) == 0) continue;
    comm += static_cast<double>(s.comm_ns);
    ++n;
  }
  if (n == 0) return std::nullopt;
  return comm / static_cast<double>(n);
}

std::optional<double> OverlapFraction(double exposed_ns, double serial_comm_ns) {
  if (!(serial_comm_ns > 0)) return std::nullopt;
  return 1.0 - exposed_ns / serial_comm_ns;
}

double AllReduceBusBandwidth(double algbw_bytes_per_s, int world_size) {
  if (world_size <= 1) return 0;
  return algbw_bytes_per_s * 2.0 * static_cast<double>(world_size - 1) / static_cast<double>(world_size);
}

void AddDdpFigures(record::CellRecord& cell) {
  if (cell.outcome != record::Outcome::kOk || !IsDdp(cell)) return;
  const std::vector<record::StepRecord> measured = record::MeasuredSteps(cell);
  if (measured.empty()) return;
  const int world = DdpWorldSize(cell);
  json& x = Extras(cell);
  x["world_size"] = world;
  x["ddp_mode"] = DdpModeOf(cell);

  if (IsAllReduceCell(cell)) {
    const std::optional<double> mean_ns = record::MetricValue(cell, metric::kStepTimeMeanNs);
    const std::optional<double> bytes = AllReduceBytes(cell);
    if (mean_ns && *mean_ns > 0 && bytes) {
      const double algbw = *bytes / (*mean_ns / 1e9);
      record::SetMetric(cell, metric::kAllreduceAlgbwBytesPerS, algbw);
      record::SetMetric(cell, metric::kAllreduceBusbwBytesPerS, AllReduceBusBandwidth(algbw, world));
      x["allreduce_bytes"] = *bytes;
    } else {
      x["bandwidth_why_none"] = "no mean step time or no allreduce_bytes";
    }
    return;
  }

  const std::int64_t from = measured.front().start_ns;
  const std::int64_t to = measured.back().end_ns;
  if (to <= from) return;
  const std::vector<RankFigures> ranks = RankFiguresInSpan(cell.steps, from, to);
  double global = 0;
  json per_rank = json::array();
  for (const RankFigures& r : ranks) {
    global += r.samples_per_s;
    // The rank's own rate, under the name of the cell's (record/metrics.h), over the same span.
    json entry = {{"rank", r.rank},
                  {std::string(metric::kSamplesPerS), r.samples_per_s},
                  {"steps_inside", r.steps_inside}};
    if (r.own_step_mean_ns) entry["own_step_mean_ns"] = *r.own_step_mean_ns;
    per_rank.push_back(entry);
  }
  x["span_s"] = static_cast<double>(to - from) / 1e9;
  x["ranks"] = per_rank;
  record::SetMetric(cell, metric::kDdpGlobalSamplesPerS, global);
  if (static_cast<int>(ranks.size()) < world) {
    x["missing_ranks"] = fmt::format("{} of {} ranks have stored steps", ranks.size(), world);
  }
  if (const std::optional<Straggler> s = FindStraggler(ranks)) {
    record::SetMetric(cell, metric::kDdpSlowestRank, s->slowest_rank);
    record::SetMetric(cell, metric::kDdpStragglerLagNs, s->lag_ns);
    record::SetMetric(cell, metric::kDdpStragglerLagPct, s->lag_pct);
    x["fastest_rank"] = s->fastest_rank;
  }
  if (DdpModeOf(cell) == "serial") {
    if (auto mean = CommMeanNs(measured)) record::SetMetric(cell, metric::kDdpAllreduceMeanNs, *mean);
    if (auto share = CommShare(measured))
      record::SetMetric(cell, metric::kDdpAllreduceSharePct, *share * 100.0);
  }
}

void AddDdpComparisons(record::CellRecord& cell, const DdpReferenceCells& refs) {
  if (cell.outcome != record::Outcome::kOk || !IsDdp(cell) || IsAllReduceCell(cell)) return;
  json& x = Extras(cell);
  const int world = DdpWorldSize(cell);
  const std::string mode = DdpModeOf(cell);

  if (world > 1) {
    json e = json::object();
    const std::string why = Unusable(refs.scaling_control_id, refs.scaling_control, "world_size 1 cell",
                                     "add 1 to the world_size axis");
    const std::optional<double> global = record::MetricValue(cell, metric::kDdpGlobalSamplesPerS);
    std::optional<double> single;
    if (why.empty()) {
      single = record::MetricValue(*refs.scaling_control, metric::kDdpGlobalSamplesPerS);
      if (!single) single = record::MetricValue(*refs.scaling_control, metric::kSamplesPerS);
    }
    if (!why.empty()) {
      e["why_none"] = why;
    } else if (!global || !single || *global <= 0 || *single <= 0) {
      e["why_none"] = fmt::format("{} has no samples per second to compare",
                                  !global || *global <= 0 ? "the cell" : "its world_size 1 cell");
    } else {
      const double speedup = *global / *single;
      record::SetMetric(cell, metric::kDdpSpeedup, speedup);
      record::SetMetric(cell, metric::kDdpScalingEfficiencyPct, speedup / world * 100.0);
      e["control_label"] = refs.scaling_control->label;
    }
    if (!refs.scaling_control_id.empty()) e["control_cell"] = refs.scaling_control_id;
    x["efficiency"] = e;
  }

  if (mode != "overlap" && mode != "serial") return;
  std::optional<double> exposed;
  {
    json e = json::object();
    const std::string why = Unusable(refs.compute_only_id, refs.compute_only, "compute-only twin",
                                     "add compute_only to the ddp_mode axis");
    const std::optional<double> step = record::MetricValue(cell, metric::kStepTimeMeanNs);
    const std::optional<double> compute =
        why.empty() ? record::MetricValue(*refs.compute_only, metric::kStepTimeMeanNs) : std::nullopt;
    if (!why.empty()) {
      e["why_none"] = why;
    } else if (!step || !compute) {
      e["why_none"] = fmt::format("{} has no mean step time", !step ? "the cell" : "its compute-only twin");
    } else {
      exposed = *step - *compute;
      record::SetMetric(cell, metric::kDdpExposedCommNs, *exposed);
      e["compute_only_label"] = refs.compute_only->label;
    }
    if (!refs.compute_only_id.empty()) e["compute_only_cell"] = refs.compute_only_id;
    x["exposed"] = e;
  }
  if (mode != "overlap") return;
  json e = json::object();
  const std::string why =
      Unusable(refs.serial_id, refs.serial, "serial twin", "add serial to the ddp_mode axis");
  const std::optional<double> comm =
      why.empty() ? record::MetricValue(*refs.serial, metric::kDdpAllreduceMeanNs) : std::nullopt;
  if (!why.empty()) {
    e["why_none"] = why;
  } else if (!exposed) {
    e["why_none"] = "no exposed communication: " + x["exposed"].value("why_none", std::string("?"));
  } else if (!comm) {
    e["why_none"] = "its serial twin reports no all-reduce time";
  } else if (auto overlap = OverlapFraction(*exposed, *comm)) {
    record::SetMetric(cell, metric::kDdpOverlapPct, *overlap * 100.0);
    e["serial_label"] = refs.serial->label;
  } else {
    e["why_none"] = "its serial twin's all-reduce took no time";
  }
  if (!refs.serial_id.empty()) e["serial_cell"] = refs.serial_id;
  x["overlap"] = e;
}

}  // namespace dlbench::orchestrator

#include "report/prometheus.h"

#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <map>
#include <set>

#include "common/files.h"
#include "common/text.h"
#include "common/version.h"
#include "record/metrics.h"
#include "report/escape.h"
#include "report/export.h"

namespace dlbench::report {
namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

// The labels named in the header comment; everything else in params goes into "variant".
constexpr const char* kLabelParams[] = {"model", "scenario", "batch_size", "precision", "device", "strategy"};

std::string StripSuffix(const std::string& text, const std::string& suffix) {
  return EndsWith(text, suffix) ? text.substr(0, text.size() - suffix.size()) : text;
}

std::string ValueText(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_null()) return "";
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The first string or number leaf whose key is one of `keys`, searched depth-first.
std::string FindLeaf(const nlohmann::json& node, const std::vector<std::string>& keys, int depth = 0) {
  if (!node.is_object() || depth > 4) return "";
  for (const auto& k : keys) {
    auto it = node.find(k);
    if (it != node.end() && (it->is_string() || it->is_number())) return ValueText(*it);
  }
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string found = FindLeaf(*it, keys, depth + 1);
    if (!found.empty()) return found;
  }
  return "";
}

std::string LabelText(const Labels& labels) {
  std::string out;
  for (const auto& [k, v] : labels) {
    out += out.empty() ? "{" : ",";
    out += SanitizePrometheusName(k) + "=\"" + EscapePrometheusLabel(v) + "\"";
  }
  if (!out.empty()) out += "}";
  return out;
}

struct Family {
  std::string help;
  std::map<std::string, double> samples;  // label text -> value; a repeated label set is dropped
};

class Exposition {
 public:
  void Add(const std::string& name, const std::string& help, const Labels& labels, double value) {
    Family& family = families_[name];
    if (family.help.empty()) family.help = help;
    family.samples.emplace(LabelText(labels), value);
  }
  std::string Text() const {
    std::string out;
    for (const auto& [name, family] : families_) {
      // HELP text escapes backslash and line feed only (the text format's rule).
      std::string help;
      for (char c : family.help) {
        if (c == '\\')
          help += "\\\\";
        else if (c == '\n')
          help += "\\n";
        else
          help += c;
      }
      out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, help, name);
      for (const auto& [labels, value] : family.samples) {
        out += name + labels + " " + FormatNumber(value) + "\n";
      }
    }
    return out;
  }

 private:
  std::map<std::string, Family> families_;
};

bool ProcessAlive(std::int64_t pid) {
  if (pid <= 0) return false;
  // EPERM means it exists but belongs to someone else: still alive.
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// Latest cell per key from runs newest first; `previous` from the next older occurrence.
Result<ExpositionInput> Collect(store::ResultStore& store, std::optional<std::int64_t> only_run) {
  auto runs = store.ListRuns();
  if (!runs.ok()) return runs.error();
  std::vector<record::RunRecord> ordered = std::move(runs).value();
  std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.id > b.id; });

  ExpositionInput input;
  std::map<std::string, std::size_t> latest_index;  // key -> position in input.cells
  std::set<std::string> has_previous;
  for (const record::RunRecord& run : ordered) {
    if (only_run && run.id > *only_run) continue;
    auto cells = store.GetCells(run.id, store::CellQuery{});
    if (!cells.ok()) return cells.error();
    std::vector<record::CellRecord> list = std::move(cells).value();
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.index > b.index; });
    const bool is_target = !only_run || run.id == *only_run;
    if (is_target && !input.environment_run) input.environment_run = run;
    std::set<std::string> keys_in_this_run;
    for (record::CellRecord& cell : list) {
      auto found = latest_index.find(cell.key);
      if (found == latest_index.end()) {
        if (!is_target) continue;
        latest_index[cell.key] = input.cells.size();
        keys_in_this_run.insert(cell.key);
        input.cells.push_back(LatestCell{run, std::move(cell), std::nullopt});
        continue;
      }
      // An older run's (or an earlier repetition in the same run is not "previous": skip it).
      if (keys_in_this_run.count(cell.key) || has_previous.count(cell.key)) continue;
      const record::MetricRecord* tput = FindMetric(cell, record::metric::kSamplesPerS);
      if (cell.outcome == record::Outcome::kOk && tput != nullptr) {
        input.cells[found->second].previous_samples_per_s = tput->value;
        has_previous.insert(cell.key);
      }
    }
  }
  // Key order: the same store gives the same exposition, scrape after scrape.
  std::sort(input.cells.begin(), input.cells.end(),
            [](const LatestCell& a, const LatestCell& b) { return a.cell.key < b.cell.key; });
  return input;
}

}  // namespace

PromGauge ToBaseUnits(const record::MetricRecord& metric) {
  const std::string& n = metric.name;
  const std::string& u = metric.unit;
  PromGauge g{"", metric.value};
  std::string base;
  if (u == "ns") {
    base = StripSuffix(n, "_ns") + "_seconds";
    g.value = metric.value * 1e-9;
  } else if (u == "s") {
    base = StripSuffix(n, "_s") + "_seconds";
  } else if (u == "bytes") {
    base = StripSuffix(n, "_bytes") + "_bytes";
  } else if (u == "J") {
    base = StripSuffix(n, "_j") + "_joules";
  } else if (u == "%") {
    base = StripSuffix(n, "_pct") + "_ratio";
    g.value = metric.value / 100.0;
  } else if (u == "ratio") {
    base = StripSuffix(n, "_ratio") + "_ratio";
  } else if (u == "1/s" || u == "FLOP/s") {
    base = StripSuffix(n, "_per_s") + "_per_second";
  } else if (u == "W") {
    base = StripSuffix(n, "_w") + "_watts";
  } else {
    base = n;
  }
  g.name = "dlbench_" + SanitizePrometheusName(base);
  return g;
}

std::string EnvironmentHost(const nlohmann::json& environment) {
  if (!environment.is_object()) return "";
  if (environment.contains("hostname") && environment["hostname"].is_string()) {
    return environment["hostname"].get<std::string>();
  }
  if (environment.contains("host") && environment["host"].is_object()) {
    const auto& host = environment["host"];
    for (const char* k : {"hostname", "name"}) {
      if (host.contains(k) && host[k].is_string()) return host[k].get<std::string>();
    }
  }
  return "";
}

std::vector<std::pair<std::string, std::string>> CellLabels(const record::RunRecord& run,
                                                            const record::CellRecord& cell) {
  Labels labels;
  std::set<std::string> named;
  for (const char* p : kLabelParams) {
    named.insert(p);
    labels.emplace_back(p,
                        cell.params.is_object() && cell.params.contains(p) ? ValueText(cell.params[p]) : "");
  }
  labels.emplace_back("host", EnvironmentHost(run.environment));
  std::string variant;
  if (cell.params.is_object()) {
    // nlohmann::json objects iterate in key order, so the variant text is canonical.
    for (auto it = cell.params.begin(); it != cell.params.end(); ++it) {
      if (named.count(it.key())) continue;
      if (!variant.empty()) variant += ",";
      variant += it.key() + "=" + ValueText(it.value());
    }
  }
  labels.emplace_back("variant", variant);
  return labels;
}

std::optional<RunProgress> ReadActiveProgress(const std::string& db_path) {
  auto text = ReadFile(ProgressPath(db_path));
  if (!text.ok()) return std::nullopt;
  auto progress = ParseProgress(*text);
  if (!progress.ok() || !ProcessAlive(progress->pid)) return std::nullopt;
  return std::move(progress).value();
}

std::string RenderExposition(const ExpositionInput& input) {
  Exposition out;
  out.Add("dlbench_build_info", "The dlbench build that serves these metrics (value 1)",
          {{"version", kVersion}, {"git_commit", kGitCommit}, {"build_type", kBuildType}}, 1);

  if (input.environment_run) {
    const record::RunRecord& run = *input.environment_run;
    const nlohmann::json& env = run.environment;
    out.Add("dlbench_environment_info",
            "The environment fingerprint of the newest run described here (value 1)",
            {{"host", EnvironmentHost(env)},
             {"environment_hash", run.environment_hash},
             {"os", FindLeaf(env, {"os", "os_name", "pretty_name"})},
             {"kernel", FindLeaf(env, {"kernel", "kernel_release"})},
             {"cpu", FindLeaf(env, {"cpu_model", "cpu"})},
             {"gpu", FindLeaf(env, {"gpu_name", "gpu"})},
             {"driver", FindLeaf(env, {"driver_version", "driver"})},
             {"cuda", FindLeaf(env, {"cuda_version", "cuda"})},
             {"cudnn", FindLeaf(env, {"cudnn_version", "cudnn"})},
             {"framework", FindLeaf(env, {"torch_version", "framework_version"})},
             {"run_id", std::to_string(run.id)}},
            1);
  }

  for (const LatestCell& lc : input.cells) {
    const Labels labels = CellLabels(lc.run, lc.cell);
    for (const record::MetricRecord& m : lc.cell.metrics) {
      const PromGauge g = ToBaseUnits(m);
      out.Add(g.name,
              fmt::format("dlbench metric {} ({}) in base units", m.name, m.unit.empty() ? "-" : m.unit),
              labels, g.value);
    }
    out.Add("dlbench_cell_ok", "1 when the cell's latest result ended ok", labels,
            lc.cell.outcome == record::Outcome::kOk ? 1 : 0);
    out.Add("dlbench_cell_valid", "1 when the cell's latest result has the verdict valid", labels,
            lc.cell.verdict == record::Verdict::kValid ? 1 : 0);
    out.Add("dlbench_cell_run_id", "The run that produced the cell's latest result", labels,
            static_cast<double>(lc.run.id));
    if (lc.cell.finished_wall_ns > 0) {
      out.Add("dlbench_cell_finished_timestamp_seconds", "When the cell's latest result finished (Unix time)",
              labels, static_cast<double>(lc.cell.finished_wall_ns) * 1e-9);
    }
    const record::MetricRecord* tput = FindMetric(lc.cell, record::metric::kSamplesPerS);
    if (tput != nullptr && lc.previous_samples_per_s && *lc.previous_samples_per_s > 0) {
      const double ratio = tput->value / *lc.previous_samples_per_s;
      out.Add("dlbench_samples_per_second_change_ratio",
              "Throughput of the latest result over the previous run's for the same cell key", labels, ratio);
      out.Add("dlbench_cell_regression",
              fmt::format("1 when throughput fell by more than {}% against the previous run",
                          FormatNumber(input.regression_threshold * 100)),
              labels, ratio < 1.0 - input.regression_threshold ? 1 : 0);
    }
  }

  if (input.with_progress) {
    out.Add("dlbench_run_active", "1 while a dlbench run writes to this database", {},
            input.progress ? 1 : 0);
    if (input.progress) {
      const RunProgress& p = *input.progress;
      const Labels run_label = {{"run_id", std::to_string(p.run_id)}};
      out.Add("dlbench_run_cells_total", "Cells planned in the active run", run_label,
              static_cast<double>(p.cells_total));
      out.Add("dlbench_run_cells_done", "Cells finished in the active run", run_label,
              static_cast<double>(p.cells_done));
      out.Add("dlbench_run_progress_ratio", "Finished over planned cells of the active run", run_label,
              p.cells_total > 0 ? static_cast<double>(p.cells_done) / static_cast<double>(p.cells_total) : 0);
      out.Add("dlbench_run_started_timestamp_seconds", "When the active run started (Unix time)", run_label,
              static_cast<double>(p.started_wall_ns) * 1e-9);
      out.Add("dlbench_run_updated_timestamp_seconds",
              "When the active run last reported progress (Unix time)", run_label,
              static_cast<double>(p.updated_wall_ns) * 1e-9);
      out.Add("dlbench_run_current_cell_info", "The cell the active run is measuring (value 1)",
              {{"run_id", std::to_string(p.run_id)}, {"cell", p.current_cell}}, 1);
    }
  }
  return out.Text();
}

Result<ExpositionInput> CollectLatestCells(store::ResultStore& store) { return Collect(store, std::nullopt); }

Result<ExpositionInput> CollectRunCells(store::ResultStore& store, std::int64_t run_id) {
  auto run = store.GetRun(run_id);
  if (!run.ok()) return run.error();
  return Collect(store, run_id);
}

}  // namespace dlbench::report

#include "config/load_rules.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "config/registry.h"

namespace dlbench::config {
namespace {

struct KeyRule {
  const char* key;
  std::vector<std::string> scenarios;  // empty: every scenario
};

const std::vector<KeyRule>& KeyRules() {
  static const std::vector<KeyRule> rules = {
      {"target_qps", {"server"}},
      {"latency_bound_ms", {"server"}},
      {"peak_max_probes", {"server"}},
      {"peak_resolution", {"server"}},
      {"peak_max_time_s", {"server"}},
      {"peak_min_probe_s", {"server"}},
      {"peak_confirm_s", {"server"}},
      {"latency_percentile", {"single_stream", "multi_stream", "server"}},
      {"samples_per_query", {"multi_stream"}},
      {"query_interval_ms", {"multi_stream"}},
      {"max_batch", {"server"}},
      {"batch_timeout_us", {"server"}},
      {"streams", {"server"}},
      {"offline_samples", {"offline"}},
      {"min_queries", {}},
      {"early_stopping_confidence", {}},
      {"sample_library_size", {}},
      {"input_residency", {}},
      {"service_us", {}},
      {"service_per_sample_us", {}},
      {"serve_after_stop_us", {"server"}},
  };
  return rules;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i > 0 ? sep : "") + parts[i];
  return out;
}

std::string Text(const Value& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The mark of `key` among a mapping's keys.
std::optional<YAML::Mark> KeyMark(const YAML::Node& map, const std::string& key) {
  if (!map.IsMap()) return std::nullopt;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node k = it->first;
    if (k.IsScalar() && k.Scalar() == key) return k.Mark();
  }
  return std::nullopt;
}

// Whether every scalar key of an include entry has this cell's value, so the cell may be the entry's.
bool EntryFitsCell(const YAML::Node& entry, const Combination& cell) {
  if (!entry.IsMap()) return false;
  for (auto it = entry.begin(); it != entry.end(); ++it) {
    if (!it->first.IsScalar() || !it->second.IsScalar()) continue;
    const auto value = cell.find(it->first.Scalar());
    if (value == cell.end()) return false;
    if (Text(value->second) == it->second.Scalar()) continue;
    double number = 0;  // 256 against 256.0, say
    if (!value->second.is_number() || !YAML::convert<double>::decode(it->second, number) ||
        number != value->second.get<double>()) {
      return false;
    }
  }
  return true;
}

// Where `key` of this cell is written: the first include entry that sets it and whose other scalar
// keys all have this cell's values; else the first that sets it (and, when the entry names a load,
// names this cell's); else the matrix axis; else the start of the file.
YAML::Mark Locate(const YAML::Node& root, const Combination& cell, const std::string& key) {
  const YAML::Node include = root.IsMap() ? root["include"] : YAML::Node();
  if (include && include.IsSequence()) {
    for (const YAML::Node& entry : include) {
      if (auto mark = KeyMark(entry, key); mark && EntryFitsCell(entry, cell)) return *mark;
    }
    const auto load = cell.find("load");
    for (const YAML::Node& entry : include) {
      auto mark = KeyMark(entry, key);
      if (!mark) continue;
      const YAML::Node entry_load = entry["load"];
      if (load != cell.end() && entry_load && entry_load.IsScalar() &&
          entry_load.Scalar() != Text(load->second)) {
        continue;
      }
      return *mark;
    }
  }
  if (root.IsMap()) {
    if (auto mark = KeyMark(root["matrix"], key)) return *mark;
  }
  return YAML::Mark();
}

std::string CellKeyText(const Combination& cell) {
  std::string key;
  for (const auto& [name, value] : cell) key += (key.empty() ? "" : ",") + name + "=" + FormatValue(value);
  return key;
}

}  // namespace

std::vector<LoadRuleViolation> CheckLoadCell(const Combination& cell) {
  std::vector<LoadRuleViolation> out;
  const auto load_it = cell.find("load");
  const bool has_load = load_it != cell.end() && !load_it->second.is_null();
  if (!has_load) {
    for (const KeyRule& rule : KeyRules()) {
      if (cell.count(rule.key)) {
        out.push_back({rule.key, "applies only with load (this cell has none: it runs steps back to back)"});
      }
    }
    return out;
  }
  const std::string load = Text(load_it->second);
  const auto scenario = cell.find("scenario");
  if (scenario == cell.end()) {
    out.push_back({"load", "needs scenario: infer (this cell's scenario is the default, train)"});
  } else if (Text(scenario->second) != "infer") {
    out.push_back({"load", "needs scenario: infer (this cell's scenario is " + Text(scenario->second) + ")"});
  }
  for (const KeyRule& rule : KeyRules()) {
    if (!cell.count(rule.key) || rule.scenarios.empty()) continue;
    if (std::find(rule.scenarios.begin(), rule.scenarios.end(), load) != rule.scenarios.end()) continue;
    out.push_back({rule.key, "applies only with load: " + Join(rule.scenarios, ", ") +
                                 " (this cell's load is " + load + ")"});
  }
  if (load == "server" && !cell.count("target_qps")) {
    out.push_back({"load", "server needs target_qps (a rate in queries/s, or max to search for the peak)"});
  }
  const auto qps = cell.find("target_qps");
  if (load == "server" && qps != cell.end() && qps->second == "max" && !cell.count("latency_bound_ms")) {
    out.push_back(
        {"target_qps", "max needs latency_bound_ms (the bound the peak's latency must stay within)"});
  }
  if (load == "server" && (qps == cell.end() || qps->second != "max")) {
    for (const char* key :
         {"peak_max_probes", "peak_resolution", "peak_max_time_s", "peak_min_probe_s", "peak_confirm_s"}) {
      if (cell.count(key)) out.push_back({key, "applies only with target_qps: max (the peak search)"});
    }
  }
  return out;
}

std::vector<LoadRuleViolation> CheckConvergeCell(const Combination& cell) {
  static constexpr const char* kConvergeKeys[] = {"target_accuracy", "target_loss",      "eval_every",
                                                  "max_epochs",      "max_train_time_s", "dataset_dir",
                                                  "train_samples",   "eval_samples",     "eval_precisions"};
  std::vector<LoadRuleViolation> out;
  const auto scenario = cell.find("scenario");
  const bool converge = scenario != cell.end() && Text(scenario->second) == "converge";
  if (!converge) {
    const std::string what = scenario == cell.end() ? "the default, train" : Text(scenario->second);
    for (const char* key : kConvergeKeys) {
      if (cell.count(key))
        out.push_back({key, "applies only with scenario: converge (this cell's is " + what + ")"});
    }
    return out;
  }
  const bool accuracy = cell.count("target_accuracy") > 0, loss = cell.count("target_loss") > 0;
  if (!accuracy && !loss) {
    out.push_back({"scenario", "converge needs target_accuracy or target_loss (what quality ends training)"});
  }
  if (accuracy && loss) {
    out.push_back({"target_loss", "converge takes one target: target_accuracy or target_loss, not both"});
  }
  if (cell.count("data")) {
    out.push_back({"data", "does not apply with scenario: converge (it reads its own dataset: dataset_dir)"});
  }
  return out;
}

std::vector<LoadRuleViolation> CheckAgreementCell(const Combination& cell) {
  std::vector<LoadRuleViolation> out;
  const auto scenario = cell.find("scenario");
  const auto samples = cell.find("reference_samples");
  for (const char* key : {"min_agreement", "max_abs_diff", "max_mean_abs_diff"}) {
    if (!cell.count(key)) continue;
    if (scenario == cell.end() || Text(scenario->second) != "infer") {
      const std::string what = scenario == cell.end() ? "the default, train" : Text(scenario->second);
      out.push_back({key,
                     "applies only with scenario: infer, whose evaluation outputs it checks (this "
                     "cell's is " +
                         what + ")"});
    } else if (samples != cell.end() && Text(samples->second) == "0") {
      out.push_back({key, "has nothing to check with reference_samples: 0 (no evaluation outputs)"});
    }
  }
  return out;
}

Status CheckLoadRules(const Matrix& matrix, const std::vector<Combination>& cells) {
  return ReportCellRules(matrix, cells, [](const Combination& cell) {
    std::vector<LoadRuleViolation> violations = CheckLoadCell(cell);
    for (LoadRuleViolation& v : CheckConvergeCell(cell)) violations.push_back(std::move(v));
    for (LoadRuleViolation& v : CheckAgreementCell(cell)) violations.push_back(std::move(v));
    return violations;
  });
}

std::string WhereInMatrix(const Matrix& matrix, const Combination& cell, const std::string& key) {
  YAML::Node root;
  try {
    root = YAML::Load(matrix.text);
  } catch (const YAML::Exception&) {
    root = YAML::Node();
  }
  const YAML::Mark mark = Locate(root, cell, key);
  return matrix.path + ":" + std::to_string(mark.is_null() ? 1 : mark.line + 1) + ":" +
         std::to_string(mark.is_null() ? 1 : mark.column + 1);
}

std::string WhereInMeasure(const Matrix& matrix, const std::string& key) {
  try {
    const YAML::Node root = YAML::Load(matrix.text);
    if (root.IsMap() && root["measure"] && root["measure"].IsMap()) {
      for (const auto& kv : root["measure"]) {
        if (kv.first.IsScalar() && kv.first.Scalar() == key) {
          const YAML::Mark mark = kv.first.Mark();
          return matrix.path + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
        }
      }
    }
  } catch (const YAML::Exception&) {
  }
  return matrix.path;
}

Status ReportCellRules(const Matrix& matrix, const std::vector<Combination>& cells,
                       const std::function<std::vector<LoadRuleViolation>(const Combination&)>& check) {
  std::vector<std::tuple<int, int, std::string>> errors;
  std::set<std::pair<std::string, std::string>> seen;  // (position, message) reported once
  std::optional<YAML::Node> root;
  for (const Combination& cell : cells) {
    for (const LoadRuleViolation& v : check(cell)) {
      if (!root) {
        try {
          root = YAML::Load(matrix.text);
        } catch (const YAML::Exception&) {
          root = YAML::Node();
        }
      }
      const YAML::Mark mark = Locate(*root, cell, v.key);
      const int line = mark.is_null() ? 1 : mark.line + 1;
      const int column = mark.is_null() ? 1 : mark.column + 1;
      const std::string where = std::to_string(line) + ":" + std::to_string(column);
      if (!seen.insert({where + v.key, v.message}).second) continue;
      errors.emplace_back(line, column,
                          matrix.path + ":" + where + ": error: " + v.key + ": " + v.message + " (cell '" +
                              CellKeyText(cell) + "')");
    }
  }
  if (errors.empty()) return Status::Ok();
  std::stable_sort(errors.begin(), errors.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  std::string message;
  for (const auto& e : errors) message += (message.empty() ? "" : "\n") + std::get<2>(e);
  return MakeError(ErrorKind::kInvalidInput, message);
}

}  // namespace dlbench::config

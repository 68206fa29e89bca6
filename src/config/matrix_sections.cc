// The matrix file's sections other than its axes and include/exclude entries (matrix.cc): the
// runner, the top-level scalars, measure and the keys a runner requires; and the YAML helpers every
// section's parser uses (matrix_parser.h).
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/matrix_parser.h"
#include "config/registry.h"

namespace dlbench::config::internal {
namespace {

std::string MarkText(const YAML::Mark& mark) {
  return std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

}  // namespace

std::optional<YAML::Mark> FirstNonUtf8Scalar(const YAML::Node& node) {
  if (node.IsScalar()) {
    if (ValidUtf8Prefix(node.Scalar()) != node.Scalar().size()) return node.Mark();
    return std::nullopt;
  }
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) {
      if (auto bad = FirstNonUtf8Scalar(item)) return bad;
    }
  } else if (node.IsMap()) {
    for (const auto& pair : node) {
      if (auto bad = FirstNonUtf8Scalar(pair.first)) return bad;
      if (auto bad = FirstNonUtf8Scalar(pair.second)) return bad;
    }
  }
  return std::nullopt;
}

YAML::Mark MarkOr(const YAML::Node& node, const YAML::Mark& fallback) {
  if (!node.IsDefined() || node.IsNull() || node.Mark().is_null()) return fallback;
  return node.Mark();
}

std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return "'" + node.Scalar() + "'";
    case YAML::NodeType::Sequence:
      return node.size() == 0 ? "an empty list" : "a list";
    case YAML::NodeType::Map:
      return node.size() == 0 ? "an empty mapping" : "a mapping";
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      break;
  }
  return "null";
}

std::string UnknownKeyMessage(const std::string& key, const std::vector<std::string>& candidates) {
  std::string message = "unknown key '" + key + "'";
  if (auto near = NearestKey(key, candidates)) message += " (did you mean '" + *near + "'?)";
  return message;
}

std::vector<Pair> Pairs(const YAML::Node& map, const std::string& context, Diagnostics& diag) {
  std::vector<Pair> pairs;
  std::map<std::string, YAML::Mark> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    // By value: the iterator hands out a temporary pair, so a reference would dangle.
    const YAML::Node key = it->first;
    const YAML::Node value = it->second;
    if (!key.IsScalar()) {
      diag.Add(key.Mark(), context, "expected a key name (got " + Describe(key) + ")");
      continue;
    }
    auto [where, inserted] = seen.emplace(key.Scalar(), key.Mark());
    if (!inserted) {
      diag.Add(key.Mark(), context,
               "duplicate key '" + key.Scalar() + "' (first at " + MarkText(where->second) + ")");
      continue;
    }
    pairs.push_back({key.Scalar(), key, value});
  }
  return pairs;
}

Value PassThroughValue(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  if (node.Tag() == "?") {
    std::int64_t i = 0;
    const char* end = text.data() + text.size();
    auto ri = std::from_chars(text.data(), end, i);
    if (!text.empty() && ri.ec == std::errc() && ri.ptr == end) return Value(i);
    double d = 0;
    auto rd = std::from_chars(text.data(), end, d);
    if (!text.empty() && rd.ec == std::errc() && rd.ptr == end && std::isfinite(d)) return Value(d);
    if (text == "true" || text == "false") return Value(text == "true");
  }
  return Value(text);
}

bool AssignMeasure(MeasureSettings& m, const std::string& name, const Value& v) {
  if (name == "min_steps") {
    m.min_steps = v.get<std::int64_t>();
  } else if (name == "max_steps") {
    m.max_steps = v.get<std::int64_t>();
  } else if (name == "min_time_s") {
    m.min_time_s = v.get<double>();
  } else if (name == "max_time_s") {
    m.max_time_s = v.get<double>();
  } else if (name == "target_rel_ci") {
    m.target_rel_ci = v.get<double>();
  } else if (name == "ci_level") {
    m.ci_level = v.get<double>();
  } else if (name == "min_warmup_steps") {
    m.min_warmup_steps = v.get<std::int64_t>();
  } else if (name == "idle_baseline_s") {
    m.idle_baseline_s = v.get<double>();
  } else if (name == "sample_interval_ms") {
    m.sample_interval_ms = v.get<double>();
  } else if (name == "retry_disturbed") {
    m.retry_disturbed = static_cast<int>(v.get<std::int64_t>());
  } else {
    return false;
  }
  return true;
}

void MatrixParser::ParseRunner(const Pair& pair) {
  const YAML::Node& node = pair.value;
  const ParamSpec& spec = *FindParam("runner", ParamSection::kTopLevel);
  const YAML::Mark where = MarkOr(node, pair.key_node.Mark());
  if (node.IsNull()) return;  // `runner: null` is YAML's null: the null runner, the default.
  if (node.IsScalar() && (node.Scalar() == "null" || node.Scalar() == "torch")) {
    matrix_.runner.name = node.Scalar();
    return;
  }
  if (node.IsMap()) {
    bool ok = true;
    YAML::Node command;
    bool has_command = false;
    for (const Pair& p : Pairs(node, "runner", diag_)) {
      if (p.key == "command") {
        command = p.value;
        has_command = true;
      } else {
        diag_.Add(p.key_node.Mark(), "runner", UnknownKeyMessage(p.key, {"command"}));
        ok = false;
      }
    }
    if (!has_command) {
      diag_.Add(where, "runner", "expected a mapping {command: [argv...]} (got no 'command')");
      ok = false;
    } else if (!command.IsSequence() || command.size() == 0) {
      diag_.Add(MarkOr(command, where), "runner.command",
                "expected a non-empty list of program and arguments, e.g. [python3, bench.py] (got " +
                    Describe(command) + ")");
      ok = false;
    } else {
      for (const YAML::Node& arg : command) {
        if (!arg.IsScalar()) {
          diag_.Add(MarkOr(arg, where), "runner.command",
                    "expected a string argument (got " + Describe(arg) + ")");
          ok = false;
          continue;
        }
        matrix_.runner.command.push_back(arg.Scalar());
      }
    }
    matrix_.runner.name = "command";
    if (!ok) runner_valid_ = false;
    return;
  }
  diag_.Add(where, "runner", "expected " + DescribeExpected(spec) + " (got " + Describe(node) + ")");
  runner_valid_ = false;
}

void MatrixParser::ParseTopScalar(const Pair& pair) {
  const ParamSpec& spec = *FindParam(pair.key, ParamSection::kTopLevel);
  const YAML::Mark where = MarkOr(pair.value, pair.key_node.Mark());
  if (!pair.value.IsScalar()) {
    diag_.Add(where, pair.key, "expected " + DescribeExpected(spec) + " (got " + Describe(pair.value) + ")");
    return;
  }
  Result<Value> value = ParseParamText(spec, pair.value.Scalar());
  if (!value.ok()) {
    diag_.Add(where, pair.key, value.error().message);
    return;
  }
  const Value& v = *value;
  if (pair.key == "name") {
    matrix_.name = v.get<std::string>();
  } else if (pair.key == "repetitions") {
    // The registry bounds it (at most kMaxCells), so it fits an int.
    matrix_.repetitions = static_cast<int>(v.get<std::int64_t>());
  } else if (pair.key == "seed") {
    matrix_.seed = static_cast<std::uint64_t>(v.get<std::int64_t>());
  } else if (pair.key == "timeout_s") {
    matrix_.timeout_s = v.get<double>();
  } else if (pair.key == "ordering") {
    matrix_.ordering = v.get<std::string>() == "interleaved" ? Ordering::kInterleaved : Ordering::kGrouped;
  } else if (pair.key == "order_seed") {
    matrix_.order_seed = static_cast<std::uint64_t>(v.get<std::int64_t>());
  } else {
    diag_.Add(where, pair.key, "registry key without a Matrix field (a dlbench bug)");
  }
}

void MatrixParser::ParseMeasure(const Pair& pair) {
  const YAML::Node& node = pair.value;
  if (!node.IsMap()) {
    diag_.Add(MarkOr(node, pair.key_node.Mark()), "measure",
              "expected a mapping of measurement settings (got " + Describe(node) + ")");
    return;
  }
  std::vector<std::string> names;
  for (const ParamSpec& spec : Registry()) {
    if (spec.section == ParamSection::kMeasure) names.push_back(spec.name);
  }
  std::map<std::string, YAML::Mark> where;
  for (const Pair& p : Pairs(node, "measure", diag_)) {
    const ParamSpec* spec = FindParam(p.key, ParamSection::kMeasure);
    if (spec == nullptr) {
      diag_.Add(p.key_node.Mark(), "measure", UnknownKeyMessage(p.key, names));
      continue;
    }
    const std::string path = "measure." + p.key;
    const YAML::Mark mark = MarkOr(p.value, p.key_node.Mark());
    if (!p.value.IsScalar()) {
      diag_.Add(mark, path, "expected " + DescribeExpected(*spec) + " (got " + Describe(p.value) + ")");
      continue;
    }
    Result<Value> value = ParseParamText(*spec, p.value.Scalar());
    if (!value.ok()) {
      diag_.Add(mark, path, value.error().message);
      continue;
    }
    if (!AssignMeasure(matrix_.measure, p.key, *value)) {
      diag_.Add(mark, path, "registry key without a MeasureSettings field (a dlbench bug)");
      continue;
    }
    where[p.key] = mark;
  }
  // A bound pair is reported at the key the user wrote (the upper one when both were written).
  auto report_at = [&](const std::string& upper, const std::string& lower) {
    if (where.count(upper)) return std::make_pair(where.at(upper), upper);
    if (where.count(lower)) return std::make_pair(where.at(lower), lower);
    return std::make_pair(pair.key_node.Mark(), upper);
  };
  const MeasureSettings& m = matrix_.measure;
  if (m.min_steps > m.max_steps) {
    auto [mark, key] = report_at("max_steps", "min_steps");
    diag_.Add(mark, "measure." + key,
              "expected min_steps <= max_steps (got min_steps " + std::to_string(m.min_steps) +
                  ", max_steps " + std::to_string(m.max_steps) + ")");
  }
  if (m.min_time_s > m.max_time_s) {
    auto [mark, key] = report_at("max_time_s", "min_time_s");
    diag_.Add(mark, "measure." + key,
              "expected min_time_s <= max_time_s (got min_time_s " + FormatValue(Value(m.min_time_s)) +
                  ", max_time_s " + FormatValue(Value(m.max_time_s)) + ")");
  }
}

void MatrixParser::CheckRequired(const Pair& matrix_pair) {
  if (!runner_valid_) return;
  for (const ParamSpec* spec : CellParamsForRunner(RunnerName())) {
    if (spec->required_with.empty() || spec->required_with != RunnerName()) continue;
    if (axis_names_.count(spec->name)) continue;
    bool in_include = std::any_of(matrix_.include.begin(), matrix_.include.end(),
                                  [&](const Combination& c) { return c.count(spec->name) > 0; });
    if (in_include) continue;
    diag_.Add(matrix_pair.key_node.Mark(), "matrix",
              "'" + spec->name + "' is required with runner " + RunnerName() + " (add it as an axis)");
  }
}

}  // namespace dlbench::config::internal

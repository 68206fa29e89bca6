#include "plan/plan.h"

#include <algorithm>
#include <set>
#include <utility>

#include "config/load_rules.h"
#include "config/registry.h"

namespace dlbench::plan {
namespace {

using config::Combination;
using config::Value;

constexpr std::uint64_t kFnvOffset = 14695981039346656037ull;
constexpr std::uint64_t kFnvPrime = 1099511628211ull;
constexpr std::uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

std::uint64_t Fnv1a64(const std::string& text) {
  std::uint64_t h = kFnvOffset;
  for (unsigned char c : text) {
    h ^= c;
    h *= kFnvPrime;
  }
  return h;
}

// The SplitMix64 finaliser of x + gamma: a bijection that spreads every input bit over the output.
std::uint64_t SplitMix64(std::uint64_t x) {
  std::uint64_t z = x + kGoldenGamma;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The SplitMix64 generator. Written out (not std::mt19937 + std::uniform_int_distribution, whose
// output differs between standard libraries) so an order seed means the same order everywhere.
class SplitMixStream {
 public:
  explicit SplitMixStream(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = state_ += kGoldenGamma;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), n > 0: draws below 2^64 mod n are rejected so no index is favoured.
  std::uint64_t Below(std::uint64_t n) {
    const std::uint64_t threshold = (0 - n) % n;
    while (true) {
      std::uint64_t r = Next();
      if (r >= threshold) return r % n;
    }
  }

 private:
  std::uint64_t state_;
};

bool Matches(const Combination& combination, const Combination& entry) {
  for (const auto& [name, value] : entry) {
    auto it = combination.find(name);
    if (it == combination.end() || it->second != value) return false;
  }
  return true;
}

// Registry defaults for every parameter of the runner's scope that has one and is unset;
// default_from parameters copy their source's (possibly just filled) value.
void FillDefaults(const std::string& runner, Combination& params) {
  const std::vector<const config::ParamSpec*> specs = config::CellParamsForRunner(runner);
  for (const config::ParamSpec* spec : specs) {
    if (spec->default_value && !params.count(spec->name)) params.emplace(spec->name, *spec->default_value);
  }
  for (const config::ParamSpec* spec : specs) {
    if (spec->default_from.empty() || params.count(spec->name)) continue;
    auto source = params.find(spec->default_from);
    if (source != params.end()) params.emplace(spec->name, source->second);
  }
}

// Whether `value` is what the registry would have filled in for `name` in `params`.
bool IsDefault(const std::string& name, const Value& value, const Combination& params) {
  const config::ParamSpec* spec = config::FindParam(name, config::ParamSection::kCell);
  if (spec == nullptr) return false;
  if (spec->default_value) return *spec->default_value == value;
  if (!spec->default_from.empty()) {
    auto source = params.find(spec->default_from);
    return source != params.end() && source->second == value;
  }
  return false;
}

std::string LabelPiece(const std::string& name, const Value& value) {
  const config::ParamSpec* spec = config::FindParam(name, config::ParamSection::kCell);
  const std::string text = config::FormatValue(value);
  if (spec == nullptr || spec->label.empty()) return name + "=" + text;
  if (spec->label == "=") return text;
  return spec->label + "=" + text;
}

// Parameter names in label order: the registry's, then unregistered (pass-through) names sorted.
std::vector<std::string> LabelOrder(const std::set<std::string>& names) {
  std::vector<std::string> order;
  for (const config::ParamSpec& spec : config::Registry()) {
    if (spec.section == config::ParamSection::kCell && names.count(spec.name)) order.push_back(spec.name);
  }
  for (const std::string& name : names) {
    if (config::FindParam(name, config::ParamSection::kCell) == nullptr) order.push_back(name);
  }
  return order;
}

// A cell's label shows, in registry order: the model; every parameter that is a matrix axis of
// several values; and any other parameter that varies across the plan where this cell's value
// is not the default (so an include that sets setup_ms on one cell labels that cell only). A
// plan of one cell shows its non-default parameters.
std::vector<std::string> Labels(const std::vector<Combination>& cells, const config::Matrix& matrix) {
  std::set<std::string> all_names;
  for (const Combination& c : cells) {
    for (const auto& entry : c) all_names.insert(entry.first);
  }
  std::set<std::string> multi_axes;
  for (const config::Axis& axis : matrix.axes) {
    if (axis.values.size() > 1) multi_axes.insert(axis.name);
  }
  std::set<std::string> varying;
  for (const std::string& name : all_names) {
    const Combination& first = cells.front();
    auto first_it = first.find(name);
    for (const Combination& c : cells) {
      auto it = c.find(name);
      bool same =
          (it == c.end()) == (first_it == first.end()) && (it == c.end() || it->second == first_it->second);
      if (!same) {
        varying.insert(name);
        break;
      }
    }
  }
  const std::vector<std::string> order = LabelOrder(all_names);
  std::vector<std::string> labels;
  for (const Combination& c : cells) {
    std::string label;
    for (const std::string& name : order) {
      auto it = c.find(name);
      if (it == c.end()) continue;
      const bool non_default = !IsDefault(name, it->second, c);
      const bool shown = name == "model" || (varying.count(name) && multi_axes.count(name)) ||
                         (non_default && (varying.count(name) || cells.size() == 1));
      if (shown) label += (label.empty() ? "" : " ") + LabelPiece(name, it->second);
    }
    labels.push_back(label.empty() ? "defaults" : label);
  }
  return labels;
}

}  // namespace

std::string CellKey(const std::map<std::string, config::Value>& params) {
  std::string key;
  for (const auto& [name, value] : params) {
    if (!key.empty()) key += ",";
    key += name + "=" + config::FormatValue(value);
  }
  return key;
}

std::vector<config::Combination> ExpandCombinations(const config::Matrix& matrix) {
  std::vector<Combination> combinations;
  // With no axes the product is empty (not one empty combination), so that include entries
  // alone define the cells, as in GitHub Actions.
  bool any_empty = matrix.axes.empty();
  for (const config::Axis& axis : matrix.axes) any_empty = any_empty || axis.values.empty();
  if (!any_empty) {
    // An odometer over the axes: the last axis turns fastest.
    std::vector<std::size_t> digit(matrix.axes.size(), 0);
    bool done = false;
    while (!done) {
      Combination c;
      for (std::size_t a = 0; a < matrix.axes.size(); ++a) {
        c.emplace(matrix.axes[a].name, matrix.axes[a].values[digit[a]]);
      }
      bool excluded = std::any_of(matrix.exclude.begin(), matrix.exclude.end(),
                                  [&](const Combination& entry) { return Matches(c, entry); });
      if (!excluded) combinations.push_back(std::move(c));
      std::size_t a = matrix.axes.size();
      while (true) {
        if (a == 0) {
          done = true;  // every digit wrapped
          break;
        }
        --a;
        if (++digit[a] < matrix.axes[a].values.size()) break;
        digit[a] = 0;
      }
    }
  }

  std::set<std::string> axis_names;
  for (const config::Axis& axis : matrix.axes) axis_names.insert(axis.name);
  // Include entries extend only the product's combinations (those after exclude), never the
  // combinations earlier entries added: GitHub's example keeps {fruit: banana} and
  // {fruit: banana, animal: cat} apart.
  const std::size_t original = combinations.size();
  for (const Combination& entry : matrix.include) {
    bool extended = false;
    for (std::size_t i = 0; i < original; ++i) {
      Combination& c = combinations[i];
      bool keeps_axes = std::all_of(entry.begin(), entry.end(), [&](const auto& kv) {
        return !axis_names.count(kv.first) || c.at(kv.first) == kv.second;
      });
      if (!keeps_axes) continue;
      for (const auto& [name, value] : entry) c[name] = value;
      extended = true;
    }
    if (!extended) combinations.push_back(entry);
  }
  return combinations;
}

std::uint64_t DeriveCellSeed(std::uint64_t matrix_seed, const std::string& key, int repetition) {
  std::uint64_t mixed =
      SplitMix64(SplitMix64(matrix_seed ^ Fnv1a64(key)) ^ static_cast<std::uint64_t>(repetition));
  return mixed & 0x7FFFFFFFFFFFFFFFull;
}

Result<Plan> Expand(const config::Matrix& matrix) {
  const std::string& runner = matrix.runner.name;
  std::vector<Combination> cells;
  std::vector<std::string> keys;
  std::set<std::string> seen;
  const std::vector<Combination> combinations = ExpandCombinations(matrix);
  DLBENCH_RETURN_IF_ERROR(config::CheckLoadRules(matrix, combinations));
  for (Combination params : combinations) {
    FillDefaults(runner, params);
    for (const config::ParamSpec* spec : config::CellParamsForRunner(runner)) {
      if (spec->required_with == runner && !params.count(spec->name)) {
        return MakeError(ErrorKind::kInvalidInput, matrix.path + ": error: the cell '" + CellKey(params) +
                                                       "' has no '" + spec->name +
                                                       "', required with runner " + runner);
      }
    }
    std::string key = CellKey(params);
    // Identical parameters are one cell; running it twice is what repetitions are for.
    if (!seen.insert(key).second) continue;
    cells.push_back(std::move(params));
    keys.push_back(std::move(key));
  }
  if (cells.empty()) {
    return MakeError(ErrorKind::kInvalidInput,
                     matrix.path + ": error: nothing to run: exclude removed every combination");
  }
  if (matrix.repetitions < 1) {
    return MakeError(ErrorKind::kInvalidInput, matrix.path + ": error: repetitions must be >= 1");
  }
  const std::vector<std::string> labels = Labels(cells, matrix);

  // (cell, repetition) pairs in run order.
  std::vector<std::pair<std::size_t, int>> order;
  order.reserve(cells.size() * static_cast<std::size_t>(matrix.repetitions));
  if (matrix.ordering == config::Ordering::kGrouped) {
    for (std::size_t c = 0; c < cells.size(); ++c) {
      for (int r = 0; r < matrix.repetitions; ++r) order.emplace_back(c, r);
    }
  } else {
    // Rounds of repetitions, each a fresh Fisher-Yates shuffle from one stream, so drift over
    // the run spreads over all cells and every cell's repetitions are spread over the run.
    SplitMixStream stream(matrix.order_seed);
    std::vector<std::size_t> round(cells.size());
    for (int r = 0; r < matrix.repetitions; ++r) {
      for (std::size_t c = 0; c < cells.size(); ++c) round[c] = c;
      for (std::size_t i = round.size(); i > 1; --i) {
        std::swap(round[i - 1], round[stream.Below(i)]);
      }
      for (std::size_t c : round) order.emplace_back(c, r);
    }
  }

  Plan plan;
  plan.cells.reserve(order.size());
  for (const auto& [c, r] : order) {
    Cell cell;
    cell.index = static_cast<int>(plan.cells.size());
    cell.params = cells[c];
    cell.repetition = r;
    cell.key = keys[c];
    cell.seed = DeriveCellSeed(matrix.seed, cell.key, r);
    cell.id = cell.key + "#r" + std::to_string(r);
    cell.label = labels[c];
    plan.cells.push_back(std::move(cell));
  }
  return plan;
}

Estimate EstimateCell(const Cell& cell, const config::Matrix& matrix,
                      const std::map<std::string, double>& history_seconds_by_key) {
  if (auto it = history_seconds_by_key.find(cell.key); it != history_seconds_by_key.end()) {
    return Estimate{it->second, true};
  }
  // Without history: the least the measurement policy will take (min_time_s, or min_steps at a
  // declared step time when that is longer), capped by max_time_s, plus the idle baseline and
  // the declared setup time; never more than the cell's timeout.
  const config::MeasureSettings& m = matrix.measure;
  double measured_s = m.min_time_s;
  double setup_s = 0.0;
  if (matrix.runner.name == "null") {
    auto number = [&](const char* name, double fallback) {
      auto it = cell.params.find(name);
      return it != cell.params.end() && it->second.is_number() ? it->second.get<double>() : fallback;
    };
    const double step_s = number("step_ms", 0.0) / 1000.0;
    const double warmup_steps = number("warmup_steps", 0.0);  // names: the null runner's parameter
    const double steps_s = step_s * (static_cast<double>(m.min_warmup_steps + m.min_steps) +
                                     warmup_steps * (number("warmup_factor", 1.0) - 1.0));
    measured_s = std::max(measured_s, steps_s);
    setup_s = number("setup_ms", 0.0) / 1000.0;
  }
  double seconds = m.idle_baseline_s.value_or(0.0) + setup_s + std::min(measured_s, m.max_time_s);
  return Estimate{std::min(seconds, matrix.timeout_s), false};
}

}  // namespace dlbench::plan

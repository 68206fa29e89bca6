#include "plan/plan.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "common/hash.h"
#include "config/ddp_rules.h"
#include "config/host_allocator.h"
#include "config/load_rules.h"
#include "config/model_rules.h"
#include "config/registry.h"
#include "plan/ddp_references.h"
#include "plan/input_controls.h"

namespace dlbench::plan {
namespace {

using config::Combination;
using config::Value;

// The SplitMix64 generator (common/hash.h), not std::mt19937 + std::uniform_int_distribution,
// whose output differs between standard libraries: an order seed means the same order everywhere.
class SplitMixStream {
 public:
  explicit SplitMixStream(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() { return SplitMix64Next(state_); }
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
// `specs` is config::CellParamsForRunner(runner), computed once per plan.
void FillDefaults(const std::vector<const config::ParamSpec*>& specs, Combination& params) {
  for (const config::ParamSpec* spec : specs) {
    if (spec->default_value && !params.count(spec->name)) params.emplace(spec->name, *spec->default_value);
  }
  for (const config::ParamSpec* spec : specs) {
    if (spec->default_from.empty() || params.count(spec->name)) continue;
    auto source = params.find(spec->default_from);
    if (source != params.end()) params.emplace(spec->name, source->second);
  }
}

// A cpu cell's memory_cap above this host's physical memory cannot bind (the host runs out first):
// the warning that says so, or empty. A cuda cell's device memory is the runner's to know; it
// reports a cap above it in its effective cell (docs/memory.md).
std::string CapAboveHostMemory(const config::Matrix& matrix, const Combination& params) {
  const auto cap = params.find("memory_cap");
  if (cap == params.end() || !cap->second.is_string()) return "";
  const auto device = params.find("device");
  if (device != params.end() && device->second.is_string() && device->second.get<std::string>() != "cpu")
    return "";
  const std::optional<std::int64_t> bytes = config::ParseByteSize(cap->second.get<std::string>());
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (!bytes || pages <= 0 || page <= 0) return "";
  const double host = static_cast<double>(pages) * static_cast<double>(page);
  if (static_cast<double>(*bytes) <= host) return "";
  return fmt::format(
      "{}: warning: memory_cap {} is above this host's memory ({:.1f} GiB): the host runs out "
      "before the cap binds",
      config::WhereInMatrix(matrix, params, "memory_cap"), cap->second.get<std::string>(),
      host / (1024.0 * 1024.0 * 1024.0));
}

// A peak search whose time budget (peak_max_time_s, capped by max_time_s) holds fewer probes than
// a search from 100/s to a peak near 10,000/s needs (8 doublings, then bisection to
// peak_resolution) besides the peak's confirmation may end `max_time`, unconverged or
// unconfirmed: the warning that says so, or empty. Each probe is peak_min_probe_s (default 5 s,
// load::kDefaultPeakMinProbeNs) plus its 0.5 s warm-up (docs/load.md "Probe length"); the
// confirmation max(peak_min_probe_s, peak_confirm_s) (default 15 s) plus its warm-up, the one
// confirmation a peak that holds takes (docs/load.md "Confirmation").
std::string PeakBudgetTooShort(const config::Matrix& matrix, const Combination& params) {
  const auto qps = params.find("target_qps");
  if (qps == params.end() || !qps->second.is_string() || qps->second.get<std::string>() != "max") return "";
  auto number = [&](const char* key, double otherwise) {
    const auto it = params.find(key);
    return it != params.end() && it->second.is_number() ? it->second.get<double>() : otherwise;
  };
  const double budget =
      std::min(number("peak_max_time_s", matrix.measure.max_time_s), matrix.measure.max_time_s);
  const double min_probe_s = number("peak_min_probe_s", 5.0);
  const double per_probe = min_probe_s + 0.5;
  const double confirm_s = number("peak_confirm_s", 15.0);
  const double per_confirmation = confirm_s > 0 ? std::max(min_probe_s, confirm_s) + 0.5 : 0.0;
  const double resolution = number("peak_resolution", 0.05);
  const int needed = 8 + static_cast<int>(std::ceil(std::log2(1.0 / resolution)));
  const auto fits = static_cast<int>(std::floor(std::max(budget - per_confirmation, 0.0) / per_probe));
  if (fits >= needed) return "";
  return fmt::format(
      "{}: warning: target_qps: max: its {:g} s budget holds about {} probes of {:g} s "
      "(peak_min_probe_s and a 0.5 s warm-up each){}; a search from 100/s to a peak near 10,000/s at "
      "peak_resolution {:g} takes about {}: raise max_time_s (and peak_max_time_s) or lower "
      "peak_min_probe_s{}, else the search may end max_time, unconverged{}",
      config::WhereInMatrix(matrix, params, "target_qps"), budget, fits, per_probe,
      per_confirmation > 0
          ? fmt::format(" besides the peak's confirmation of {:g} s (peak_confirm_s)", per_confirmation)
          : "",
      resolution, needed, per_confirmation > 0 ? " or peak_confirm_s" : "",
      per_confirmation > 0 ? " or unconfirmed" : "");
}

// The boundary search's rules across keys (docs/memory.md "Boundary search"): at most one of
// batch_size, seq_len and image_size is `max` in a cell (a search has one axis), boundary_min is at
// most boundary_max; an error at the key's place. A boundary_* key in a cell without any `max` does
// nothing: the warning that says so (in `warning`), or empty.
Status CheckBoundaryKeys(const config::Matrix& matrix, const Combination& params, std::string& warning) {
  std::vector<std::string> searched;
  for (const char* key : config::kBoundarySearchKeys) {
    const auto it = params.find(key);
    if (it != params.end() && it->second.is_string() && it->second.get<std::string>() == "max")
      searched.emplace_back(key);
  }
  if (searched.size() > 1) {
    return MakeError(
        ErrorKind::kInvalidInput,
        fmt::format("{}: error: {}: max and {}: max in one cell: a boundary search has one axis; "
                    "search one key with the other fixed",
                    config::WhereInMatrix(matrix, params, searched[1]), searched[0], searched[1]));
  }
  const auto min = params.find("boundary_min");
  const auto max = params.find("boundary_max");
  if (min != params.end() && max != params.end() && min->second.is_number_integer() &&
      max->second.is_number_integer() && min->second.get<std::int64_t>() > max->second.get<std::int64_t>()) {
    return MakeError(ErrorKind::kInvalidInput,
                     fmt::format("{}: error: boundary_min {} is above boundary_max {}",
                                 config::WhereInMatrix(matrix, params, "boundary_min"),
                                 min->second.get<std::int64_t>(), max->second.get<std::int64_t>()));
  }
  if (!searched.empty()) return Status::Ok();
  for (const char* key :
       {"boundary_max_probes", "boundary_probe_steps", "boundary_min", "boundary_max",
        "boundary_probe_process", "boundary_guide", "boundary_resolution", "boundary_seed"}) {
    if (!params.count(key)) continue;
    warning = fmt::format(
        "{}: warning: {} applies to a boundary search (batch_size, seq_len or image_size: max) and this "
        "cell has none: it changes nothing",
        config::WhereInMatrix(matrix, params, key), key);
    break;
  }
  return Status::Ok();
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
  // What decides each name's place in a label, looked up once rather than per cell (a plan may
  // hold kMaxCells cells).
  struct Shown {
    std::string name;
    bool always;            // the model, or an axis of several values that varies
    bool when_not_default;  // varies across the plan (or the plan has one cell)
  };
  std::vector<Shown> order;
  for (std::string& name : LabelOrder(all_names)) {
    const bool varies = varying.count(name) > 0;
    const bool always = name == "model" || (varies && multi_axes.count(name) > 0);
    const bool when_not_default = varies || cells.size() == 1;
    if (always || when_not_default) order.push_back({std::move(name), always, when_not_default});
  }
  std::vector<std::string> labels;
  labels.reserve(cells.size());
  for (const Combination& c : cells) {
    std::string label;
    for (const Shown& shown : order) {
      auto it = c.find(shown.name);
      if (it == c.end()) continue;
      // Not always shown means shown when not the default (names that are neither are not here).
      if (!shown.always && IsDefault(shown.name, it->second, c)) continue;
      if (!label.empty()) label += ' ';
      label += LabelPiece(shown.name, it->second);
    }
    labels.push_back(label.empty() ? "defaults" : std::move(label));
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

std::uint64_t MaxCellCount(const config::Matrix& matrix) {
  constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();
  auto multiply = [](std::uint64_t a, std::uint64_t b) {
    return b != 0 && a > kSaturated / b ? kSaturated : a * b;
  };
  std::uint64_t product = matrix.axes.empty() ? 0 : 1;
  for (const config::Axis& axis : matrix.axes) product = multiply(product, axis.values.size());
  const std::uint64_t includes = matrix.include.size();
  const std::uint64_t combinations = product > kSaturated - includes ? kSaturated : product + includes;
  return multiply(combinations, static_cast<std::uint64_t>(std::max(matrix.repetitions, 1)));
}

namespace {

// "axes of 1000 x 1000 x 1000 values + 2 include entries, x 3 repetitions"
std::string CellCountOrigin(const config::Matrix& matrix) {
  std::string text;
  for (const config::Axis& axis : matrix.axes) {
    text += (text.empty() ? "" : " x ") + std::to_string(axis.values.size());
  }
  text = text.empty() ? "no axes" : "axes of " + text + " values";
  if (!matrix.include.empty()) text += " + " + std::to_string(matrix.include.size()) + " include entries";
  if (matrix.repetitions > 1) text += ", x " + std::to_string(matrix.repetitions) + " repetitions";
  return text;
}

}  // namespace

Result<Plan> Expand(const config::Matrix& matrix) {
  const std::uint64_t max_cells = MaxCellCount(matrix);
  if (max_cells > kMaxCells) {
    const std::string count = max_cells == std::numeric_limits<std::uint64_t>::max()
                                  ? "more than 18446744073709551615"
                                  : std::to_string(max_cells);
    return MakeError(ErrorKind::kInvalidInput,
                     matrix.path + ": error: the matrix expands to " + count + " cells (" +
                         CellCountOrigin(matrix) + "), more than the " + std::to_string(kMaxCells) +
                         " a plan may hold (docs/limits.md); split it into several matrix files");
  }
  const std::string& runner = matrix.runner.name;
  const std::vector<const config::ParamSpec*> runner_specs = config::CellParamsForRunner(runner);
  std::vector<Combination> cells;
  std::vector<std::string> keys;
  std::set<std::string> seen;
  std::vector<Combination> combinations = ExpandCombinations(matrix);
  DLBENCH_RETURN_IF_ERROR(config::CheckLoadRules(matrix, combinations));
  const bool torch = runner == "torch";
  if (torch) DLBENCH_RETURN_IF_ERROR(config::CheckTorchModelRules(matrix, combinations));
  if (torch) DLBENCH_RETURN_IF_ERROR(config::CheckDdpRules(matrix, combinations));
  std::vector<std::string> warnings;
  std::set<std::string> warned;  // (key, model) once
  for (Combination& params : combinations) {
    if (torch) {
      const Combination written = params;
      for (const std::string& key : config::DropUnusedSizeKeys(params)) {
        const std::string model = written.at("model").get<std::string>();
        if (!warned.insert(key + "\n" + model).second) continue;
        std::string reads;
        for (const auto& m : config::TorchModelTable()) {
          if (m.name != model) continue;
          for (const auto& k : m.size_keys) reads += (reads.empty() ? "" : ", ") + k;
        }
        warnings.push_back(
            config::WhereInMatrix(matrix, written, key) + ": warning: " + key + " does not apply to " +
            model + " (" +
            (reads.empty() ? std::string("its shapes are input_shapes") : "it reads " + reads) +
            "): left out of its cells, so they keep the identity of their twins in compare and trend");
      }
    }
    FillDefaults(runner_specs, params);
    if (torch) {
      // Caught at plan time rather than as an `unsupported` per cell; a warning, not an error, so
      // that a matrix crossing precisions with models still runs the cells that can. Once per
      // model, device and scenario.
      auto text = [&](const char* key) {
        const auto it = params.find(key);
        return it != params.end() && it->second.is_string() ? it->second.get<std::string>()
                                                            : std::string("-");
      };
      const std::string what =
          text("model") + " (device " + text("device") + ", scenario " + text("scenario") + ")";
      if (const std::string why = config::Int8Problem(params);
          !why.empty() && warned.insert("int8\n" + what).second)
        warnings.push_back(fmt::format("{}: warning: precision int8 of {} will end unsupported: {}",
                                       config::WhereInMatrix(matrix, params, "precision"), what, why));
    }
    if (std::string w = CapAboveHostMemory(matrix, params); !w.empty() && warned.insert(w).second) {
      warnings.push_back(std::move(w));
    }
    if (std::string w = PeakBudgetTooShort(matrix, params); !w.empty() && warned.insert(w).second) {
      warnings.push_back(std::move(w));
    }
    // A preloaded allocator must be installed here; a missing one would end every cell alike.
    if (const auto alloc = params.find(config::kHostAllocatorKey);
        alloc != params.end() && alloc->second.is_string()) {
      if (const std::string why = config::HostAllocatorProblem(alloc->second.get<std::string>());
          !why.empty()) {
        return MakeError(ErrorKind::kInvalidInput,
                         fmt::format("{}: error: host_allocator {}",
                                     config::WhereInMatrix(matrix, params, config::kHostAllocatorKey), why));
      }
    }
    std::string boundary_warning;
    DLBENCH_RETURN_IF_ERROR(CheckBoundaryKeys(matrix, params, boundary_warning));
    if (!boundary_warning.empty() && warned.insert(boundary_warning).second)
      warnings.push_back(std::move(boundary_warning));
    for (const config::ParamSpec* spec : runner_specs) {
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
  combinations = {};
  if (cells.empty()) {
    return MakeError(ErrorKind::kInvalidInput,
                     matrix.path + ": error: nothing to run: exclude removed every combination");
  }
  if (matrix.repetitions < 1) {
    return MakeError(ErrorKind::kInvalidInput, matrix.path + ": error: repetitions must be >= 1");
  }
  const std::size_t named = cells.size();
  // Only a runner whose registry scope has `data` reads it; to a command runner it is any key.
  const bool reads_data = std::any_of(runner_specs.begin(), runner_specs.end(),
                                      [](const config::ParamSpec* spec) { return spec->name == "data"; });
  InputControls controls;
  if (reads_data) {
    controls = FindOrAddInputControls(cells, keys);
  } else {
    controls.control_of.assign(cells.size(), -1);
    controls.pipeline_twin_of.assign(cells.size(), -1);
  }
  if (static_cast<std::uint64_t>(cells.size()) * static_cast<std::uint64_t>(matrix.repetitions) > kMaxCells) {
    return MakeError(ErrorKind::kInvalidInput,
                     matrix.path + ": error: the matrix expands to " + std::to_string(named) + " cells and " +
                         std::to_string(controls.added) +
                         " input-bound controls (data: device) per repetition, more than the " +
                         std::to_string(kMaxCells) + " cells a plan may hold (docs/limits.md)");
  }
  std::vector<std::string> control_ids(cells.size());
  std::vector<std::string> twin_ids(cells.size());
  for (std::size_t c = 0; c < cells.size(); ++c) {
    if (controls.control_of[c] >= 0) control_ids[c] = keys[static_cast<std::size_t>(controls.control_of[c])];
    if (controls.pipeline_twin_of[c] >= 0) {
      twin_ids[c] = keys[static_cast<std::size_t>(controls.pipeline_twin_of[c])];
    }
  }
  const DdpReferences ddp = FindDdpReferences(cells, keys);
  auto key_of = [&](long index) { return index < 0 ? std::string() : keys[static_cast<std::size_t>(index)]; };
  // What each combination needs to have run before it: its input control and pipeline_only twin,
  // and its ddp references.
  std::vector<std::vector<long>> needs(cells.size());
  bool any_needs = false;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    for (long n : {controls.control_of[c], controls.pipeline_twin_of[c], ddp.scaling_control_of[c],
                   ddp.compute_only_of[c], ddp.serial_of[c]}) {
      if (n >= 0) needs[c].push_back(n);
    }
    any_needs = any_needs || !needs[c].empty();
  }
  struct DdpIds {
    std::string scaling, compute_only, serial;
  };
  std::vector<DdpIds> ddp_ids(cells.size());
  for (std::size_t c = 0; c < cells.size(); ++c) {
    ddp_ids[c] = {key_of(ddp.scaling_control_of[c]), key_of(ddp.compute_only_of[c]),
                  key_of(ddp.serial_of[c])};
  }
  std::vector<std::string> labels = Labels(cells, matrix);

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

  if (any_needs) order = ControlsFirst(order, needs);

  Plan plan;
  // MSER-5 may cut up to half of the steps (its truncation point lies in the first half), so a
  // window that ran to max_time_s can keep as little as half of it: below min_time_s the cell then
  // ends invalid for too little data, which a plan can say before anything runs.
  const config::MeasureSettings& m = matrix.measure;
  if (m.min_time_s > 0 && m.max_time_s < 2 * m.min_time_s) {
    warnings.push_back(config::WhereInMeasure(matrix, "max_time_s") + ": warning: measure.max_time_s " +
                       config::FormatValue(config::Value(m.max_time_s)) + " is less than twice min_time_s " +
                       config::FormatValue(config::Value(m.min_time_s)) +
                       ": the warm-up cut (MSER-5) may drop up to half of a window that runs to max_time_s, "
                       "leaving less than min_time_s measured (the cell then ends invalid: too little data); "
                       "raise max_time_s to at least " +
                       config::FormatValue(config::Value(2 * m.min_time_s)) + " or lower min_time_s");
  }
  plan.warnings = std::move(warnings);
  plan.cells.reserve(order.size());
  for (const auto& [c, r] : order) {
    Cell cell;
    cell.index = static_cast<int>(plan.cells.size());
    // The last repetition to be placed takes the combination; the others copy it. Interleaved
    // order places repetitions round by round, grouped order in sequence: either way the one with
    // the highest number comes last.
    const bool last_use = r + 1 == matrix.repetitions;
    cell.params = last_use ? std::move(cells[c]) : cells[c];
    cell.repetition = r;
    cell.key = last_use ? std::move(keys[c]) : keys[c];
    cell.seed = DeriveCellSeed(matrix.seed, cell.key, r);
    cell.id = cell.key + "#r" + std::to_string(r);
    cell.label = last_use ? std::move(labels[c]) : labels[c];
    const std::string rep = "#r" + std::to_string(r);
    if (!control_ids[c].empty()) cell.input_control_id = control_ids[c] + rep;
    if (!twin_ids[c].empty()) cell.input_pipeline_id = twin_ids[c] + rep;
    if (!ddp_ids[c].scaling.empty()) cell.ddp_scaling_control_id = ddp_ids[c].scaling + rep;
    if (!ddp_ids[c].compute_only.empty()) cell.ddp_compute_only_id = ddp_ids[c].compute_only + rep;
    if (!ddp_ids[c].serial.empty()) cell.ddp_serial_id = ddp_ids[c].serial + rep;
    cell.added_as_control = c >= named;
    plan.cells.push_back(std::move(cell));
  }
  return plan;
}

}  // namespace dlbench::plan

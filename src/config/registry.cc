// The parameter registry (registry.h): the table, built once from its parts (registry_entries.h,
// registry_entries_*.cc), lookups by key and by runner, the names of its enums and the nearest key
// to a misspelt one. Formats, parsing and validation: registry_parse.cc; the terminal help and
// the Markdown reference: registry_render.cc.
#include "config/registry.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/registry_entries.h"

namespace dlbench::config {
namespace {

std::vector<ParamSpec> BuildRegistry() {
  std::vector<ParamSpec> r;
  internal::AppendRunEntries(r);
  internal::AppendCellEntries(r);
  internal::AppendLoadEntries(r);
  internal::AppendNullEntries(r);
  internal::AppendTorchEntries(r);
  return r;
}

}  // namespace

const std::vector<ParamSpec>& Registry() {
  static const std::vector<ParamSpec> registry = BuildRegistry();
  return registry;
}

const ParamSpec* FindParam(std::string_view name, ParamSection section) {
  // An index, built once: planning looks parameters up for every parameter of every cell.
  static const auto* const index = [] {
    auto* map = new std::map<std::pair<ParamSection, std::string_view>, const ParamSpec*>();
    for (const ParamSpec& spec : Registry())
      map->emplace(std::make_pair(spec.section, std::string_view(spec.name)), &spec);
    return map;
  }();
  auto it = index->find(std::make_pair(section, name));
  return it == index->end() ? nullptr : it->second;
}

bool ScopeValidForRunner(Scope scope, const std::string& runner_name) {
  switch (scope) {
    case Scope::kCore:
      return true;
    case Scope::kNull:
      return runner_name == "null";
    case Scope::kTorch:
      return runner_name == "torch";
    case Scope::kLoad:
      // A command runner serves queries through the Python client (docs/python-client.md) or its own
      // code; its load keys are validated here like the built-in runners'.
      return runner_name == "null" || runner_name == "torch" || runner_name == "command";
    case Scope::kInputSize:
      return runner_name == "null" || runner_name == "torch";
  }
  return false;
}

std::vector<const ParamSpec*> CellParamsForRunner(const std::string& runner_name) {
  std::vector<const ParamSpec*> out;
  for (const ParamSpec& spec : Registry()) {
    if (spec.section == ParamSection::kCell && ScopeValidForRunner(spec.scope, runner_name)) {
      out.push_back(&spec);
    }
  }
  return out;
}

const char* ParamTypeName(ParamType type) {
  switch (type) {
    case ParamType::kString:
      return "string";
    case ParamType::kInt:
      return "int";
    case ParamType::kNumber:
      return "number";
    case ParamType::kBool:
      return "bool";
    case ParamType::kEnum:
      return "enum";
    case ParamType::kMapping:
      return "mapping";
    case ParamType::kMappingList:
      return "list of mappings";
    case ParamType::kRunner:
      return "runner";
  }
  return "?";
}

const char* ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kCore:
      return "core";
    case Scope::kNull:
      return "null";
    case Scope::kTorch:
      return "torch";
    case Scope::kLoad:
      return "null, torch or command";
    case Scope::kInputSize:
      return "null or torch";
  }
  return "?";
}

std::optional<std::string> NearestKey(std::string_view key, const std::vector<std::string>& candidates) {
  // Optimal string alignment distance: Levenshtein plus adjacent transpositions ("bacth_size").
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      for (std::size_t j = 1; j <= b.size(); ++j) {
        std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.size()][b.size()];
  };
  std::optional<std::string> best;
  std::size_t best_distance = std::numeric_limits<std::size_t>::max();
  for (const std::string& candidate : candidates) {
    std::size_t dist = distance(key, candidate);
    if (dist < best_distance) {
      best_distance = dist;
      best = candidate;
    }
  }
  if (!best || best_distance > 2 || 2 * best_distance >= key.size()) return std::nullopt;
  return best;
}

}  // namespace dlbench::config

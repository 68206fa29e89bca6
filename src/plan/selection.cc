#include "plan/selection.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

#include "common/human_text.h"
#include "config/registry.h"

namespace dlbench::plan {

namespace {

std::string ValueText(const config::Value& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The parameter a --only name means: itself, or the cell parameter whose label abbreviation it
// is ("bs" is batch_size, as labels write "bs=32").
std::string CanonicalName(const std::string& name) {
  if (config::FindParam(name, config::ParamSection::kCell) != nullptr) return name;
  for (const config::ParamSpec& spec : config::Registry()) {
    if (spec.section == config::ParamSection::kCell && spec.label == name) return spec.name;
  }
  return name;
}

using Term = FilterTerm;

Result<std::vector<Term>> ParseFilter(const std::string& filter) {
  std::vector<Term> terms;
  std::stringstream ss(filter);
  std::string part;
  while (std::getline(ss, part, ',')) {
    if (part.empty()) continue;
    Term t;
    if (auto ne = part.find("!="); ne != std::string::npos) {
      t = {part.substr(0, ne), part.substr(ne + 2), Term::Op::kNotEquals};
    } else if (auto eq = part.find('='); eq != std::string::npos) {
      t = {part.substr(0, eq), part.substr(eq + 1), Term::Op::kEquals};
    } else {
      t.value = part;
    }
    if (t.op != Term::Op::kLabel && t.name.empty()) {
      return MakeError(ErrorKind::kInvalidInput, "--only term '" + part + "' has no parameter name");
    }
    if (t.op != Term::Op::kLabel) t.name = CanonicalName(t.name);
    terms.push_back(t);
  }
  if (terms.empty()) return MakeError(ErrorKind::kInvalidInput, "--only '" + filter + "' has no terms");
  return terms;
}

// A value given as text against a cell's typed value: numbers compare as numbers (step_ms=3
// matches 3.0), booleans as true/false, everything else as text.
bool SameValue(const config::Value& value, const std::string& text) {
  if (value.is_number()) {
    double given = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), given);
    if (ec == std::errc() && end == text.data() + text.size()) return value.get<double>() == given;
  }
  return ValueText(value) == text;
}

template <class Lookup>
bool MatchesTerms(const std::vector<Term>& terms, const std::string& label, const std::string& key,
                  const Lookup& find) {
  for (const auto& t : terms) {
    if (t.op == Term::Op::kLabel) {
      if (label.find(t.value) == std::string::npos && key.find(t.value) == std::string::npos) return false;
      continue;
    }
    const config::Value* value = find(t.name);
    const bool equal = value != nullptr && SameValue(*value, t.value);
    if ((t.op == Term::Op::kEquals) != equal) return false;
  }
  return true;
}

bool Matches(const Cell& cell, const std::vector<Term>& terms) {
  return MatchesTerms(terms, cell.label, cell.key, [&](const std::string& name) -> const config::Value* {
    auto it = cell.params.find(name);
    return it == cell.params.end() ? nullptr : &it->second;
  });
}

// A name no cell has is a mistake (a typo matches nothing, or everything under !=): an error that
// lists the names the cells have.
Status CheckTermNames(const std::set<std::string>& names, bool nothing_to_match,
                      const std::vector<Term>& terms, const std::string& filter) {
  for (const auto& t : terms) {
    if (t.op == Term::Op::kLabel || names.count(t.name) > 0 || nothing_to_match) continue;
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    return MakeError(ErrorKind::kInvalidInput, "--only '" + filter + "': no cell has a parameter '" + t.name +
                                                   "' (the cells have: " + known + ")");
  }
  return Status::Ok();
}

Status CheckNames(const std::vector<Cell>& cells, const std::vector<Term>& terms, const std::string& filter) {
  std::set<std::string> names;
  for (const auto& c : cells) {
    for (const auto& [name, value] : c.params) names.insert(name);
  }
  return CheckTermNames(names, cells.empty(), terms, filter);
}

}  // namespace

Result<std::vector<Cell>> FilterCells(const std::vector<Cell>& cells,
                                      const std::vector<std::string>& filters) {
  if (filters.empty()) return cells;
  std::vector<std::vector<Term>> parsed;
  for (const auto& f : filters) {
    auto terms = ParseFilter(f);
    if (!terms.ok()) return terms.error();
    if (Status named = CheckNames(cells, *terms, f); !named.ok()) return named.error();
    parsed.push_back(*terms);
  }
  std::vector<Cell> kept;
  for (const auto& c : cells) {
    for (const auto& terms : parsed) {
      if (Matches(c, terms)) {
        kept.push_back(c);
        break;
      }
    }
  }
  return kept;
}

Result<CellFilter> ParseCellFilter(const std::vector<std::string>& filters) {
  CellFilter filter;
  for (const auto& f : filters) {
    auto terms = ParseFilter(f);
    if (!terms.ok()) return terms.error();
    filter.texts.push_back(f);
    filter.any_of.push_back(std::move(terms).value());
  }
  return filter;
}

bool MatchesCellFilter(const CellFilter& filter, const nlohmann::json& params, const std::string& label,
                       const std::string& key) {
  if (filter.any_of.empty()) return true;
  auto find = [&](const std::string& name) -> const config::Value* {
    if (!params.is_object()) return nullptr;
    auto it = params.find(name);
    return it == params.end() ? nullptr : &*it;
  };
  for (const auto& terms : filter.any_of) {
    if (MatchesTerms(terms, label, key, find)) return true;
  }
  return false;
}

Status CheckCellFilterNames(const CellFilter& filter, const std::set<std::string>& names) {
  for (std::size_t i = 0; i < filter.any_of.size(); ++i) {
    DLBENCH_RETURN_IF_ERROR(CheckTermNames(names, names.empty(), filter.any_of[i], filter.texts[i]));
  }
  return Status::Ok();
}

namespace {

// A whole decimal number, nothing before or after it (no sign, no spaces).
std::optional<int> ParseCount(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

Result<Shard> ParseShard(const std::string& text) {
  auto invalid = [&](const std::string& why) -> Error {
    return MakeError(ErrorKind::kInvalidInput,
                     fmt::format("--shard '{}': {}; expected K/N, whole numbers with 1 <= K <= N "
                                 "(this process runs part K of N, e.g. --shard 1/2)",
                                 text, why));
  };
  const auto slash = text.find('/');
  if (slash == std::string::npos) return invalid("no '/'");
  const auto k = ParseCount(text.substr(0, slash));
  const auto n = ParseCount(text.substr(slash + 1));
  if (!k || !n) return invalid("K and N must be whole numbers");
  if (*n < 1) return invalid("N must be at least 1");
  if (*k < 1) return invalid("K counts from 1");
  if (*k > *n) return invalid("K is larger than N");
  return Shard{*k, *n};
}

std::string ShardText(const Shard& shard) { return fmt::format("{}/{}", shard.index, shard.count); }

std::vector<Cell> ShardCells(const std::vector<Cell>& cells, const Shard& shard) {
  DLBENCH_CHECK(shard.count >= 1 && shard.index >= 1 && shard.index <= shard.count,
                "a shard comes from ParseShard");
  std::vector<Cell> kept;
  const auto n = static_cast<std::size_t>(shard.count);
  for (std::size_t p = static_cast<std::size_t>(shard.index - 1); p < cells.size(); p += n) {
    kept.push_back(cells[p]);
  }
  return kept;
}

Result<Selection> NormalizeSelection(const Selection& selection) {
  Selection normalized = selection;
  if (!selection.shard.empty()) {
    auto shard = ParseShard(selection.shard);
    if (!shard.ok()) return shard.error();
    normalized.shard = ShardText(*shard);
  }
  return normalized;
}

std::string ShellWord(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-+=,./:@%") == std::string::npos) {
    return word;
  }
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string SelectionArgs(const Selection& selection) {
  std::vector<std::string> words;
  for (const auto& f : selection.only) words.push_back("--only " + ShellWord(f));
  if (!selection.shard.empty()) words.push_back("--shard " + ShellWord(selection.shard));
  for (const auto& a : selection.set) words.push_back("--set " + ShellWord(a));
  std::string args;
  for (const auto& w : words) args += (args.empty() ? "" : " ") + w;
  return args;
}

Result<Selection> ResumeSelection(std::int64_t run_id, const Selection& stored, const Selection& given) {
  if (given.empty() || stored.empty()) return given.empty() ? stored : given;
  // --only filters are ORed, so their order selects nothing different.
  auto sorted = [](std::vector<std::string> filters) {
    std::sort(filters.begin(), filters.end());
    return filters;
  };
  if (sorted(given.only) == sorted(stored.only) && given.shard == stored.shard && given.set == stored.set) {
    return given;
  }
  return MakeError(ErrorKind::kInvalidInput,
                   fmt::format("run {} was started with {}, but this resume asks for {}; give the same "
                               "--only, --shard and --set, or none of them to reuse the run's",
                               run_id, SelectionArgs(stored), SelectionArgs(given)));
}

std::vector<Cell> WithInputControls(const std::vector<Cell>& planned, std::vector<Cell> kept) {
  std::set<std::string> ids;
  std::set<std::string> needed;
  for (const Cell& c : kept) {
    ids.insert(c.id);
    if (!c.input_control_id.empty()) needed.insert(c.input_control_id);
    if (!c.ddp_scaling_control_id.empty()) needed.insert(c.ddp_scaling_control_id);
  }
  if (std::all_of(needed.begin(), needed.end(), [&](const std::string& id) { return ids.count(id) > 0; })) {
    return kept;
  }
  std::vector<Cell> out;
  for (const Cell& c : planned) {
    if (ids.count(c.id) || needed.count(c.id)) out.push_back(c);
  }
  return out;
}

Result<SelectedPlan> SelectPlan(const std::string& matrix_path, const Selection& selection) {
  std::optional<Shard> shard;
  if (!selection.shard.empty()) {
    auto parsed = ParseShard(selection.shard);
    if (!parsed.ok()) return parsed.error();
    shard = *parsed;
  }
  auto matrix = config::LoadMatrix(matrix_path);
  // Whatever stopped the file from becoming a matrix (missing, a directory, unreadable, invalid)
  // is the user's to fix, and its message already names the file.
  if (!matrix.ok()) return MakeError(ErrorKind::kInvalidInput, matrix.error().message);
  for (const std::string& assignment : selection.set)
    DLBENCH_RETURN_IF_ERROR(config::ApplySetting(*matrix, assignment));
  auto expanded = Expand(*matrix);
  if (!expanded.ok()) return expanded.error();
  auto cells = FilterCells(expanded->cells, selection.only);
  if (!cells.ok()) return cells.error();
  if (!selection.only.empty()) *cells = WithInputControls(expanded->cells, std::move(cells).value());
  SelectedPlan selected;
  selected.matrix = std::move(matrix).value();
  selected.planned = expanded->cells.size();
  selected.warnings = expanded->warnings;
  selected.matched = cells->size();
  selected.shard = shard;
  selected.cells = shard ? ShardCells(*cells, *shard) : std::move(cells).value();
  return selected;
}

bool IsMatrixDiagnostic(const Error& error, const std::string& matrix_path) {
  return error.kind == ErrorKind::kInvalidInput && error.message.rfind(matrix_path + ":", 0) == 0;
}

std::string EmptySelectionMessage(const SelectedPlan& selected, const std::string& matrix_path) {
  if (!selected.cells.empty()) return "";
  if (selected.matched == 0) {
    return fmt::format("--only matched none of the {} (see: dlbench plan {})",
                       CountNoun(static_cast<std::int64_t>(selected.planned), "cell"), matrix_path);
  }
  const std::string shard = ShardText(*selected.shard);
  return fmt::format(
      "--shard {} has no cells: the plan has {} cell{}{}, fewer than {} (use at most {} shards; "
      "see: dlbench plan {})",
      shard, selected.matched, selected.matched == 1 ? "" : "s",
      selected.matched < selected.planned ? " after --only" : "", selected.shard->index, selected.matched,
      matrix_path);
}

std::string ShardSummary(const SelectedPlan& selected) {
  if (!selected.shard) return "";
  return fmt::format(", shard {} of {}", ShardText(*selected.shard), selected.matched);
}

Status CheckResumedCells(const record::RunRecord& run, const std::set<std::string>& finished,
                         const SelectedPlan& selected) {
  std::set<std::string> ids;
  for (const auto& c : selected.cells) ids.insert(c.id);
  const bool same_count = static_cast<std::size_t>(run.total_cells) == selected.cells.size();
  const auto stray = std::find_if(finished.begin(), finished.end(),
                                  [&](const std::string& id) { return ids.count(id) == 0; });
  if (same_count && stray == finished.end()) return Status::Ok();
  const std::string kept = fmt::format(
      "{}{}", CountNoun(static_cast<std::int64_t>(selected.cells.size()), "cell"), ShardSummary(selected));
  return MakeError(
      ErrorKind::kInvalidInput,
      fmt::format(
          "run {} has {}, but this selection keeps {}{}; resume with the --only and "
          "--shard options run {} was started with",
          run.id, CountNoun(run.total_cells, "cell"), kept,
          stray == finished.end() ? "" : fmt::format(", not including its finished cell '{}'", *stray),
          run.id));
}

}  // namespace dlbench::plan

#include "cli/run_filter.h"

#include <cstdio>
#include <sstream>

#include "cli/commands.h"

namespace dlbench::cli {

namespace {

std::string ValueText(const config::Value& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

struct Term {
  std::string name;
  std::string value;
  enum class Op { kEquals, kNotEquals, kLabel } op = Op::kLabel;
};

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
    terms.push_back(t);
  }
  if (terms.empty()) return MakeError(ErrorKind::kInvalidInput, "--only '" + filter + "' has no terms");
  return terms;
}

bool Matches(const plan::Cell& cell, const std::vector<Term>& terms) {
  for (const auto& t : terms) {
    if (t.op == Term::Op::kLabel) {
      if (cell.label.find(t.value) == std::string::npos && cell.key.find(t.value) == std::string::npos) return false;
      continue;
    }
    auto it = cell.params.find(t.name);
    const bool equal = it != cell.params.end() && ValueText(it->second) == t.value;
    if ((t.op == Term::Op::kEquals) != equal) return false;
  }
  return true;
}

}  // namespace

Result<std::vector<plan::Cell>> FilterCells(const std::vector<plan::Cell>& cells,
                                            const std::vector<std::string>& filters) {
  if (filters.empty()) return cells;
  std::vector<std::vector<Term>> parsed;
  for (const auto& f : filters) {
    auto terms = ParseFilter(f);
    if (!terms.ok()) return terms.error();
    parsed.push_back(*terms);
  }
  std::vector<plan::Cell> kept;
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

Result<SelectedPlan> SelectPlan(const std::string& matrix_path, const std::vector<std::string>& filters,
                                int* exit_code) {
  auto matrix = config::LoadMatrix(matrix_path);
  if (!matrix.ok()) {
    std::fprintf(stderr, "%s\n", matrix.error().message.c_str());
    *exit_code = kExitUsage;
    return matrix.error();
  }
  auto expanded = plan::Expand(*matrix);
  if (!expanded.ok()) {
    *exit_code = ReportError(expanded.error());
    return expanded.error();
  }
  auto cells = FilterCells(expanded->cells, filters);
  if (!cells.ok()) {
    *exit_code = ReportError(cells.error());
    return cells.error();
  }
  SelectedPlan selected{std::move(matrix).value(), expanded->cells.size(), std::move(cells).value()};
  return selected;
}

}  // namespace dlbench::cli

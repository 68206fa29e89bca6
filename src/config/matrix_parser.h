// Internal to src/config: the matrix file's parser, shared by matrix.cc (the file as a whole, its
// axes and include/exclude entries; ParseMatrix, ApplySetting, LoadMatrix) and matrix_sections.cc
// (the runner, the top-level scalars, measure, the keys a runner requires, and the YAML helpers
// every section uses).
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/text.h"
#include "config/matrix.h"
#include "config/registry.h"

namespace dlbench::config::internal {

// The first scalar (a key or a value) of `node` whose text is not UTF-8, where it stands.
std::optional<YAML::Mark> FirstNonUtf8Scalar(const YAML::Node& node);

// Collects every problem found in a file so the user fixes them in one pass; rendered sorted by
// position as "FILE:LINE:COL: error: KEY: message".
class Diagnostics {
 public:
  explicit Diagnostics(std::string file) : file_(std::move(file)) {}

  void Add(const YAML::Mark& mark, const std::string& key, const std::string& message) {
    int line = mark.is_null() ? 1 : mark.line + 1;
    int column = mark.is_null() ? 1 : mark.column + 1;
    std::string text = file_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": error: ";
    if (!key.empty()) text += key + ": ";
    // Messages quote keys and values from the file, and whoever prints them prints to a terminal:
    // escape sequences in them are shown, not obeyed (TerminalSafe is idempotent, so a printer
    // that escapes again changes nothing).
    entries_.push_back({line, column, TerminalSafe(text + message)});
  }
  bool empty() const { return entries_.empty(); }

  Error ToError() const {
    std::vector<Entry> sorted = entries_;
    std::stable_sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    std::string message;
    for (const Entry& e : sorted) {
      if (!message.empty()) message += "\n";
      message += e.text;
    }
    return MakeError(ErrorKind::kInvalidInput, message);
  }

 private:
  struct Entry {
    int line;
    int column;
    std::string text;
  };
  std::string file_;
  std::vector<Entry> entries_;
};

// A node's position, or `fallback` where yaml-cpp has none: an empty value ("key:") is a null
// node positioned at whatever follows it, so messages point at its key instead.
YAML::Mark MarkOr(const YAML::Node& node, const YAML::Mark& fallback);

std::string Describe(const YAML::Node& node);

std::string UnknownKeyMessage(const std::string& key, const std::vector<std::string>& candidates);

struct Pair {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
};

// The pairs of a mapping in file order. yaml-cpp keeps duplicate keys; they are reported here and
// only the first is returned. `context` prefixes messages ("matrix", "include[2]"; "" at top).
std::vector<Pair> Pairs(const YAML::Node& map, const std::string& context, Diagnostics& diag);

// A scalar for a key the registry does not know (passed to a command runner): plain scalars are
// read as an integer, a number or a bool where they look like one; quoted ones stay strings.
Value PassThroughValue(const YAML::Node& node);

// Stores one measure: value in its MeasureSettings field; false for a registry key that has no
// field here (caught by config_test's every-key test).
bool AssignMeasure(MeasureSettings& m, const std::string& name, const Value& v);

// The parser of one matrix file: the file as a whole, its axes and include/exclude entries
// (matrix.cc), and its other sections: the runner, the top-level scalars, measure, and the keys a
// runner requires (matrix_sections.cc).
class MatrixParser {
 public:
  MatrixParser(const std::string& text, const std::string& path) : diag_(path) {
    matrix_.path = path;
    matrix_.text = text;
  }

  Result<Matrix> Parse();

 private:
  const std::string& RunnerName() const { return matrix_.runner.name; }

  // Where the second document begins: the line of the nearest '---' at or above its first node
  // and below the first document's first node; the node itself when there is none (a bare
  // document after '...'). An empty document has no node position: the search starts at the end.
  YAML::Mark DocumentStart(const YAML::Mark& first, const YAML::Mark& second) const;

  void ParseRunner(const Pair& pair);

  std::vector<std::string> CellNamesForRunner() const;

  // Checks that `key` may be a cell parameter with this runner; reports why not. Sets
  // `*spec_out` to the registry entry (nullptr for a pass-through key of a command runner).
  bool AcceptCellKey(const Pair& pair, const std::string& context, const ParamSpec** spec_out);

  // One scalar cell value, typed and validated by its registry entry (or passed through).
  std::optional<Value> CellValue(const ParamSpec* spec, const YAML::Node& node, const YAML::Mark& fallback,
                                 const std::string& path);

  void ParseAxes(const Pair& pair);

  void ParseEntries(const Pair& pair, bool is_exclude);

  // A top-level scalar key, typed by the registry and stored in its Matrix field.
  void ParseTopScalar(const Pair& pair);

  void ParseMeasure(const Pair& pair);

  // A parameter required with this runner must be an axis, or come with an include entry;
  // plan::Expand checks each cell, this reports the common omission at its place in the file.
  void CheckRequired(const Pair& matrix_pair);

  Diagnostics diag_;
  Matrix matrix_;
  bool runner_valid_ = true;
  std::set<std::string> axis_names_;
  std::map<std::string, const ParamSpec*> axis_specs_;
};

}  // namespace dlbench::config::internal

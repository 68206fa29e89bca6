#include "config/matrix.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "common/files.h"
#include "common/text.h"
#include "config/matrix_parser.h"
#include "config/registry.h"
#include "config/yaml_documents.h"

namespace dlbench::config {
namespace internal {

Result<Matrix> MatrixParser::Parse() {
  // YAML is Unicode text without control characters. Both are checked before yaml-cpp sees
  // the bytes: its LoadAll never returns on a NUL byte (found by fuzz_matrix), and every string
  // of a matrix ends up in JSON (the store, the progress file), which holds only UTF-8.
  const std::string& text = matrix_.text;
  const auto control = std::find_if(text.begin(), text.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return (b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f;
  });
  const std::size_t first_control = static_cast<std::size_t>(control - text.begin());
  const std::size_t valid = ValidUtf8Prefix(text);
  if (first_control < text.size() || valid < text.size()) {
    const std::size_t at = std::min(first_control, valid);
    YAML::Mark mark;
    mark.pos = static_cast<int>(at);
    mark.line =
        static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const std::size_t line_start = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
    mark.column = static_cast<int>(line_start == std::string::npos ? at : at - line_start - 1);
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[at]));
    diag_.Add(
        mark, "",
        at == first_control
            ? std::string("the file holds a control character (byte ") + byte + "), which YAML does not allow"
            : std::string("the file is not UTF-8 text (byte ") + byte + "); save it as UTF-8");
    return diag_.ToError();
  }
  YAML::Node root;
  try {
    // Two documents at most, so that a second one is an error rather than silently ignored
    // (YAML::Load reads the first only); not YAML::LoadAll, which can loop forever.
    const YamlDocuments documents = ScanYamlDocuments(matrix_.text, 2);
    if (documents.stuck_at) {
      diag_.Add(*documents.stuck_at, "", StuckParserMessage(matrix_.text, *documents.stuck_at));
      return diag_.ToError();
    }
    if (documents.first_nodes.size() > 1) {
      diag_.Add(DocumentStart(documents.first_nodes[0], documents.first_nodes[1]), "",
                "a second YAML document starts here; a matrix file holds one document (remove the '---' "
                "and merge the documents, or split them into files)");
      return diag_.ToError();
    }
    if (!documents.first_nodes.empty()) root = YAML::Load(matrix_.text);
  } catch (const YAML::Exception& e) {
    diag_.Add(e.mark, "", "YAML syntax error: " + e.msg);
    return diag_.ToError();
  }
  // An escape in a double-quoted string decodes past the text check above: yaml-cpp writes \N, \_,
  // \L and \P as single bytes that are not UTF-8 (found by fuzz_matrix).
  if (const std::optional<YAML::Mark> bad = FirstNonUtf8Scalar(root)) {
    diag_.Add(*bad, "",
              "this string's escape sequences decode to bytes that are not UTF-8 (yaml-cpp writes \\N, "
              "\\_, \\L and \\P as single bytes); write the character itself");
    return diag_.ToError();
  }
  const YAML::Mark start;  // 1:1
  if (root.IsNull()) {
    diag_.Add(start, "", "the file is empty; expected a mapping with at least 'matrix'");
    return diag_.ToError();
  }
  if (!root.IsMap()) {
    diag_.Add(root.Mark(), "", "expected a mapping of top-level keys (got " + Describe(root) + ")");
    return diag_.ToError();
  }

  std::map<std::string, Pair> top;
  std::vector<std::string> top_names;
  for (const ParamSpec& spec : Registry()) {
    if (spec.section == ParamSection::kTopLevel) top_names.push_back(spec.name);
  }
  for (Pair& pair : Pairs(root, "", diag_)) {
    if (!FindParam(pair.key, ParamSection::kTopLevel)) {
      diag_.Add(pair.key_node.Mark(), "", UnknownKeyMessage(pair.key, top_names));
      continue;
    }
    top.emplace(pair.key, std::move(pair));
  }

  // The runner decides which cell parameters are valid, and the axes decide what exclude
  // entries may name, so those come first whatever the file's order.
  if (auto it = top.find("runner"); it != top.end()) ParseRunner(it->second);
  if (auto it = top.find("matrix"); it != top.end()) {
    ParseAxes(it->second);
  } else {
    diag_.Add(start, "", "missing required key 'matrix' (the axes to run)");
  }
  for (auto& [name, pair] : top) {
    if (name == "exclude") {
      ParseEntries(pair, /*is_exclude=*/true);
    } else if (name == "include") {
      ParseEntries(pair, /*is_exclude=*/false);
    } else if (name == "measure") {
      ParseMeasure(pair);
    } else if (name != "runner" && name != "matrix") {
      ParseTopScalar(pair);
    }
  }
  if (top.count("matrix")) CheckRequired(top.at("matrix"));
  if (!diag_.empty()) return diag_.ToError();
  return std::move(matrix_);
}

YAML::Mark MatrixParser::DocumentStart(const YAML::Mark& first, const YAML::Mark& second) const {
  const std::string& text = matrix_.text;
  std::vector<std::size_t> line_starts = {0};
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' && i + 1 < text.size()) line_starts.push_back(i + 1);
  }
  auto is_marker = [&](std::size_t line) {
    const std::size_t begin = line_starts[line];
    if (text.compare(begin, 3, "---") != 0) return false;
    const char next = begin + 3 < text.size() ? text[begin + 3] : '\n';
    return next == ' ' || next == '\t' || next == '\n' || next == '\r';
  };
  const YAML::Mark& mark = second;
  std::size_t from = line_starts.size() - 1;
  if (!mark.is_null() && static_cast<std::size_t>(mark.line) < line_starts.size()) {
    from = static_cast<std::size_t>(mark.line);
  }
  const std::size_t floor = first.is_null() ? 0 : static_cast<std::size_t>(first.line);
  for (std::size_t line = from; line > floor; --line) {
    if (!is_marker(line)) continue;
    YAML::Mark at;
    at.pos = static_cast<int>(line_starts[line]);
    at.line = static_cast<int>(line);
    at.column = 0;
    return at;
  }
  return mark;
}

std::vector<std::string> MatrixParser::CellNamesForRunner() const {
  std::vector<std::string> names;
  for (const ParamSpec* spec : CellParamsForRunner(RunnerName())) names.push_back(spec->name);
  return names;
}

bool MatrixParser::AcceptCellKey(const Pair& pair, const std::string& context, const ParamSpec** spec_out) {
  const ParamSpec* spec = FindParam(pair.key, ParamSection::kCell);
  *spec_out = spec;
  if (spec == nullptr) {
    if (RunnerName() == "command") return true;
    diag_.Add(pair.key_node.Mark(), context, UnknownKeyMessage(pair.key, CellNamesForRunner()));
    return false;
  }
  if (runner_valid_ && !ScopeValidForRunner(spec->scope, RunnerName())) {
    if (RunnerName() == "command") return true;  // passed through like any unknown key
    diag_.Add(pair.key_node.Mark(), pair.key,
              std::string("valid only with runner ") + ScopeName(spec->scope) + " (this matrix's runner is " +
                  RunnerName() + ")");
    return false;
  }
  return true;
}

std::optional<Value> MatrixParser::CellValue(const ParamSpec* spec, const YAML::Node& node,
                                             const YAML::Mark& fallback, const std::string& path) {
  const YAML::Mark where = MarkOr(node, fallback);
  // A command runner's load keys are validated too (Scope::kLoad includes it); its other non-core
  // keys pass through.
  if (spec != nullptr &&
      (spec->scope == Scope::kCore || spec->scope == Scope::kLoad || RunnerName() != "command")) {
    if (!node.IsScalar()) {
      diag_.Add(where, path, "expected " + DescribeExpected(*spec) + " (got " + Describe(node) + ")");
      return std::nullopt;
    }
    Result<Value> value = ParseParamText(*spec, node.Scalar());
    if (!value.ok()) {
      diag_.Add(where, path, value.error().message);
      return std::nullopt;
    }
    return std::move(value).value();
  }
  if (!node.IsScalar()) {
    diag_.Add(where, path, "expected a single value (got " + Describe(node) + ")");
    return std::nullopt;
  }
  return PassThroughValue(node);
}

void MatrixParser::ParseAxes(const Pair& pair) {
  const YAML::Node& node = pair.value;
  if (!node.IsMap() || node.size() == 0) {
    diag_.Add(MarkOr(node, pair.key_node.Mark()), "matrix",
              "expected a mapping of at least one parameter to a value or a list of values (got " +
                  Describe(node) + ")");
    return;
  }
  for (const Pair& p : Pairs(node, "matrix", diag_)) {
    const ParamSpec* spec = nullptr;
    if (!AcceptCellKey(p, "matrix", &spec)) continue;
    Axis axis;
    axis.name = p.key;
    axis.where = {matrix_.path, p.key_node.Mark().line + 1, p.key_node.Mark().column + 1};
    if (p.value.IsMap()) {
      diag_.Add(MarkOr(p.value, p.key_node.Mark()), p.key,
                "expected a value or a list of values (got " + Describe(p.value) + ")");
      continue;
    }
    if (p.value.IsSequence() && p.value.size() == 0) {
      diag_.Add(MarkOr(p.value, p.key_node.Mark()), p.key, "expected a non-empty list of values (got [])");
      continue;
    }
    std::vector<YAML::Node> items;
    if (p.value.IsSequence()) {
      for (const YAML::Node& item : p.value) items.push_back(item);
    } else {
      items.push_back(p.value);
    }
    bool ok = true;
    for (const YAML::Node& item : items) {
      std::optional<Value> value = CellValue(spec, item, p.key_node.Mark(), p.key);
      if (!value) {
        ok = false;
        continue;
      }
      if (std::find(axis.values.begin(), axis.values.end(), *value) != axis.values.end()) {
        diag_.Add(MarkOr(item, p.key_node.Mark()), p.key,
                  "value " + FormatValue(*value) + " is listed twice (repeat cells with repetitions)");
        ok = false;
        continue;
      }
      axis.values.push_back(std::move(*value));
    }
    if (ok) matrix_.axes.push_back(std::move(axis));
    axis_names_.insert(p.key);
    axis_specs_[p.key] = spec;
  }
}

void MatrixParser::ParseEntries(const Pair& pair, bool is_exclude) {
  const std::string what = is_exclude ? "exclude" : "include";
  const YAML::Node& node = pair.value;
  if (!node.IsSequence()) {
    diag_.Add(MarkOr(node, pair.key_node.Mark()), what,
              "expected a list of mappings (got " + Describe(node) + ")");
    return;
  }
  std::size_t index = 0;
  for (const YAML::Node& entry_node : node) {
    const std::string context = what + "[" + std::to_string(index++) + "]";
    const YAML::Mark where = MarkOr(entry_node, pair.key_node.Mark());
    if (!entry_node.IsMap() || entry_node.size() == 0) {
      diag_.Add(where, context,
                "expected a mapping of parameter to value (got " + Describe(entry_node) + ")");
      continue;
    }
    Combination entry;
    bool ok = true;
    for (const Pair& p : Pairs(entry_node, context, diag_)) {
      const std::string path = context + "." + p.key;
      const ParamSpec* spec = nullptr;
      if (is_exclude) {
        // An exclude entry names axis values; anything else can never match, so it is a typo.
        if (!axis_names_.count(p.key)) {
          std::vector<std::string> axes(axis_names_.begin(), axis_names_.end());
          std::string message = "'" + p.key + "' is not a matrix axis";
          if (auto near = NearestKey(p.key, axes)) message += " (did you mean '" + *near + "'?)";
          diag_.Add(p.key_node.Mark(), context, message);
          ok = false;
          continue;
        }
        spec = axis_specs_[p.key];
      } else if (!AcceptCellKey(p, context, &spec)) {
        ok = false;
        continue;
      }
      std::optional<Value> value = CellValue(spec, p.value, p.key_node.Mark(), path);
      if (!value) {
        ok = false;
        continue;
      }
      if (is_exclude) {
        auto axis = std::find_if(matrix_.axes.begin(), matrix_.axes.end(),
                                 [&](const Axis& a) { return a.name == p.key; });
        if (axis != matrix_.axes.end() &&
            std::find(axis->values.begin(), axis->values.end(), *value) == axis->values.end()) {
          std::vector<std::string> values;
          for (const Value& v : axis->values) values.push_back(FormatValue(v));
          diag_.Add(MarkOr(p.value, p.key_node.Mark()), path,
                    FormatValue(*value) + " is not a value of the axis (" + Join(values, ", ") + ")");
          ok = false;
          continue;
        }
      }
      entry.emplace(p.key, std::move(*value));
    }
    if (!ok) continue;
    (is_exclude ? matrix_.exclude : matrix_.include).push_back(std::move(entry));
  }
}

}  // namespace internal

Result<Matrix> ParseMatrix(const std::string& text, const std::string& path) {
  return internal::MatrixParser(text, path).Parse();
}

Status ApplySetting(Matrix& matrix, const std::string& assignment) {
  const std::string prefix = "--set " + assignment + ": ";
  const auto eq = assignment.find('=');
  const std::string name = assignment.substr(0, eq);
  std::vector<std::string> names;
  for (const ParamSpec& spec : Registry()) {
    if (spec.section == ParamSection::kMeasure) names.push_back("measure." + spec.name);
  }
  if (eq == std::string::npos || name.rfind("measure.", 0) != 0) {
    return MakeError(ErrorKind::kInvalidInput, prefix + "expected measure.KEY=VALUE (" +
                                                   internal::UnknownKeyMessage(name, names) + ")");
  }
  const std::string key = name.substr(8);
  const ParamSpec* spec = FindParam(key, ParamSection::kMeasure);
  if (spec == nullptr)
    return MakeError(ErrorKind::kInvalidInput, prefix + internal::UnknownKeyMessage(name, names));
  Result<Value> value = ParseParamText(*spec, assignment.substr(eq + 1));
  if (!value.ok()) return MakeError(ErrorKind::kInvalidInput, prefix + value.error().message);
  MeasureSettings m = matrix.measure;
  if (!internal::AssignMeasure(m, key, *value)) {
    return MakeError(ErrorKind::kInternal,
                     prefix + "registry key without a MeasureSettings field (a dlbench bug)");
  }
  if (m.min_steps > m.max_steps) {
    return MakeError(ErrorKind::kInvalidInput, prefix + "expected min_steps <= max_steps (got min_steps " +
                                                   std::to_string(m.min_steps) + ", max_steps " +
                                                   std::to_string(m.max_steps) + ")");
  }
  if (m.min_time_s > m.max_time_s) {
    return MakeError(ErrorKind::kInvalidInput, prefix + "expected min_time_s <= max_time_s (got min_time_s " +
                                                   FormatValue(Value(m.min_time_s)) + ", max_time_s " +
                                                   FormatValue(Value(m.max_time_s)) + ")");
  }
  matrix.measure = m;
  return Status::Ok();
}

Result<Matrix> LoadMatrix(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer before it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    return MakeError(err == ENOENT ? ErrorKind::kNotFound : ErrorKind::kIo,
                     path + ": error: cannot read '" + path + "': " + std::strerror(err));
  }
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return MakeError(ErrorKind::kIo,
                     fmt::format("{}: error: cannot read '{}': {}", path, path, std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return MakeError(ErrorKind::kIo, path + ": error: cannot read '" + path + "': it is a directory");
  }
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISFIFO(st.st_mode)   ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return MakeError(ErrorKind::kInvalidInput,
                     path + ": error: it is " + kind + "; a matrix must be a regular file");
  }
  auto too_large = [&](const std::string& size) {
    return MakeError(ErrorKind::kInvalidInput, path + ": error: the file holds " + size +
                                                   " bytes; a matrix file may hold at most " +
                                                   std::to_string(kMaxMatrixFileBytes) + " (4 MiB)");
  };
  if (st.st_size > static_cast<off_t>(kMaxMatrixFileBytes)) return too_large(std::to_string(st.st_size));
  // Read at most one byte past the limit, so a file that grows while it is read is still bounded.
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size) + 1);
  std::size_t used = 0;
  for (;;) {
    if (used == text.size()) {
      if (text.size() > kMaxMatrixFileBytes) break;
      text.resize(std::min(text.size() * 2 + 4096, kMaxMatrixFileBytes + 1));
    }
    const ssize_t n = ::read(fd, text.data() + used, text.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      return MakeError(ErrorKind::kIo, path + ": error: cannot read '" + path + "': " + std::strerror(errno));
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  if (used > kMaxMatrixFileBytes) return too_large("more than " + std::to_string(kMaxMatrixFileBytes));
  text.resize(used);
  return ParseMatrix(text, path);
}

}  // namespace dlbench::config

// The parameter registry's values (registry.h): the string formats (devices, shapes, dtypes,
// byte sizes, precision lists and tolerances), the text of what a key expects, parsing text into a
// value and validating a value against its key, and a value's text as a reader writes it.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/text.h"
#include "config/cuda_alloc_conf.h"
#include "config/registry.h"
#include "config/registry_text.h"

namespace dlbench::config {
namespace {

bool MatchesFormat(StringFormat format, const std::string& text) {
  switch (format) {
    case StringFormat::kAny:
      return true;
    case StringFormat::kDevice:
      return ParseDeviceName(text).has_value();
    case StringFormat::kShapes:
      return ParseShapes(text).has_value();
    case StringFormat::kDtypes:
      return ParseDtypes(text).has_value();
    case StringFormat::kBytes:
      return ParseByteSize(text).has_value();
    case StringFormat::kCudaAllocConf:
      return CudaAllocConfProblem(text).empty();
    case StringFormat::kPrecisions:
      return ParsePrecisionList(text).has_value();
    case StringFormat::kPrecisionTolerances:
      return ParsePrecisionTolerances(text).has_value();
    case StringFormat::kPrecisionDiffTolerances:
      return ParsePrecisionDiffTolerances(text).has_value();
  }
  return false;
}

}  // namespace

namespace internal {

// Shortest round-trip text of a bound or default: 1 -> "1", 0.5 -> "0.5".
std::string FormatBound(double value) {
  // Integral bounds as integers ("1048576", not the shorter "1.048576e+06").
  if (std::abs(value) < 1e15 && value == std::trunc(value)) {
    return std::to_string(static_cast<std::int64_t>(value));
  }
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value);
  return std::string(buf, res.ptr);
}

// ">= 1", "between 1 and 255", "> 0 and < 1"; empty when unbounded.
std::string RangeText(const ParamSpec& spec) {
  if (spec.min && spec.max && spec.min->inclusive && spec.max->inclusive) {
    return "between " + FormatBound(spec.min->value) + " and " + FormatBound(spec.max->value);
  }
  std::vector<std::string> parts;
  if (spec.min) parts.push_back((spec.min->inclusive ? ">= " : "> ") + FormatBound(spec.min->value));
  if (spec.max) parts.push_back((spec.max->inclusive ? "<= " : "< ") + FormatBound(spec.max->value));
  return Join(parts, " and ");
}

std::string FormatText(StringFormat format) {
  switch (format) {
    case StringFormat::kAny:
      return "";
    case StringFormat::kDevice:
      return "cpu, cuda or cuda:N";
    case StringFormat::kShapes:
      return "shapes like B,3,224,224;B,16";
    case StringFormat::kDtypes:
      return "dtypes like float32;int64 (" + Join(KnownDtypes(), ", ") + ")";
    case StringFormat::kBytes:
      return "bytes > 0 and at most 1TiB, as an integer with an optional unit (B, KiB, MiB, GiB, TiB, KB, "
             "MB, GB, TB), like 16GiB";
    case StringFormat::kCudaAllocConf:
      return "PYTORCH_CUDA_ALLOC_CONF options name:value separated by commas, like "
             "expandable_segments:True,max_split_size_mb:128 (docs/memory.md)";
    case StringFormat::kPrecisions:
      return "precisions like fp32;bf16;int8, each at most once (" +
             Join(FindParam("precision", ParamSection::kCell)->allowed, ", ") + ")";
    case StringFormat::kPrecisionTolerances:
      return "precision=number pairs like bf16=0.99;int8=0.9, each precision at most once (" +
             Join(FindParam("precision", ParamSection::kCell)->allowed, ", ") +
             "), each number between 0 and 1";
    case StringFormat::kPrecisionDiffTolerances:
      return "precision=number pairs like bf16=0.05;int8=0.5, each precision at most once (" +
             Join(FindParam("precision", ParamSection::kCell)->allowed, ", ") +
             "), each number between 0 and " + FormatBound(kMaxDiffTolerance);
  }
  return "";
}

}  // namespace internal

using internal::FormatText;
using internal::RangeText;

namespace {

Status ValueError(const ParamSpec& spec, const std::string& got) {
  std::string hint;
  if (got == "max") {
    // `max` asks for a search; say which keys have one.
    std::vector<std::string> searchable;
    for (const ParamSpec& other : Registry()) {
      if (std::find(other.keywords.begin(), other.keywords.end(), "max") != other.keywords.end())
        searchable.push_back(other.name);
    }
    const std::string last = searchable.back();
    searchable.pop_back();
    hint = "; `max` (a search) is for " + Join(searchable, ", ") + " and " + last + " only";
  }
  return MakeError(ErrorKind::kInvalidInput,
                   "expected " + DescribeExpected(spec) + " (got '" + got + "')" + hint);
}

Status CheckRange(const ParamSpec& spec, double v, const std::string& got) {
  if (spec.min && (spec.min->inclusive ? v < spec.min->value : v <= spec.min->value)) {
    return ValueError(spec, got);
  }
  if (spec.max && (spec.max->inclusive ? v > spec.max->value : v >= spec.max->value)) {
    return ValueError(spec, got);
  }
  return Status::Ok();
}

std::optional<bool> ParseBool(const std::string& text) {
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& KnownDtypes() {
  static const std::vector<std::string> dtypes = {"float32", "float16", "bfloat16", "float64", "int64",
                                                  "int32",   "int16",   "int8",     "uint8",   "bool"};
  return dtypes;
}

std::optional<DeviceName> ParseDeviceName(std::string_view text) {
  if (text == "cpu") return DeviceName{};
  if (text == "cuda") return DeviceName{true, 0};
  if (!StartsWith(text, "cuda:")) return std::nullopt;
  const std::optional<std::uint64_t> index = ParseUint(text.substr(5));
  if (!index || *index > static_cast<std::uint64_t>(kMaxCudaIndex)) return std::nullopt;
  return DeviceName{true, static_cast<int>(*index)};
}

std::optional<std::vector<std::vector<std::int64_t>>> ParseShapes(std::string_view text) {
  std::vector<std::vector<std::int64_t>> shapes;
  for (const std::string& one : Split(text, ';')) {
    std::vector<std::int64_t> shape;
    for (const std::string& piece : Split(one, ',')) {
      const std::string dim = Trim(piece);
      if (dim == "B") {
        shape.push_back(kBatchDim);
        continue;
      }
      const std::optional<std::uint64_t> n = ParseUint(dim);
      if (!n || *n < 1 || *n > static_cast<std::uint64_t>(kMaxShapeDim)) return std::nullopt;
      shape.push_back(static_cast<std::int64_t>(*n));
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

std::optional<std::int64_t> ParseByteSize(std::string_view text) {
  const std::string t = Trim(text);
  std::size_t digits = 0;
  while (digits < t.size() && t[digits] >= '0' && t[digits] <= '9') ++digits;
  // 13 digits hold every value up to 1 TiB; more cannot be in range and could overflow below.
  if (digits == 0 || digits > 13) return std::nullopt;
  const std::optional<std::uint64_t> n = ParseUint(t.substr(0, digits));
  if (!n) return std::nullopt;
  const std::string unit = Trim(std::string_view(t).substr(digits));
  static constexpr std::pair<std::string_view, std::uint64_t> kUnits[] = {{"", 1},
                                                                          {"B", 1},
                                                                          {"KiB", 1ull << 10},
                                                                          {"MiB", 1ull << 20},
                                                                          {"GiB", 1ull << 30},
                                                                          {"TiB", 1ull << 40},
                                                                          {"KB", 1000},
                                                                          {"MB", 1000'000},
                                                                          {"GB", 1000'000'000},
                                                                          {"TB", 1000'000'000'000}};
  const auto* scale =
      std::find_if(std::begin(kUnits), std::end(kUnits), [&](const auto& u) { return u.first == unit; });
  if (scale == std::end(kUnits)) return std::nullopt;
  // n < 10^13 and the bound is 2^40: n > bound / scale is exact and cannot overflow.
  const auto max = static_cast<std::uint64_t>(kMaxByteSize);
  if (*n == 0 || *n > max / scale->second) return std::nullopt;
  return static_cast<std::int64_t>(*n * scale->second);
}

std::optional<std::vector<std::string>> ParseDtypes(std::string_view text) {
  std::vector<std::string> dtypes;
  const std::vector<std::string>& known = KnownDtypes();
  for (const std::string& piece : Split(text, ';')) {
    std::string name = Trim(piece);
    if (std::find(known.begin(), known.end(), name) == known.end()) return std::nullopt;
    dtypes.push_back(std::move(name));
  }
  return dtypes;
}

std::optional<std::vector<std::string>> ParsePrecisionList(std::string_view text) {
  const std::vector<std::string>& known = FindParam("precision", ParamSection::kCell)->allowed;
  std::vector<std::string> names;
  for (const std::string& piece : Split(text, ';')) {
    std::string name = Trim(piece);
    if (std::find(known.begin(), known.end(), name) == known.end() ||
        std::find(names.begin(), names.end(), name) != names.end()) {
      return std::nullopt;
    }
    names.push_back(std::move(name));
  }
  if (names.empty()) return std::nullopt;
  return names;
}

namespace {

// `precision=number` pairs with each number in [0, max_value].
std::optional<std::vector<std::pair<std::string, double>>> ParsePrecisionBounds(std::string_view text,
                                                                                double max_value) {
  const std::vector<std::string>& known = FindParam("precision", ParamSection::kCell)->allowed;
  std::vector<std::pair<std::string, double>> out;
  for (const std::string& piece : Split(text, ';')) {
    const std::size_t eq = piece.find('=');
    if (eq == std::string::npos) return std::nullopt;
    std::string name = Trim(piece.substr(0, eq));
    const std::string number = Trim(piece.substr(eq + 1));
    if (std::find(known.begin(), known.end(), name) == known.end() ||
        std::any_of(out.begin(), out.end(), [&](const auto& p) { return p.first == name; })) {
      return std::nullopt;
    }
    double value = 0.0;
    const auto res = std::from_chars(number.data(), number.data() + number.size(), value);
    if (number.empty() || res.ec != std::errc() || res.ptr != number.data() + number.size() ||
        !(value >= 0.0 && value <= max_value)) {
      return std::nullopt;
    }
    out.emplace_back(std::move(name), value);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace

std::optional<std::vector<std::pair<std::string, double>>> ParsePrecisionTolerances(std::string_view text) {
  return ParsePrecisionBounds(text, 1.0);
}

std::optional<std::vector<std::pair<std::string, double>>> ParsePrecisionDiffTolerances(
    std::string_view text) {
  return ParsePrecisionBounds(text, kMaxDiffTolerance);
}

namespace {

bool IsKeyword(const ParamSpec& spec, const std::string& text) {
  return std::find(spec.keywords.begin(), spec.keywords.end(), text) != spec.keywords.end();
}

// " or max" for a number that also accepts words; empty otherwise.
std::string KeywordsText(const ParamSpec& spec) {
  return spec.keywords.empty() ? "" : " or " + Join(spec.keywords, ", ");
}

}  // namespace

std::string DescribeExpected(const ParamSpec& spec) {
  if (!spec.keywords.empty() && (spec.type == ParamType::kInt || spec.type == ParamType::kNumber)) {
    ParamSpec plain = spec;
    plain.keywords.clear();
    return DescribeExpected(plain) + KeywordsText(spec);
  }
  std::string range = RangeText(spec);
  switch (spec.type) {
    case ParamType::kString: {
      std::string format = FormatText(spec.format);
      return format.empty() ? "a string" : format;
    }
    case ParamType::kInt:
      return range.empty() ? "an integer" : "an integer " + range;
    case ParamType::kNumber:
      return range.empty() ? "a number" : "a number " + range;
    case ParamType::kBool:
      return "true or false";
    case ParamType::kEnum:
      return "one of " + Join(spec.allowed, ", ");
    case ParamType::kMapping:
      return "a mapping";
    case ParamType::kMappingList:
      return "a list of mappings";
    case ParamType::kRunner:
      return "null, torch or a mapping {command: [argv...]}";
  }
  return "?";
}

Result<Value> ParseParamText(const ParamSpec& spec, const std::string& text) {
  switch (spec.type) {
    case ParamType::kString:
    case ParamType::kEnum: {
      Value v(text);
      DLBENCH_RETURN_IF_ERROR(ValidateParamValue(spec, v));
      return v;
    }
    case ParamType::kInt: {
      if (IsKeyword(spec, text)) return Value(text);
      std::optional<std::int64_t> v = ParseInt(text);
      if (!v) return ValueError(spec, text).error();
      DLBENCH_RETURN_IF_ERROR(CheckRange(spec, static_cast<double>(*v), text));
      return Value(*v);
    }
    case ParamType::kNumber: {
      if (IsKeyword(spec, text)) return Value(text);
      std::optional<double> v = ParseNumber(text);
      if (!v) return ValueError(spec, text).error();
      DLBENCH_RETURN_IF_ERROR(CheckRange(spec, *v, text));
      return Value(*v);
    }
    case ParamType::kBool: {
      std::optional<bool> v = ParseBool(text);
      if (!v) return ValueError(spec, text).error();
      return Value(*v);
    }
    case ParamType::kMapping:
    case ParamType::kMappingList:
    case ParamType::kRunner:
      break;
  }
  return MakeError(ErrorKind::kInternal, spec.name + " is not a scalar parameter");
}

Status ValidateParamValue(const ParamSpec& spec, const Value& value) {
  const std::string got = value.is_string() ? value.get<std::string>() : FormatValue(value);
  switch (spec.type) {
    case ParamType::kString:
      if (!value.is_string() || !MatchesFormat(spec.format, value.get<std::string>())) {
        if (value.is_string() && spec.format == StringFormat::kCudaAllocConf) {
          return MakeError(ErrorKind::kInvalidInput, ValueError(spec, got).error().message + ": " +
                                                         CudaAllocConfProblem(value.get<std::string>()));
        }
        return ValueError(spec, got);
      }
      return Status::Ok();
    case ParamType::kEnum:
      if (!value.is_string() || std::find(spec.allowed.begin(), spec.allowed.end(),
                                          value.get<std::string>()) == spec.allowed.end()) {
        return ValueError(spec, got);
      }
      return Status::Ok();
    case ParamType::kInt:
      if (value.is_string() && IsKeyword(spec, value.get<std::string>())) return Status::Ok();
      if (!value.is_number_integer()) return ValueError(spec, got);
      if (value.is_number_unsigned() &&
          value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return ValueError(spec, got);
      }
      return CheckRange(spec, static_cast<double>(value.get<std::int64_t>()), got);
    case ParamType::kNumber:
      if (value.is_string() && IsKeyword(spec, value.get<std::string>())) return Status::Ok();
      if (!value.is_number() || !std::isfinite(value.get<double>())) return ValueError(spec, got);
      return CheckRange(spec, value.get<double>(), got);
    case ParamType::kBool:
      if (!value.is_boolean()) return ValueError(spec, got);
      return Status::Ok();
    case ParamType::kMapping:
    case ParamType::kMappingList:
    case ParamType::kRunner:
      break;
  }
  return MakeError(ErrorKind::kInternal, spec.name + " is not a scalar parameter");
}

std::string FormatValue(const Value& value) {
  if (!value.is_string()) return value.dump();
  const std::string& s = value.get<std::string>();
  // Quote what would otherwise be ambiguous in "name=value,name=value" or read as another type.
  bool quote = s.empty() || s.find_first_of(",=\"") != std::string::npos || s.front() == ' ' ||
               s.back() == ' ' || s == "null" || ParseBool(s) || ParseInt(s) || ParseNumber(s);
  return quote ? value.dump() : s;
}

}  // namespace dlbench::config

#include "config/runner_params.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace dlbench::config {
namespace {

Error Invalid(std::string message) { return MakeError(ErrorKind::kInvalidInput, std::move(message)); }

// The scope that owns a cell parameter, for the message about a key of another runner.
const ParamSpec* FindCellParam(std::string_view name) { return FindParam(name, ParamSection::kCell); }

}  // namespace

Result<RunnerParams> RunnerParams::Parse(const nlohmann::json& params, std::string_view runner) {
  if (!params.is_object()) return Invalid("CONFIGURE params must be an object, got " + params.dump());
  const std::string runner_name(runner);
  const std::vector<const ParamSpec*> specs = CellParamsForRunner(runner_name);
  for (const auto& [key, value] : params.items()) {
    const ParamSpec* spec = FindCellParam(key);
    if (spec == nullptr) {
      std::vector<std::string> names;
      names.reserve(specs.size());
      for (const ParamSpec* s : specs) names.push_back(s->name);
      std::string message = "unknown parameter '";
      message += key;
      message += "' for runner ";
      message += runner_name;
      if (auto near = NearestKey(key, names)) message += " (did you mean '" + *near + "'?)";
      return Invalid(message);
    }
    if (!ScopeValidForRunner(spec->scope, runner_name)) {
      std::string message = "parameter '";
      message += key;
      message += "' belongs to runner ";
      message += ScopeName(spec->scope);
      message += ", not to runner ";
      message += runner_name;
      return Invalid(message);
    }
    if (Status st = ValidateParamValue(*spec, value); !st.ok()) {
      return Invalid("parameter '" + key + "': " + st.error().message);
    }
    // batch_size, seq_len or image_size: max is the orchestrator's search (docs/memory.md): each
    // probe, and the measured run, reaches the runner with a number.
    const std::string& name = key;  // clang before 16 cannot capture a structured binding
    const bool searched = std::any_of(std::begin(kBoundarySearchKeys), std::end(kBoundarySearchKeys),
                                      [&name](const char* k) { return name == k; });
    if (searched && value.is_string()) {
      return Invalid("parameter '" + key +
                     "': 'max' is a search dlbench runs over runner processes; a runner receives " +
                     (key == "batch_size" ? "a batch size"
                      : key == "seq_len"  ? "a sequence length"
                                          : "an image size"));
    }
  }
  RunnerParams out;
  out.runner_ = runner_name;
  out.given_ = params;
  out.values_ = params;
  for (const ParamSpec* spec : specs) {
    if (!spec->required_with.empty() && spec->required_with == runner_name && !params.contains(spec->name)) {
      return Invalid("parameter '" + spec->name + "' is required with runner " + runner_name);
    }
    if (params.contains(spec->name)) continue;
    if (spec->default_value) {
      out.values_[spec->name] = *spec->default_value;
    } else if (!spec->default_from.empty()) {
      // The source parameter comes earlier in the registry, so its default is already filled in.
      auto from = out.values_.find(spec->default_from);
      if (from != out.values_.end()) out.values_[spec->name] = *from;
    }
  }
  return out;
}

const nlohmann::json* RunnerParams::Lookup(std::string_view name, ParamType type, ParamType also) const {
  const ParamSpec* spec = FindCellParam(name);
  DLBENCH_CHECK(spec != nullptr && ScopeValidForRunner(spec->scope, runner_),
                "a runner read a parameter the registry does not declare for it");
  DLBENCH_CHECK(spec->type == type || spec->type == also, "a runner read a parameter as the wrong type");
  auto it = values_.find(std::string(name));
  return it == values_.end() ? nullptr : &*it;
}

std::optional<std::int64_t> RunnerParams::Int(std::string_view name) const {
  const nlohmann::json* v = Lookup(name, ParamType::kInt, ParamType::kInt);
  // A validated string is one of the spec's keywords (data_workers: auto).
  if (v == nullptr || v->is_string()) return std::nullopt;
  return v->get<std::int64_t>();
}

std::optional<double> RunnerParams::Number(std::string_view name) const {
  const nlohmann::json* v = Lookup(name, ParamType::kNumber, ParamType::kNumber);
  if (v == nullptr) return std::nullopt;
  return v->get<double>();
}

std::optional<std::string> RunnerParams::Text(std::string_view name) const {
  const nlohmann::json* v = Lookup(name, ParamType::kString, ParamType::kEnum);
  if (v == nullptr) return std::nullopt;
  return v->get<std::string>();
}

std::optional<bool> RunnerParams::Bool(std::string_view name) const {
  const nlohmann::json* v = Lookup(name, ParamType::kBool, ParamType::kBool);
  if (v == nullptr) return std::nullopt;
  return v->get<bool>();
}

bool RunnerParams::Given(std::string_view name) const { return given_.contains(std::string(name)); }

bool RunnerParams::Keyword(std::string_view name) const {
  const nlohmann::json* v = Lookup(name, ParamType::kInt, ParamType::kInt);
  return v != nullptr && v->is_string();
}

}  // namespace dlbench::config

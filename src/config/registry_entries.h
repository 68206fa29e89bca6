// Internal to src/config: the fluent builder of the parameter registry's table and the functions
// that append its parts. Registry() (registry.cc) calls them in this order, which is the order of
// `dlbench params` and docs/config-reference.md; a new key goes into the part of its relatives.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "config/matrix.h"
#include "config/registry.h"

namespace dlbench::config::internal {

// Fluent construction of one entry, so that the table (registry_entries_*.cc) reads as a table.
class Entry {
 public:
  Entry(std::string name, ParamSection section, Scope scope, ParamType type) {
    spec_.name = std::move(name);
    spec_.section = section;
    spec_.scope = scope;
    spec_.type = type;
  }
  Entry& Unit(std::string unit) {
    spec_.unit = std::move(unit);
    return *this;
  }
  Entry& Default(Value value) {
    spec_.default_value = std::move(value);
    return *this;
  }
  Entry& DefaultText(std::string text) {
    spec_.default_text = std::move(text);
    return *this;
  }
  Entry& DefaultFrom(std::string name) {
    spec_.default_from = std::move(name);
    return *this;
  }
  Entry& Allowed(std::vector<std::string> values) {
    spec_.allowed = std::move(values);
    return *this;
  }
  Entry& Keywords(std::vector<std::string> words) {
    spec_.keywords = std::move(words);
    return *this;
  }
  Entry& Min(double value, bool inclusive = true) {
    spec_.min = Bound{value, inclusive};
    return *this;
  }
  Entry& Max(double value, bool inclusive = true) {
    spec_.max = Bound{value, inclusive};
    return *this;
  }
  Entry& Format(StringFormat format) {
    spec_.format = format;
    return *this;
  }
  Entry& RequiredWith(std::string runner) {
    spec_.required_with = std::move(runner);
    return *this;
  }
  Entry& Label(std::string label) {
    spec_.label = std::move(label);
    return *this;
  }
  Entry& Help(std::string help) {
    spec_.help = std::move(help);
    return *this;
  }
  Entry& Estimate(EstimateHint hint) {
    spec_.estimate = hint;
    return *this;
  }
  ParamSpec Build() { return std::move(spec_); }

 private:
  ParamSpec spec_;
};

inline Value Int(std::int64_t v) { return Value(v); }
inline Value Num(double v) { return Value(v); }
inline Value Str(const char* v) { return Value(std::string(v)); }

// The sections and scopes, short so that each entry fits on its line.
inline constexpr auto kTop = ParamSection::kTopLevel;
inline constexpr auto kMeas = ParamSection::kMeasure;
inline constexpr auto kCell = ParamSection::kCell;
inline constexpr auto kCore = Scope::kCore;
inline constexpr auto kNull = Scope::kNull;
inline constexpr auto kTorch = Scope::kTorch;
inline constexpr auto kLoad = Scope::kLoad;
inline constexpr auto kInput = Scope::kInputSize;

// registry_entries_run.cc: the top-level keys, then the measure: keys.
void AppendRunEntries(std::vector<ParamSpec>& r);
// registry_entries_cell.cc: the cell parameters every runner understands, the boundary search,
// memory, device, precision and the ddp keys.
void AppendCellEntries(std::vector<ParamSpec>& r);
// registry_entries_load.cc: inference under load.
void AppendLoadEntries(std::vector<ParamSpec>& r);
// registry_entries_null.cc: the null runner's keys.
void AppendNullEntries(std::vector<ParamSpec>& r);
// registry_entries_torch.cc: the torch runner's keys, its input pipeline, scenario: converge and
// the precision comparison's tolerances.
void AppendTorchEntries(std::vector<ParamSpec>& r);

}  // namespace dlbench::config::internal

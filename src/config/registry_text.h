// Internal to src/config: the text of a parameter's range and format, shared by the messages of
// parsing and validation (registry_parse.cc) and by help and docs (registry_render.cc).
#pragma once

#include <string>

#include "config/registry.h"

namespace dlbench::config::internal {

// Shortest round-trip text of a bound or default: 1 -> "1", 0.5 -> "0.5".
std::string FormatBound(double value);

// ">= 1", "between 1 and 255", "> 0 and < 1"; empty when unbounded.
std::string RangeText(const ParamSpec& spec);

// What a string of the format looks like ("cpu, cuda or cuda:N"); empty for kAny.
std::string FormatText(StringFormat format);

}  // namespace dlbench::config::internal

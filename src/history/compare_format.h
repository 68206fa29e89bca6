// Renderings of a Comparison: a console table, JSON for tools, and Markdown fit for a
// pull-request comment. All three carry the same facts: the runs, the method's settings, the
// environment changes (deciding ones flagged), every matched cell with its verdict, and the cells
// found on one side only.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "history/compare.h"

namespace dlbench::history {

enum class CompareFormat { kTable, kJson, kMarkdown };

// "table", "json", "markdown"; kInvalidInput naming the allowed values otherwise.
Result<CompareFormat> ParseCompareFormat(const std::string& text);

std::string FormatCompareTable(const Comparison& cmp);
nlohmann::json CompareToJson(const Comparison& cmp);
std::string FormatCompareMarkdown(const Comparison& cmp);
std::string FormatComparison(const Comparison& cmp, CompareFormat format);

}  // namespace dlbench::history

// Counting the documents of a YAML text without yaml-cpp's YAML::LoadAll, which (yaml-cpp 0.7)
// never returns on some malformed input: a ',' outside brackets makes its parser start document
// after document at the same place, consuming nothing, and LoadAll allocates until memory runs
// out (found by fuzz/fuzz_matrix.cc; the input is in fuzz/regressions/matrix/).
#pragma once

#include <yaml-cpp/mark.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace dlbench::config {

struct YamlDocuments {
  // The first node of each document read, in order; a null Mark for a document with no node.
  std::vector<YAML::Mark> first_nodes;
  // Set when the parser started a document where the previous one started: it can go no further.
  std::optional<YAML::Mark> stuck_at;
};

// Reads the documents of `text` as parser events, at most `limit` of them (>= 1) and one more to
// see whether the parser is stuck. Ends on every input; throws YAML::Exception (with its mark) on a syntax
// error, as YAML::Load does.
YamlDocuments ScanYamlDocuments(const std::string& text, std::size_t limit);

// The error message for a parser stuck at `at` in `text`: names the ',' when that is what stands
// there.
std::string StuckParserMessage(const std::string& text, const YAML::Mark& at);

}  // namespace dlbench::config

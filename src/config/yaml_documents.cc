#include "config/yaml_documents.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <sstream>

namespace dlbench::config {

namespace {

// Keeps, per document, the mark of its first node; everything else is ignored.
class FirstNodes final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    document_starts.push_back(mark);
    first_nodes.emplace_back(YAML::Mark::null_mark());
    seen_node_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, /*is_null=*/true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Node(mark, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    Node(mark, false);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Node(mark, false);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Node(mark, false);
  }
  void OnMapEnd() override {}

  std::vector<YAML::Mark> document_starts;
  std::vector<YAML::Mark> first_nodes;

 private:
  // A document whose only node is an implicit null (nothing after '---') has no position, as
  // YAML::Load reports it; an explicit one ('~', 'null') has its own.
  void Node(const YAML::Mark& mark, bool is_null) {
    if (seen_node_ || first_nodes.empty()) return;
    seen_node_ = true;
    if (!is_null || mark.pos != document_starts.back().pos) first_nodes.back() = mark;
  }
  bool seen_node_ = false;
};

}  // namespace

YamlDocuments ScanYamlDocuments(const std::string& text, std::size_t limit) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  FirstNodes handler;
  YamlDocuments out;
  // One document more than asked for: a parser that is stuck shows it by starting the next one
  // at the same place ("- 1\n,": a document at the ',' and then another there).
  while (handler.document_starts.size() <= limit) {
    const std::size_t before = handler.document_starts.size();
    if (!parser.HandleNextDocument(handler)) break;
    if (handler.document_starts.size() == before) break;  // no document started: nothing left
    if (before > 0 && handler.document_starts[before].pos == handler.document_starts[before - 1].pos) {
      out.stuck_at = handler.document_starts[before];
      handler.first_nodes.pop_back();
      break;
    }
  }
  if (handler.first_nodes.size() > limit) handler.first_nodes.resize(limit);
  out.first_nodes = std::move(handler.first_nodes);
  return out;
}

std::string StuckParserMessage(const std::string& text, const YAML::Mark& at) {
  std::size_t i = at.pos < 0 ? text.size() : static_cast<std::size_t>(at.pos);
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
  if (i < text.size() && text[i] == ',') {
    return "YAML syntax error: a ',' outside [ ] or { }; separate items of a list with new lines "
           "starting '- ', or write the list in brackets";
  }
  return "YAML syntax error: the YAML parser cannot read past this point";
}

}  // namespace dlbench::config

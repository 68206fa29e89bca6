#include "report/escape.h"

#include <gtest/gtest.h>

namespace dlbench::report {
namespace {

TEST(EscapeHtml, EscapesEveryMarkupCharacter) {
  const std::pair<std::string, std::string> cases[] = {
      {"", ""},
      {"resnet50", "resnet50"},
      {"<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"},
      {"a & b", "a &amp; b"},
      {"\"quoted\" 'single'", "&quot;quoted&quot; &#39;single&#39;"},
      {"&amp;", "&amp;amp;"},
      {"caf\xC3\xA9", "caf\xC3\xA9"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(EscapeHtml(in), want) << in;
}

TEST(JsonForScript, CannotCloseTheScriptElementAndReadsBackTheSame) {
  const nlohmann::json value = {{"name", "</script><script>alert(1)</script>"},
                                {"comment", "<!-- x -->"},
                                {"amp", "a&b"},
                                {"seps",
                                 "line\xE2\x80\xA8"
                                 "para\xE2\x80\xA9"
                                 "end"}};
  const std::string out = JsonForScript(value);
  EXPECT_EQ(out.find('<'), std::string::npos);
  EXPECT_EQ(out.find('>'), std::string::npos);
  EXPECT_EQ(out.find('&'), std::string::npos);
  EXPECT_EQ(out.find("\xE2\x80\xA8"), std::string::npos);
  EXPECT_EQ(out.find("\xE2\x80\xA9"), std::string::npos);
  EXPECT_NE(out.find("\\u2028"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(out), value);
}

TEST(JsonForScript, ReplacesInvalidUtf8InsteadOfThrowing) {
  const nlohmann::json value = {{"log", std::string("bad \xFF"
                                                    " byte")}};
  const std::string out = JsonForScript(value);
  const auto back = nlohmann::json::parse(out);
  EXPECT_EQ(back["log"].get<std::string>(),
            "bad \xEF\xBF\xBD"
            " byte");
}

TEST(EscapeHtmlComment, NeverContainsDoubleDash) {
  for (const std::string in : {"a--b", "-->", "---", "x-", "--"}) {
    const std::string out = EscapeHtmlComment(in);
    EXPECT_EQ(out.find("--"), std::string::npos) << in;
    EXPECT_NE(out.back(), '-') << in;
  }
  EXPECT_EQ(EscapeHtmlComment("plain text"), "plain text");
}

TEST(CsvField, QuotesOnlyWhenNeeded) {
  const std::pair<std::string, std::string> cases[] = {
      {"plain", "plain"},
      {"", ""},
      {"a,b", "\"a,b\""},
      {"say \"hi\"", "\"say \"\"hi\"\"\""},
      {"two\nlines", "\"two\nlines\""},
      {" padded", "\" padded\""},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(CsvField(in), want) << in;
}

// A label or message that a spreadsheet would run as a formula is defused; numbers are not.
TEST(CsvField, DefusesFormulasButNotNumbers) {
  const std::pair<std::string, std::string> cases[] = {
      {"=HYPERLINK(\"http://x\")", "\"'=HYPERLINK(\"\"http://x\"\")\""},
      {"@SUM(A1)", "'@SUM(A1)"},
      {"+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"},
      {"-2+3", "'-2+3"},
      {"\t=1", "'\t=1"},
      {"-1.5", "-1.5"},
      {"+2", "+2"},
      {"-1e-9", "-1e-9"},
      {"a=b", "a=b"},
      {"-", "'-"},
  };
  for (const auto& [in, want] : cases) EXPECT_EQ(CsvField(in), want) << in;
}

TEST(Prometheus, LabelAndNameEscaping) {
  EXPECT_EQ(EscapePrometheusLabel("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(SanitizePrometheusName("gpu0.power-w"), "gpu0_power_w");
  EXPECT_EQ(SanitizePrometheusName("9lives"), "_9lives");
  EXPECT_EQ(SanitizePrometheusName(""), "_");
}

}  // namespace
}  // namespace dlbench::report

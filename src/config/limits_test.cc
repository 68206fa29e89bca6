// The bounds on matrix input (docs/limits.md): one YAML document, a regular file of at most
// kMaxMatrixFileBytes, and a maximum on every numeric key.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "config/matrix.h"
#include "config/registry.h"

namespace dlbench::config {
namespace {

TEST(MatrixLimitsTest, ASecondYamlDocumentIsAnErrorAtItsMarker) {
  struct Case {
    const char* yaml;
    const char* message;
  };
  const Case cases[] = {
      {"matrix:\n  batch_size: 1\n---\nmatrix:\n  batch_size: 2\n",
       "m.yaml:3:1: error: a second YAML document starts here; a matrix file holds one document (remove "
       "the '---' and merge the documents, or split them into files)"},
      // An opening marker is fine; the second one is reported.
      {"---\nmatrix:\n  batch_size: 1\n--- # more\nname: x\n",
       "m.yaml:4:1: error: a second YAML document starts here; a matrix file holds one document (remove "
       "the '---' and merge the documents, or split them into files)"},
      // An empty trailing document is a second document too.
      {"matrix: {batch_size: 1}\n---\n",
       "m.yaml:2:1: error: a second YAML document starts here; a matrix file holds one document (remove "
       "the '---' and merge the documents, or split them into files)"},
      {"--- {matrix: {batch_size: 1}}\n--- {matrix: {batch_size: 2}}\n",
       "m.yaml:2:1: error: a second YAML document starts here; a matrix file holds one document (remove "
       "the '---' and merge the documents, or split them into files)"},
  };
  for (const Case& c : cases) {
    Result<Matrix> m = ParseMatrix(c.yaml, "m.yaml");
    ASSERT_FALSE(m.ok()) << c.yaml;
    EXPECT_EQ(m.error().kind, ErrorKind::kInvalidInput);
    EXPECT_EQ(m.error().message, c.message) << c.yaml;
  }
  // One document, with or without its markers, is a matrix.
  for (const char* yaml : {"---\nmatrix: {batch_size: 1}\n", "matrix: {batch_size: 1}\n...\n",
                           "%YAML 1.2\n---\nmatrix: {batch_size: 1}\n"}) {
    Result<Matrix> m = ParseMatrix(yaml, "m.yaml");
    EXPECT_TRUE(m.ok()) << yaml << ": " << m.error().message;
  }
}

// yaml-cpp's own YAML::LoadAll never returns on these (its parser starts empty documents at the
// comma forever): each is a syntax error at the comma, at once.
TEST(MatrixLimitsTest, AStrayCommaIsASyntaxErrorNotAnEndlessParse) {
  const char* message =
      "error: YAML syntax error: a ',' outside [ ] or { }; separate items of a list with new lines "
      "starting '- ', or write the list in brackets";
  struct Case {
    const char* yaml;
    const char* where;
  };
  const Case cases[] = {
      {",\n", "m.yaml:1:1: "},
      {", 8]\nmatrix:\n  step_ms: [0.5, 1.5]\n", "m.yaml:1:1: "},
      {"- 1\n,\n", "m.yaml:2:1: "},
  };
  for (const Case& c : cases) {
    Result<Matrix> m = ParseMatrix(c.yaml, "m.yaml");
    ASSERT_FALSE(m.ok()) << c.yaml;
    EXPECT_EQ(m.error().message, std::string(c.where) + message) << c.yaml;
  }
}

TEST(MatrixLimitsTest, LargeNumbersAreRefusedWithTheMaximum) {
  struct Case {
    const char* yaml;
    const char* message;
  };
  const Case cases[] = {
      {"matrix: {batch_size: 1}\ntimeout_s: 1e10\n",
       "m.yaml:2:12: error: timeout_s: expected a number > 0 and <= 604800 (got '1e10')"},
      {"matrix: {batch_size: 1}\nmeasure:\n  max_time_s: 1e300\n",
       "m.yaml:3:15: error: measure.max_time_s: expected a number > 0 and <= 604800 (got '1e300')"},
      {"matrix: {batch_size: 1}\nmeasure:\n  max_steps: 9223372036854775807\n",
       "m.yaml:3:14: error: measure.max_steps: expected an integer between 1 and 10000000 (got "
       "'9223372036854775807')"},
      {"matrix: {batch_size: 1}\nrepetitions: 100001\n",
       "m.yaml:2:14: error: repetitions: expected an integer between 1 and 100000 (got '100001')"},
      {"matrix: {batch_size: 1}\nmeasure:\n  sample_interval_ms: 1e-300\n",
       "m.yaml:3:23: error: measure.sample_interval_ms: expected a number between 1 and 60000 (got "
       "'1e-300')"},
      {"matrix: {batch_size: 1, step_ms: 1e300}\n",
       "m.yaml:1:34: error: step_ms: expected a number between 0 and 3600000 (got '1e300')"},
  };
  for (const Case& c : cases) {
    Result<Matrix> m = ParseMatrix(c.yaml, "m.yaml");
    ASSERT_FALSE(m.ok()) << c.yaml;
    EXPECT_EQ(m.error().message, c.message);
  }
  // The maxima themselves are accepted.
  Result<Matrix> at_limits = ParseMatrix(
      "matrix: {batch_size: 1048576}\ntimeout_s: 604800\nrepetitions: 100000\n"
      "measure: {max_time_s: 604800, min_time_s: 604800, max_steps: 10000000}\n",
      "m.yaml");
  ASSERT_TRUE(at_limits.ok()) << at_limits.error().message;
  EXPECT_EQ(at_limits->repetitions, 100000);
}

// An escape that decodes to bytes that are not UTF-8 (yaml-cpp writes \N as the single byte 0x85)
// is refused at its string, as raw bytes are (found by fuzz_matrix; the whole input is
// fuzz/regressions/matrix/crash-4a43c2fce01a51839ec73eb60c9cf45f4915182b).
TEST(MatrixLimitsTest, AnEscapeThatDecodesToBytesThatAreNotUtf8IsRefusedAtItsString) {
  Result<Matrix> m = ParseMatrix("runner: null\nmatrix:\n  model: \"a\\Nb\"\n", "m.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(
      m.error().message.find("m.yaml:3:10: error: this string's escape sequences decode to bytes that are "
                             "not UTF-8"),
      std::string::npos)
      << m.error().message;
  EXPECT_TRUE(ParseMatrix("runner: null\nmatrix:\n  model: \"a\\u00e9b\"\n", "m.yaml").ok())
      << "an escape that decodes to UTF-8 stays allowed";
}

TEST(MatrixLimitsTest, TextThatIsNotUtf8IsRefusedAtItsPlace) {
  // Such a model name used to reach JSON (the progress file) and abort `dlbench run`.
  Result<Matrix> m = ParseMatrix(
      "runner: null\nmatrix:\n  model: a\xff"
      "b\n",
      "m.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message,
            "m.yaml:3:11: error: the file is not UTF-8 text (byte 0xff); save it as UTF-8");
  Result<Matrix> first = ParseMatrix("\xc0", "m.yaml");
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().message,
            "m.yaml:1:1: error: the file is not UTF-8 text (byte 0xc0); save it as UTF-8");
  // yaml-cpp's LoadAll never returned on this (found by fuzz_matrix; the whole input is
  // fuzz/regressions/matrix/timeout-7d7691ba2db0690599efbb575c844be49eb5e842).
  Result<Matrix> nul = ParseMatrix(std::string("# a comment\nmatrix:\n  measur\0\n, and\n", 35), "m.yaml");
  ASSERT_FALSE(nul.ok());
  EXPECT_EQ(nul.error().message,
            "m.yaml:3:9: error: the file holds a control character (byte 0x00), which YAML does not allow");
  Result<Matrix> eot = ParseMatrix("matrix: {batch_size: 1}\n\x04", "m.yaml");
  ASSERT_FALSE(eot.ok());
  EXPECT_EQ(eot.error().message,
            "m.yaml:2:1: error: the file holds a control character (byte 0x04), which YAML does not allow");
  // Tabs and CR LF line ends are text.
  EXPECT_TRUE(ParseMatrix("matrix:\r\n  batch_size: 1\t# a tab\r\n", "m.yaml").ok());
  // Valid UTF-8, a byte-order mark included, is fine.
  EXPECT_TRUE(ParseMatrix("\xef\xbb\xbfmatrix: {model: \"r\xc3\xa9sum\xc3\xa9\"}\n", "m.yaml").ok());
}

TEST(MatrixLimitsTest, ErrorMessagesShowEscapeSequencesInsteadOfObeyingThem) {
  // A key that would clear the screen, and a value that would set the terminal's title.
  Result<Matrix> m = ParseMatrix("matrix:\n  \"\\e[2Jbatch\": 1\n  precision: \"\\e]0;x\\a\"\n", "m.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(
      m.error().message,
      "m.yaml:2:3: error: matrix: unknown key '\\x1b[2Jbatch'\n"
      "m.yaml:3:14: error: precision: expected one of fp32, tf32, bf16, fp16, int8 (got '\\x1b]0;x\\x07')");
}

TEST(RegistryLimitsTest, EveryNumericKeyHasAMaximumStatedInItsHelp) {
  for (const ParamSpec& spec : Registry()) {
    if (spec.type != ParamType::kInt && spec.type != ParamType::kNumber) continue;
    // Seeds are hashed, never computed with: any non-negative 64-bit integer is a seed.
    if (spec.name == "seed" || spec.name == "order_seed") continue;
    ASSERT_TRUE(spec.max.has_value()) << spec.name << " has no maximum";
    // Fractions and an exit status are bounded by what they are; every other maximum says why.
    if (spec.name == "target_rel_ci" || spec.name == "ci_level" || spec.name == "exit_code") continue;
    EXPECT_NE(spec.help.find("At most"), std::string::npos)
        << spec.name << ": the help should give the maximum's reason";
  }
}

class LoadMatrixLimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/dlbench-config-limits-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    for (const char* name : {"/big.yaml", "/fifo", "/ok.yaml"}) std::remove((dir_ + name).c_str());
    rmdir(dir_.c_str());
  }
  std::string dir_;
};

TEST_F(LoadMatrixLimitsTest, OnlyARegularFileOfAtMostTheLimitIsRead) {
  // /dev/zero used to be read until memory ran out.
  Result<Matrix> zero = LoadMatrix("/dev/zero");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().kind, ErrorKind::kInvalidInput);
  EXPECT_EQ(zero.error().message,
            "/dev/zero: error: it is a character device; a matrix must be a regular file");

  // A FIFO is refused without waiting for a writer.
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Result<Matrix> from_fifo = LoadMatrix(fifo);
  ASSERT_FALSE(from_fifo.ok());
  EXPECT_EQ(from_fifo.error().message, fifo + ": error: it is a FIFO; a matrix must be a regular file");

  const std::string big = dir_ + "/big.yaml";
  {
    std::ofstream out(big);
    out << "matrix: {batch_size: 1}\n" << std::string(kMaxMatrixFileBytes, '#');
  }
  Result<Matrix> too_big = LoadMatrix(big);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().message, big + ": error: the file holds " +
                                         std::to_string(kMaxMatrixFileBytes + 24) +
                                         " bytes; a matrix file may hold at most 4194304 (4 MiB)");

  // Exactly at the limit is read.
  const std::string ok = dir_ + "/ok.yaml";
  {
    const std::string head = "matrix: {batch_size: 1}\n#";
    std::ofstream out(ok);
    out << head << std::string(kMaxMatrixFileBytes - head.size(), 'x');
  }
  Result<Matrix> at_limit = LoadMatrix(ok);
  ASSERT_TRUE(at_limit.ok()) << at_limit.error().message;
  EXPECT_EQ(at_limit->text.size(), kMaxMatrixFileBytes);
}

}  // namespace
}  // namespace dlbench::config

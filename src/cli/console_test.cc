// The console's retry line (cli/console.h RetryLine), which `run` prints when
// measure.retry_disturbed measures a cell again.
#include "cli/console.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace dlbench::cli {
namespace {

TEST(RetryLineTest, NamesTheCellTheAttemptAndTheReasonOfTheAttemptBefore) {
  EXPECT_EQ(
      RetryLine(2, 5, "bs=8", 2, 3, record::Verdict::kShifted,
                nlohmann::json::array({"shifted: step time changed at step 1400", "another"})),
      "[2/5] bs=8  measuring again: attempt 2 of 3, attempt 1 was shifted: step time changed at step 1400");
}

TEST(RetryLineTest, AReasonThatDoesNotNameItsVerdictGetsIt) {
  EXPECT_EQ(
      RetryLine(1, 1, "c", 3, 3, record::Verdict::kContended, nlohmann::json::array({"cc1plus took 80%"})),
      "[1/1] c  measuring again: attempt 3 of 3, attempt 2 was contended: cc1plus took 80%");
}

TEST(RetryLineTest, WithoutAReasonTheVerdictAloneAndNoTerminalEscapes) {
  EXPECT_EQ(RetryLine(1, 2, "a\x1b[2Jb", 2, 2, record::Verdict::kDrifting, nlohmann::json::array()),
            RetryLine(1, 2, "a\x1b[2Jb", 2, 2, record::Verdict::kDrifting, nlohmann::json()));
  const std::string line =
      RetryLine(1, 2, "a\x1b[2Jb", 2, 2, record::Verdict::kDrifting, nlohmann::json::array());
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  EXPECT_EQ(line.substr(line.find("  measuring")),
            "  measuring again: attempt 2 of 2, attempt 1 was drifting");
}

}  // namespace
}  // namespace dlbench::cli

// The progress file's one codec: what the writer encodes reads back the same, and a reader refuses
// every wrong type instead of throwing or converting it (a double into int64 is undefined).
#include "record/progress.h"

#include <gtest/gtest.h>

#include <string>

namespace dlbench::record {
namespace {

TEST(ProgressCodecTest, EncodedProgressReadsBackUnchanged) {
  const RunProgress p{
      12, 40, 3, "resnet50 bs=32 \"quoted\"", 1'700'000'000'000'000'000, 1'700'000'001'000'000'000, 4321};
  const std::string text = EncodeProgress(p);
  EXPECT_EQ(text.back(), '\n');
  auto back = ParseProgress(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, p);
}

TEST(ProgressCodecTest, AbsentFieldsReadAsZeroAndUnknownOnesAreIgnored) {
  auto p = ParseProgress(R"({"run_id": 3, "host": "h", "future_key": [1]})");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(*p, (RunProgress{3, 0, 0, "", 0, 0, 0}));
}

TEST(ProgressCodecTest, WrongTypesAndRangesAreRefusedWithTheField) {
  const struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"", "not a JSON object with run_id"},
      {"not json", "not a JSON object with run_id"},
      {"[1,2]", "not a JSON object with run_id"},
      {R"({"cells_total": 1})", "not a JSON object with run_id"},
      {R"({"run_id": "x"})", "run_id is not an integer"},
      {R"({"run_id": 1.5})", "run_id is not an integer"},
      {R"({"run_id": 1e300})", "run_id is not an integer"},
      {R"({"run_id": 18446744073709551615})", "run_id is out of range"},
      {R"({"run_id": 1, "cells_done": true})", "cells_done is not an integer"},
      {R"({"run_id": 1, "cells_total": null})", "cells_total is not an integer"},
      {R"({"run_id": 1, "updated_wall_ns": {}})", "updated_wall_ns is not an integer"},
      {R"({"run_id": 1, "pid": -1})", "pid -1 is out of range"},
      {R"({"run_id": 1, "pid": 4294967297})", "pid 4294967297 is out of range"},
      {R"({"run_id": 1, "current_cell": 7})", "current_cell is not a string"},
  };
  for (const auto& c : cases) {
    auto p = ParseProgress(c.text);
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_EQ(p.error().kind, ErrorKind::kInvalidInput) << c.text;
    EXPECT_EQ(p.error().message, std::string("progress file: ") + c.message) << c.text;
  }
}

TEST(ProgressCodecTest, PathIsNextToTheDatabase) {
  EXPECT_EQ(ProgressPath("/a/r.db"), "/a/r.db.progress.json");
}

}  // namespace
}  // namespace dlbench::record

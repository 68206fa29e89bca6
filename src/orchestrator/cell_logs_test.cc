// A runner's log: all of a short stream; of a long one its head, a marker and its tail; the tail
// lines for messages; a full disk (/dev/full) remembered, never fatal.
#include "orchestrator/cell_logs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "common/files.h"

namespace dlbench::orchestrator {
namespace {

class CappedLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("dlbench_capped_log_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const char* name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(CappedLogTest, AShortStreamIsWrittenWhole) {
  CappedLog log(Path("a.log"), 100, 10);
  ASSERT_TRUE(log.Open().ok());
  log.Append("one\n", 4);
  log.Append("two\n", 4);
  log.Close();
  log.Close();  // idempotent
  EXPECT_EQ(ReadFile(Path("a.log")).value(), "one\ntwo\n");
  EXPECT_EQ(log.total_bytes(), 8u);
  EXPECT_EQ(log.dropped_bytes(), 0u);
  EXPECT_FALSE(log.write_error());
  EXPECT_EQ(log.LastLines(1), "two");
  EXPECT_EQ(log.LastLines(5), "one\ntwo");
}

TEST_F(CappedLogTest, ALongStreamKeepsItsHeadAMarkerAndItsTail) {
  CappedLog log(Path("b.log"), 10, 6);
  ASSERT_TRUE(log.Open().ok());
  const std::string stream = "0123456789abcdefghijklmnopqrstuvwxyz";  // 36 bytes
  for (char c : stream) log.Append(&c, 1);
  log.Close();
  EXPECT_EQ(log.total_bytes(), 36u);
  EXPECT_EQ(log.dropped_bytes(), 20u);  // 36 - 10 head - 6 tail
  EXPECT_EQ(
      ReadFile(Path("b.log")).value(),
      "0123456789\n[dlbench: 20 bytes of this stream are not in the log: it keeps the first 10 bytes and "
      "the last 6 (docs/limits.md)]\nuvwxyz");
}

TEST_F(CappedLogTest, TailLinesComeFromMemoryAndDropACutFirstLine) {
  CappedLog log(Path("c.log"), 4, 12);
  ASSERT_TRUE(log.Open().ok());
  for (const char* piece : {"first line\n", "second\n", "third\n", "x\n"})
    log.Append(piece, std::strlen(piece));
  // The kept tail is the stream's last 12 bytes, "ond\nthird\nx\n": its cut first line is dropped.
  EXPECT_EQ(log.LastLines(10), "third\nx");
  EXPECT_EQ(log.LastLines(1), "x");
  log.Close();
}

TEST_F(CappedLogTest, AFullDiskIsRememberedAndTheStreamStillCounted) {
  CappedLog log("/dev/full", 1 << 20, 64);
  ASSERT_TRUE(log.Open().ok());
  log.Append("hello\n", 6);
  log.Append("again\n", 6);
  log.Close();
  ASSERT_TRUE(log.write_error());
  EXPECT_EQ(*log.write_error(), "No space left on device after 0 bytes");
  EXPECT_EQ(log.total_bytes(), 12u);
  EXPECT_EQ(log.dropped_bytes(), 12u);
  EXPECT_EQ(log.LastLines(1), "again");
}

TEST_F(CappedLogTest, AnUnwritablePathIsAnErrorNamingIt) {
  CappedLog log(Path("missing/dir/d.log"));
  const Status st = log.Open();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("missing/dir/d.log"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace dlbench::orchestrator

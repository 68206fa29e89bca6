#include "tfrecord/events.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tfrecord/record.h"

namespace dlbench::tfrecord {
namespace {

namespace fs = std::filesystem;

std::string TempPath(const std::string& name) {
  return (fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()))).string();
}

TEST(EventFileTest, ScalarsRoundTripAfterTheFileVersion) {
  const std::string path = TempPath("events.out.tfevents");
  const std::vector<ScalarEvent> events = {{"train/loss", 1, 1.7e9 + 0.5, 2.25f},
                                           {"train/loss", 2, 1.7e9 + 0.75, 1.5f},
                                           {"eval/accuracy", 2, 1.7e9 + 1, 0.8125f}};
  ASSERT_TRUE(WriteScalarEventFile(path, 1.7e9, events).ok());
  auto read = ReadEventFile(path);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->file_version, "brain.Event:2");
  EXPECT_EQ(read->scalars, events);
  EXPECT_EQ(read->other_events, 0);
  // Every record is framed as TFRecord: the version event, then one per scalar.
  auto file = RecordFile::Open(path);
  ASSERT_TRUE(file.ok());
  auto spans = file->Index();
  ASSERT_TRUE(spans.ok());
  EXPECT_EQ(spans->size(), 4u);
  fs::remove(path);
}

TEST(EventFileTest, ARecordThatIsNotAnEventIsAnErrorWithItsOffset) {
  const std::string path = TempPath("not_events");
  {
    auto w = RecordWriter::Create(path);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->Append(std::string("\x0a\x05", 2)).ok());  // a length-delimited field 1 cut short
    ASSERT_TRUE(w->Close().ok());
  }
  auto read = ReadEventFile(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().message, path + ": the record at byte 0 is not a tensorboard.Event");
  fs::remove(path);
  EXPECT_EQ(ReadEventFile(path).error().kind, ErrorKind::kNotFound);
}

}  // namespace
}  // namespace dlbench::tfrecord

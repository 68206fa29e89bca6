#include "report/tensorboard.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "record/metrics.h"
#include "record/series.h"

namespace dlbench::report {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kT0 = 12'000'000'000;  // CLOCK_MONOTONIC of the first step

// A converge cell: 4 steps of 10 ms with 1 ms between, an evaluation after step 2 and step 4, a
// GPU sampled twice, and a host series that is not exported.
record::CellRecord Cell() {
  record::CellRecord c;
  c.index = 3;
  c.label = "fashion_cnn bs=64 / fp32";
  c.started_wall_ns = 1'700'000'000'000'000'000;
  c.window = record::MeasuredWindow{0, 4};
  record::SetMetric(c, record::metric::kTimeToMeasureS, 2.0);
  for (int i = 0; i < 4; ++i) {
    record::StepRecord r;
    r.start_ns = kT0 + i * 11'000'000;
    r.end_ns = r.start_ns + 10'000'000;
    r.samples = 64;
    c.steps.push_back({0, r});
    c.series.push_back({r.end_ns, std::string(record::series::kTrainLoss), 2.0 - 0.25 * i});
  }
  c.series.push_back({kT0 + 21'500'000, std::string(record::series::kEvalAccuracy), 0.5});
  c.series.push_back({kT0 + 43'500'000, std::string(record::series::kEvalAccuracy), 0.75});
  c.series.push_back({kT0 + 5'000'000, record::series::GpuSeriesName(0, record::series::kPowerW), 250});
  c.series.push_back({kT0 + 30'000'000, record::series::GpuSeriesName(0, record::series::kPowerW), 300});
  c.series.push_back({kT0 + 30'000'000, std::string(record::series::kHostCpuUtilPct), 40});
  return c;
}

std::vector<tfrecord::ScalarEvent> WithTag(const std::vector<tfrecord::ScalarEvent>& all,
                                           const std::string& tag) {
  std::vector<tfrecord::ScalarEvent> out;
  for (const auto& e : all)
    if (e.tag == tag) out.push_back(e);
  return out;
}

TEST(TensorBoardTest, ScalarsAreTheStoredSeriesOnTheStepAxis) {
  const record::CellRecord c = Cell();
  const auto scalars = TensorBoardScalars(c);
  const auto loss = WithTag(scalars, "train/loss");
  ASSERT_EQ(loss.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(loss[i].step, i + 1) << "a step's loss sits at that step";
    EXPECT_EQ(loss[i].value, static_cast<float>(2.0 - 0.25 * i));
  }
  // Wall time: started + time_to_measure_s at the first step's start, then the steps' clock.
  EXPECT_DOUBLE_EQ(loss[0].wall_time, 1'700'000'000.0 + 2.0 + 0.010);
  const auto accuracy = WithTag(scalars, "eval/accuracy");
  ASSERT_EQ(accuracy.size(), 2u);
  EXPECT_EQ(accuracy[0].step, 2);
  EXPECT_EQ(accuracy[1].step, 4);
  EXPECT_EQ(accuracy[1].value, 0.75f);
  const auto power = WithTag(scalars, "gpu0/power_w");
  ASSERT_EQ(power.size(), 2u);
  EXPECT_EQ(power[0].step, 0);
  EXPECT_EQ(power[1].step, 2);
  const auto times = WithTag(scalars, "step/time_ms");
  ASSERT_EQ(times.size(), 4u);
  EXPECT_FLOAT_EQ(times[0].value, 10.0f);
  EXPECT_FLOAT_EQ(WithTag(scalars, "step/samples_per_s")[0].value, 6400.0f);
  for (const auto& e : scalars) EXPECT_EQ(e.tag.find("host"), std::string::npos) << e.tag;
  EXPECT_EQ(TensorBoardCellFolder(c), "cell-0003-fashion_cnn_bs=64___fp32");
}

class TensorBoardFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tensorboard_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(TensorBoardFiles, TheEventFilesReadBackAsWritten) {
  record::RunRecord run;
  run.id = 7;
  const std::vector<record::CellRecord> cells = {Cell()};
  auto files = WriteTensorBoard(run, cells, (dir_ / "tb").string());
  ASSERT_TRUE(files.ok()) << files.error().message;
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0], (dir_ / "tb" / "cell-0003-fashion_cnn_bs=64___fp32" /
                          "events.out.tfevents.1700000000.dlbench-run7")
                             .string());
  auto read = tfrecord::ReadEventFile((*files)[0]);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->file_version, tfrecord::kEventFileVersion);
  EXPECT_EQ(read->other_events, 0);
  EXPECT_EQ(read->scalars, TensorBoardScalars(cells[0]));
  // A second export of the run replaces its own file and adds none.
  ASSERT_TRUE(WriteTensorBoard(run, cells, (dir_ / "tb").string()).ok());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "tb" / "cell-0003-fashion_cnn_bs=64___fp32"),
                          fs::directory_iterator()),
            1);
}

TEST_F(TensorBoardFiles, WhatIsNotADirectoryIsNeverReplaced) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "keep";
  record::RunRecord run;
  auto onto_file = WriteTensorBoard(run, {Cell()}, (dir_ / "file").string());
  ASSERT_FALSE(onto_file.ok());
  EXPECT_NE(onto_file.error().message.find("exists and is a file"), std::string::npos)
      << onto_file.error().message;
  fs::create_directory_symlink(dir_, dir_ / "link");
  auto onto_link = WriteTensorBoard(run, {Cell()}, (dir_ / "link").string());
  ASSERT_FALSE(onto_link.ok());
  EXPECT_NE(onto_link.error().message.find("a symbolic link"), std::string::npos);
  fs::create_directories(dir_ / "out");
  ASSERT_EQ(::mkfifo((dir_ / "out" / "cell-0003-fashion_cnn_bs=64___fp32").c_str(), 0600), 0);
  auto onto_fifo = WriteTensorBoard(run, {Cell()}, (dir_ / "out").string());
  ASSERT_FALSE(onto_fifo.ok());
  EXPECT_NE(onto_fifo.error().message.find("not a directory"), std::string::npos);
  std::ifstream in(dir_ / "file");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(in)), {}), "keep");
}

}  // namespace
}  // namespace dlbench::report

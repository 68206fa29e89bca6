// The input pipeline through the real `dlbench run` and dlbench-torch: a matrix over data sources
// and worker counts on a generated JPEG folder and TFRecords trains a tiny ResNet, stores every
// step split into waiting and computing with the workers' metrics; corrupt and empty inputs end
// their own cells with messages naming the file, skip_corrupt counts them, and the matrix goes on.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "data/dataset_writer.h"
#include "e2e_util.h"
#include "record/metrics.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

TEST(TorchDataE2E, AMatrixOverDataSourcesRunsAndBadInputsEndOnlyTheirCells) {
  TempDir dir("torch_data");
  torchrunner::data::DatasetSpec spec;
  spec.classes = 3;
  spec.per_class = 6;
  spec.texture = 10;
  ASSERT_TRUE(torchrunner::data::WriteJpegFolder(dir / "jpeg", spec).ok());
  ASSERT_TRUE(torchrunner::data::WriteTfRecords(dir / "train", 2, spec).ok());
  spec.classes = 2;
  spec.per_class = 3;
  ASSERT_TRUE(torchrunner::data::WriteJpegFolder(dir / "corrupt", spec).ok());
  const std::string bad = dir / "corrupt/class_000/img_00002.jpg";
  {
    auto bytes = ReadFile(bad);
    ASSERT_TRUE(bytes.ok());
    WriteText(bad, bytes->substr(0, bytes->size() / 2));
  }
  std::filesystem::create_directories(dir / "empty");

  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, R"(runner: torch
matrix:
  model: resnet50
  image_size: 32
  base_width: 8
  num_classes: 4
  batch_size: 4
  lr: 0.01
  device: cpu
  threads: 1
  data: [device, host, jpeg_dir]
  data_path: )" + dir / "jpeg" +
                        R"(
  data_workers: [1, 2]
exclude:
  - {data: device, data_workers: 2}
  - {data: host, data_workers: 2}
include:
  - {model: resnet50, image_size: 32, base_width: 8, num_classes: 4, batch_size: 4, lr: 0.01, device: cpu,
     threads: 1, data: tfrecord, data_path: ")" +
                        dir / "train-*" + R"(", data_workers: 1}
  - {model: resnet50, image_size: 32, base_width: 8, num_classes: 4, batch_size: 4, lr: 0.01, device: cpu,
     threads: 1, data: jpeg_dir, data_path: ")" +
                        dir / "corrupt" + R"(", data_workers: 1, skip_corrupt: false}
  - {model: resnet50, image_size: 32, base_width: 8, num_classes: 4, batch_size: 4, lr: 0.01, device: cpu,
     threads: 1, data: jpeg_dir, data_path: ")" +
                        dir / "corrupt" + R"(", data_workers: 1, skip_corrupt: true}
  - {model: resnet50, image_size: 32, base_width: 8, num_classes: 4, batch_size: 4, lr: 0.01, device: cpu,
     threads: 1, data: jpeg_dir, data_path: ")" +
                        dir / "empty" + R"(", data_workers: 1}
  # batch_size 8 is no axis value, so this entry is a cell of its own rather than extending one.
  - {model: resnet50, image_size: 32, base_width: 8, num_classes: 4, batch_size: 8, lr: 0.01, device: cpu,
     threads: 1, data: jpeg_dir, data_path: ")" +
                        dir / "jpeg" + R"(", data_workers: 1, pipeline_only: true}
timeout_s: 120
measure:
  min_steps: 5
  min_time_s: 0.2
  max_time_s: 1.5
  target_rel_ci: 0.5
)");
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  auto store = store::OpenSqliteStore(db);
  ASSERT_TRUE(store.ok()) << run.err;
  store::CellQuery q;
  q.with_steps = true;
  auto cells = (*store)->GetCells(1, q);
  ASSERT_TRUE(cells.ok()) << cells.error().message;
  ASSERT_EQ(cells->size(), 9u) << run.out << run.err;

  int ok = 0;
  for (const auto& c : *cells) {
    const std::string data = c.params.value("data", std::string());
    const std::string path = c.params.value("data_path", std::string());
    SCOPED_TRACE(c.label + ": " + c.message);
    // A runner's ERROR invalid is the cell's outcome error, "invalid configuration: ..."
    // (record/outcome.h).
    if (path == dir / "empty") {
      EXPECT_EQ(c.outcome, record::Outcome::kError);
      EXPECT_EQ(c.message.rfind("invalid configuration: ", 0), 0u);
      EXPECT_NE(c.message.find(dir / "empty"), std::string::npos);
      continue;
    }
    if (path == dir / "corrupt" && !c.params.value("skip_corrupt", false)) {
      EXPECT_EQ(c.outcome, record::Outcome::kError);
      EXPECT_EQ(c.message.rfind("invalid configuration: ", 0), 0u);
      EXPECT_NE(c.message.find(bad), std::string::npos) << "the message names the corrupt file";
      continue;
    }
    EXPECT_EQ(c.outcome, record::Outcome::kOk);
    if (c.outcome != record::Outcome::kOk) continue;
    ++ok;
    EXPECT_GT(record::MetricValue(c, record::metric::kSamplesPerS).value_or(0), 0);
    EXPECT_FALSE(c.extras.contains("undeclared_metrics")) << c.extras.dump();
    EXPECT_EQ(c.effective.value("data", std::string()), data);
    ASSERT_FALSE(c.steps.empty());
    const bool pipeline_only = c.params.value("pipeline_only", false);
    for (const auto& row : c.steps) {
      EXPECT_TRUE(row.record.present & record::kHasDataWait) << "stored with its data wait";
      EXPECT_EQ((row.record.present & record::kHasCompute) != 0, !pipeline_only);
    }
    if (data == "jpeg_dir" || data == "tfrecord") {
      EXPECT_TRUE(record::MetricValue(c, record::metric::kDataWorkerCpuUtilPct))
          << "the workers' CPU is stored";
      EXPECT_TRUE(record::MetricValue(c, record::metric::kDataSamplesPerWorkerS));
      EXPECT_EQ(c.effective.value("data_workers", 0), c.params.value("data_workers", 0));
    }
    if (path == dir / "corrupt") {
      EXPECT_EQ(record::MetricValue(c, record::metric::kDataCorruptInputs), 1.0);
    }
    // Every ok cell reading host data is compared with the matrix's own data: device cell (the
    // plan reuses it rather than adding one: the run has 9 cells, as the matrix says).
    if (data != "device" && !pipeline_only) {
      ASSERT_TRUE(c.extras.contains("input_verdict")) << c.extras.dump();
      const auto& v = c.extras["input_verdict"];
      EXPECT_TRUE(v["bound"].is_string()) << v.dump();
      EXPECT_FALSE(v.value("control_label", std::string()).empty()) << v.dump();
      EXPECT_TRUE(record::MetricValue(c, record::metric::kInputControlSpeedup)) << "the control's speed-up";
      EXPECT_TRUE(record::MetricValue(c, record::metric::kInputWaitSharePct));
    } else {
      EXPECT_FALSE(c.extras.contains("input_verdict")) << c.label;
    }
  }
  EXPECT_EQ(ok, 7);
  EXPECT_EQ(run.exit_code, 1) << "two failed cells make run exit 1\n" << run.out << run.err;
}

// One decode worker on large JPEGs feeding a tiny model: the cell waits for its batches, and the
// verdict says so against the control the plan adds (the matrix names no data: device cell).
TEST(TorchDataE2E, ACellStarvedByItsDecoderIsInputBoundAgainstTheAddedControl) {
  TempDir dir("torch_input_bound");
  torchrunner::data::DatasetSpec spec;
  spec.classes = 2;
  spec.per_class = 8;
  spec.width = 1024;
  spec.height = 768;
  spec.texture = 40;
  ASSERT_TRUE(torchrunner::data::WriteJpegFolder(dir / "big", spec).ok());
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, R"(runner: torch
matrix:
  model: resnet50
  image_size: 32
  base_width: 8
  num_classes: 2
  batch_size: 8
  lr: 0.01
  device: cpu
  threads: 1
  data: jpeg_dir
  data_path: )" + dir / "big" +
                        R"(
  data_workers: 1
  prefetch: 1
timeout_s: 120
measure:
  min_steps: 5
  min_time_s: 0.5
  max_time_s: 2
  target_rel_ci: 0.5
)");
  auto plan = Dlbench({"plan", matrix}, dir, db);
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.out.find("(control)"), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("1 of them (control) added"), std::string::npos) << plan.out;

  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto store = store::OpenSqliteStore(db);
  ASSERT_TRUE(store.ok());
  auto cells = (*store)->GetCells(1, store::CellQuery{});
  ASSERT_TRUE(cells.ok());
  ASSERT_EQ(cells->size(), 2u);
  const record::CellRecord& control = (*cells)[0];
  const record::CellRecord& cell = (*cells)[1];
  EXPECT_EQ(control.params.value("data", std::string()), "device") << "the control runs first";
  EXPECT_EQ(control.params.count("data_workers"), 0u);
  ASSERT_EQ(cell.outcome, record::Outcome::kOk) << cell.message;
  const auto& v = cell.extras["input_verdict"];
  EXPECT_EQ(v.value("bound", std::string()), "input-bound") << v.dump() << "\n" << run.out;
  EXPECT_EQ(v.value("control_cell", std::string()), control.cell_id);
  EXPECT_GT(record::MetricValue(cell, record::metric::kInputWaitSharePct).value_or(0), 20) << v.dump();
  EXPECT_GT(record::MetricValue(cell, record::metric::kInputControlSpeedup).value_or(0), 1.05);

  auto show = Dlbench({"show", "latest"}, dir, db);
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("Input pipeline"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("input-bound (control: "), std::string::npos) << show.out;
}

}  // namespace
}  // namespace dlbench::e2e

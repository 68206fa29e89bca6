// dlbench-torch with each data source, through its protocol pipes (runner_harness), on data sets
// made here: the effective cell says what ran, every step is split into waiting, copying and
// computing, the workers' EXTRAS are declared metrics, and bad input ends one cell with a clear
// ERROR (or, with skip_corrupt, is counted) and never a crash.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "data/data_options.h"
#include "data/dataset_writer.h"
#include "record/metrics.h"
#include "runner_harness.h"
#include "tfrecord/example.h"
#include "tfrecord/record.h"

namespace dlbench::torchrunner {
namespace {

using nlohmann::json;
using testing::CellTranscript;
using testing::HarnessOptions;

const std::string kRunner = std::string(DLBENCH_BIN_DIR) + "/dlbench-torch";

class DataCells : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/dlbench_datacells_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    data::DatasetSpec spec;
    spec.classes = 3;
    spec.per_class = 4;
    spec.texture = 10;
    ASSERT_TRUE(data::WriteJpegFolder(dir_ + "/jpeg", spec).ok());
    ASSERT_TRUE(data::WriteTfRecords(dir_ + "/train", 2, spec).ok());
    spec.classes = 2;
    spec.per_class = 3;
    ASSERT_TRUE(data::WriteJpegFolder(dir_ + "/corrupt", spec).ok());
    const std::string bad = dir_ + "/corrupt/class_001/img_00001.jpg";
    std::ifstream in(bad, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(bad, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
    ASSERT_EQ(mkdir((dir_ + "/empty").c_str(), 0755), 0);
    const std::string good = tfrecord::FrameRecord(tfrecord::EncodeImageExample("x", 0));
    std::string bad_crc = good;
    bad_crc[tfrecord::kHeaderBytes + 1] ^= 0x01;
    std::ofstream(dir_ + "/cut.tfrecord", std::ios::binary) << good << good.substr(0, 7);
    std::ofstream(dir_ + "/crc.tfrecord", std::ios::binary) << bad_crc;
    std::ofstream(dir_ + "/nokey.tfrecord", std::ios::binary) << tfrecord::FrameRecord(
        tfrecord::EncodeImageExample("x", 0, tfrecord::ImageKeys{"img", "image/class/label"}));
  }
  static void TearDownTestSuite() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // A tiny ResNet that trains on 32x32 images in well under a second per step.
  static json Tiny(const std::string& data) {
    return {{"model", "resnet50"}, {"image_size", 32},   {"base_width", 8}, {"num_classes", 10},
            {"batch_size", 4},     {"lr", 0.01},         {"threads", 1},    {"device", "cpu"},
            {"data", data},        {"shuffle_buffer", 0}};
  }
  static CellTranscript Run(const json& params, std::int64_t stop_after = 6) {
    protocol::CellConfig c;
    c.params = params;
    c.seed = 5;
    c.limits.max_steps = 10'000;
    c.limits.max_time_s = 120.0;
    c.cell_key = "data";
    HarnessOptions options;
    options.stop_after_steps = stop_after;
    auto t = testing::RunCell(kRunner, c, options);
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    if (!t.ok()) return {};
    EXPECT_TRUE(t->exit.success()) << t->exit.Describe();
    return std::move(*t);
  }
  static std::optional<double> ExtrasMetric(const CellTranscript& t, std::string_view name) {
    for (const json& extras : t.extras) {
      for (const json& m : extras.at("metrics")) {
        if (m.value("name", "") == name) return m.value("value", 0.0);
      }
    }
    return std::nullopt;
  }
  static std::string dir_;
};
std::string DataCells::dir_;

TEST_F(DataCells, JpegDirTrainsWithItsStepsSplitAndItsWorkersReported) {
  json params = Tiny("jpeg_dir");
  params["data_path"] = dir_ + "/jpeg";
  params["data_workers"] = 2;
  const CellTranscript t = Run(params);
  ASSERT_FALSE(t.error) << t.error->dump();
  ASSERT_TRUE(t.ready);
  const json& e = *t.ready;
  EXPECT_EQ(e.value("data", ""), "jpeg_dir");
  EXPECT_EQ(e.value("data_workers", 0), 2);
  EXPECT_EQ(e.value("data_workers_requested", json()), 2);
  EXPECT_EQ(e.at("data_source").value("samples", 0), 12);
  EXPECT_EQ(e.at("data_source").value("classes", 0), 3);
  EXPECT_EQ(e.at("step_phases").value("remainder", ""), "copy");
  ASSERT_GE(t.steps.size(), 6u);
  for (const auto& s : t.steps) {
    ASSERT_TRUE(s.present & record::kHasDataWait);
    ASSERT_TRUE(s.present & record::kHasCompute);
    EXPECT_EQ(s.samples, 4u);
    EXPECT_GE(s.data_wait_ns, 0);
    EXPECT_GT(s.compute_ns, 0);
    EXPECT_LE(s.data_wait_ns + s.compute_ns, s.end_ns - s.start_ns) << "the phases lie inside the step";
  }
  // Every runner metric is declared, with its declared unit (or dlbench would not store it).
  for (const json& extras : t.extras) {
    for (const json& m : extras.at("metrics")) {
      const record::MetricDef* def = record::FindMetricDef(m.value("name", ""));
      ASSERT_NE(def, nullptr) << "undeclared runner metric " << m.dump();
      EXPECT_EQ(m.value("unit", ""), def->unit) << m.dump();
    }
  }
  const auto cpu = ExtrasMetric(t, record::metric::kDataWorkerCpuUtilPct);
  ASSERT_TRUE(cpu);
  EXPECT_GT(*cpu, 0.0);
  EXPECT_LE(*cpu, 100.0 * 1.05);
  EXPECT_TRUE(ExtrasMetric(t, record::metric::kDataSamplesPerWorkerS));
  const auto read = ExtrasMetric(t, record::metric::kDataReadPct);
  const auto decode = ExtrasMetric(t, record::metric::kDataDecodePct);
  const auto transform = ExtrasMetric(t, record::metric::kDataTransformPct);
  ASSERT_TRUE(read && decode && transform);
  EXPECT_NEAR(*read + *decode + *transform, 100.0, 1e-6);
  const json& workers = t.extras.at(0).at("info").at("data_workers");
  ASSERT_EQ(workers.size(), 2u);
  for (const json& w : workers)
    EXPECT_GT(w.value("batches", 0), 0) << "both workers made batches: " << w.dump();
  ASSERT_TRUE(t.done);
}

TEST_F(DataCells, AutoWorkersAreResolvedFromTheCoresAndRecorded) {
  json params = Tiny("jpeg_dir");
  params["data_path"] = dir_ + "/jpeg";
  const CellTranscript t = Run(params, 3);
  ASSERT_TRUE(t.ready) << (t.error ? t.error->dump() : "");
  EXPECT_EQ(t.ready->value("data_workers_requested", json()), "auto");
  EXPECT_EQ(t.ready->value("usable_cores", 0), UsableCores());
  EXPECT_EQ(t.ready->value("data_workers", 0), ResolveDataWorkers(std::nullopt, UsableCores()));
}

TEST_F(DataCells, TfRecordsTrainLikeTheFolder) {
  json params = Tiny("tfrecord");
  params["data_path"] = dir_ + "/train-*";
  params["data_workers"] = 1;
  const CellTranscript t = Run(params, 4);
  ASSERT_FALSE(t.error) << t.error->dump();
  EXPECT_EQ(t.ready->at("data_source").value("files", 0), 2);
  EXPECT_EQ(t.ready->at("data_source").value("samples", 0), 12);
  ASSERT_TRUE(t.done);
}

TEST_F(DataCells, HostAndDeviceReportNoWaitAndTheirCompute) {
  for (const std::string data : {"device", "host"}) {
    const CellTranscript t = Run(Tiny(data), 4);
    ASSERT_FALSE(t.error) << data << ": " << t.error->dump();
    EXPECT_EQ(t.ready->value("data", ""), data);
    for (const auto& s : t.steps) {
      ASSERT_TRUE(s.present & record::kHasDataWait) << data;
      ASSERT_TRUE(s.present & record::kHasCompute) << data;
      EXPECT_EQ(s.data_wait_ns, 0) << data << ": nothing to wait for";
      EXPECT_LE(s.compute_ns, s.end_ns - s.start_ns) << data;
    }
  }
}

TEST_F(DataCells, PipelineOnlyRunsNoModel) {
  json params = Tiny("jpeg_dir");
  params["data_path"] = dir_ + "/jpeg";
  params["data_workers"] = 1;
  params["pipeline_only"] = true;
  const CellTranscript t = Run(params, 5);
  ASSERT_FALSE(t.error) << t.error->dump();
  EXPECT_EQ(t.ready->value("pipeline_only", false), true);
  ASSERT_GE(t.steps.size(), 5u);
  for (const auto& s : t.steps) {
    EXPECT_TRUE(s.present & record::kHasDataWait);
    EXPECT_FALSE(s.present & record::kHasCompute) << "pipeline_only computes nothing";
    EXPECT_EQ(s.samples, 4u);
  }
  ASSERT_TRUE(t.done);
  EXPECT_FALSE(t.extras.at(0).at("info").contains("final_loss")) << "no training step ran";
}

TEST_F(DataCells, SkipCorruptCountsTheBadJpegAndGoesOn) {
  json params = Tiny("jpeg_dir");
  params["data_path"] = dir_ + "/corrupt";
  params["data_workers"] = 1;
  params["skip_corrupt"] = true;
  const CellTranscript t = Run(params, 4);
  ASSERT_FALSE(t.error) << t.error->dump();
  ASSERT_TRUE(t.done);
  EXPECT_EQ(ExtrasMetric(t, record::metric::kDataCorruptInputs), 1.0);
  EXPECT_GE(ExtrasMetric(t, record::metric::kDataSkippedSamples).value_or(0), 1.0);
  const json& examples = t.extras.at(0).at("info").at("data_corrupt_examples");
  ASSERT_EQ(examples.size(), 1u);
  EXPECT_NE(examples[0].get<std::string>().find("class_001/img_00001.jpg"), std::string::npos)
      << examples.dump();
}

struct BadCase {
  const char* name;
  json overrides;
  const char* kind;
  std::vector<std::string> message_parts;
  bool ready;  // whether the cell got as far as READY (the problem shows in a step)
};

TEST_F(DataCells, BadInputEndsTheCellWithAClearError) {
  const std::vector<BadCase> cases = {
      {"empty folder",
       {{"data", "jpeg_dir"}, {"data_path", dir_ + "/empty"}},
       "invalid",
       {dir_ + "/empty", "holds no class sub-folder"},
       false},
      {"missing folder",
       {{"data", "jpeg_dir"}, {"data_path", dir_ + "/nope"}},
       "invalid",
       {dir_ + "/nope"},
       false},
      {"corrupt jpeg",
       {{"data", "jpeg_dir"}, {"data_path", dir_ + "/corrupt"}, {"data_workers", 1}},
       "invalid",
       {dir_ + "/corrupt/class_001/img_00001.jpg", "corrupt JPEG"},
       true},
      {"truncated record",
       {{"data", "tfrecord"}, {"data_path", dir_ + "/cut.tfrecord"}},
       "invalid",
       {dir_ + "/cut.tfrecord", "truncated record at byte"},
       false},
      {"bad CRC",
       {{"data", "tfrecord"}, {"data_path", dir_ + "/crc.tfrecord"}, {"data_workers", 1}},
       "invalid",
       {dir_ + "/crc.tfrecord", "corrupt record at byte 0", "CRC"},
       true},
      {"missing key",
       {{"data", "tfrecord"}, {"data_path", dir_ + "/nokey.tfrecord"}, {"data_workers", 1}},
       "invalid",
       {dir_ + "/nokey.tfrecord, record at byte 0", "no feature 'image/encoded'"},
       true},
      {"glob matching nothing",
       {{"data", "tfrecord"}, {"data_path", dir_ + "/none-*"}},
       "invalid",
       {"matches no file"},
       false},
      {"no data_path", {{"data", "jpeg_dir"}}, "invalid", {"needs data_path"}, false},
      {"pipeline_only without a pipeline", {{"pipeline_only", true}}, "invalid", {"pipeline_only"}, false},
      {"more classes than the model",
       {{"data", "jpeg_dir"}, {"data_path", dir_ + "/jpeg"}, {"num_classes", 2}},
       "invalid",
       {"has 3 classes", "num_classes 2"},
       false},
      {"pin_memory on the CPU",
       {{"data", "host"}, {"pin_memory", true}},
       "unsupported",
       {"pin_memory does not apply on the CPU"},
       false},
      {"async_copy on the CPU",
       {{"data", "host"}, {"async_copy", true}},
       "unsupported",
       {"async_copy does not apply on the CPU"},
       false},
      {"a load scenario",
       {{"data", "host"}, {"scenario", "infer"}, {"load", "single_stream"}},
       "unsupported",
       {"data: host feeds train and infer steps, not load scenarios"},
       false},
      {"a model without an image input",
       {{"model", "bert_base"},
        {"layers", 1},
        {"hidden_size", 32},
        {"heads", 2},
        {"seq_len", 16},
        {"vocab_size", 100},
        {"num_classes", 2},
        {"data", "jpeg_dir"},
        {"data_path", dir_ + "/jpeg"}},
       "unsupported",
       {"feeds image models", "bert_base"},
       false},
  };
  for (const BadCase& c : cases) {
    json params = Tiny("device");
    for (const auto& [k, v] : c.overrides.items()) params[k] = v;
    const CellTranscript t = Run(params);
    ASSERT_TRUE(t.error) << c.name << ": expected an ERROR";
    EXPECT_EQ(t.error->value("kind", ""), c.kind) << c.name << ": " << t.error->dump();
    const std::string message = t.error->value("message", "");
    for (const std::string& part : c.message_parts) {
      EXPECT_NE(message.find(part), std::string::npos) << c.name << ": " << message;
    }
    EXPECT_EQ(t.ready.has_value(), c.ready) << c.name;
    EXPECT_FALSE(t.done) << c.name;
  }
}

}  // namespace
}  // namespace dlbench::torchrunner

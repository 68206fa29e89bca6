// The data keys as the runner reads them (no LibTorch): defaults, every key, the errors' messages,
// the CPU rules for CUDA-only knobs, and how auto resolves the worker count.
#include "data/data_options.h"

#include <gtest/gtest.h>

#include "cell_options.h"

namespace dlbench::torchrunner {
namespace {

using nlohmann::json;

// The data keys as ParseTorchCell reads them: through the registry's checks (RunnerParams).
Result<DataOptions> ParseData(json params) {
  params["model"] = "resnet50";
  auto cell = ParseTorchCell(params);
  if (!cell.ok()) return cell.error();
  return cell->data;
}

TEST(ParseDataOptions, DefaultsAreTheDeviceBatch) {
  auto d = ParseData(json::object());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->source, DataSource::kDevice);
  EXPECT_FALSE(d->workers.has_value());
  EXPECT_EQ(d->prefetch, 2);
  EXPECT_EQ(d->shuffle_buffer, 10000);
  EXPECT_FALSE(d->pin_memory || d->async_copy || d->cache || d->skip_corrupt || d->pipeline_only);
  EXPECT_FALSE(d->from_host());
}

TEST(ParseDataOptions, ReadsEveryKey) {
  auto d = ParseData({{"data", "tfrecord"},
                      {"data_path", "/d/train-*"},
                      {"data_workers", 6},
                      {"prefetch", 4},
                      {"pin_memory", true},
                      {"async_copy", true},
                      {"cache", true},
                      {"shuffle_buffer", 0},
                      {"skip_corrupt", true},
                      {"pipeline_only", true}});
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->source, DataSource::kTfRecord);
  EXPECT_STREQ(DataSourceName(d->source), "tfrecord");
  EXPECT_EQ(d->path, "/d/train-*");
  EXPECT_EQ(d->workers, 6);
  EXPECT_EQ(d->prefetch, 4);
  EXPECT_TRUE(d->pin_memory && d->async_copy && d->cache && d->skip_corrupt && d->pipeline_only);
  EXPECT_EQ(d->shuffle_buffer, 0);
  EXPECT_TRUE(d->decodes());
  auto automatic = ParseData({{"data", "jpeg_dir"}, {"data_path", "/d"}, {"data_workers", "auto"}});
  ASSERT_TRUE(automatic.ok());
  EXPECT_FALSE(automatic->workers.has_value());
}

TEST(ParseDataOptions, BadValuesNameTheKeyAndWhatItTakes) {
  struct Case {
    json params;
    const char* message_part;
  };
  const std::vector<Case> cases = {
      {{{"data", "s3"}}, "parameter 'data'"},
      {{{"data", "jpeg_dir"}}, "data: jpeg_dir needs data_path"},
      {{{"data", "tfrecord"}, {"data_path", ""}}, "data: tfrecord needs data_path"},
      {{{"data_path", 3}}, "parameter 'data_path'"},
      {{{"data_workers", 0}}, "parameter 'data_workers': expected an integer between 1 and 256 or auto"},
      {{{"data_workers", "many"}}, "parameter 'data_workers': expected an integer between 1 and 256 or auto"},
      {{{"data_workers", 300}}, "300"},
      {{{"prefetch", 0}}, "parameter 'prefetch'"},
      {{{"shuffle_buffer", -1}}, "parameter 'shuffle_buffer'"},
      {{{"cache", "yes"}}, "parameter 'cache'"},
      {{{"pipeline_only", true}}, "pipeline_only: true needs a pipeline"},
  };
  for (const Case& c : cases) {
    auto d = ParseData(c.params);
    ASSERT_FALSE(d.ok()) << c.params.dump();
    EXPECT_EQ(d.error().kind, ErrorKind::kInvalidInput);
    EXPECT_NE(d.error().message.find(c.message_part), std::string::npos) << d.error().message;
  }
}

TEST(CheckDataSupported, CudaOnlyKnobsDoNotApplyOnTheCpu) {
  DataOptions d;
  d.source = DataSource::kHost;
  EXPECT_TRUE(CheckDataSupported(d, false).ok());
  for (bool pin : {true, false}) {
    DataOptions k = d;
    k.pin_memory = pin;
    k.async_copy = !pin;
    Status s = CheckDataSupported(k, /*cuda_device=*/false);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().kind, ErrorKind::kUnsupported);
    EXPECT_NE(
        s.error().message.find(std::string(pin ? "pin_memory" : "async_copy") + " does not apply on the CPU"),
        std::string::npos)
        << s.error().message;
    EXPECT_TRUE(CheckDataSupported(k, /*cuda_device=*/true).ok());
  }
  // Through the cell: the rule sits in CheckSupported with the others.
  auto cell = ParseTorchCell({{"model", "resnet50"}, {"data", "host"}, {"pin_memory", true}});
  ASSERT_TRUE(cell.ok());
  EXPECT_EQ(cell->data.source, DataSource::kHost);
  const Status st = CheckSupported(*cell, Capabilities{1, false, 0, std::nullopt});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind, ErrorKind::kUnsupported);
}

TEST(ResolveDataWorkers, AutoLeavesOneCoreForTheLoop) {
  EXPECT_EQ(ResolveDataWorkers(std::nullopt, 1), 1);
  EXPECT_EQ(ResolveDataWorkers(std::nullopt, 2), 1);
  EXPECT_EQ(ResolveDataWorkers(std::nullopt, 16), 15);
  EXPECT_EQ(ResolveDataWorkers(4, 2), 4) << "a request is taken as given";
  EXPECT_GE(UsableCores(), 1);
}

}  // namespace
}  // namespace dlbench::torchrunner

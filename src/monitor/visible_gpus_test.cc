// monitor/visible_gpus.h over the fake NVML: the GPUs a plan-time check counts.
#include "monitor/visible_gpus.h"

#include <gtest/gtest.h>

#include "monitor/fake_nvml.h"

namespace dlbench::monitor {
namespace {

TEST(VisibleGpusTest, CudaVisibleDevicesCountsEntriesUntilTheFirstInvalidOne) {
  EXPECT_EQ(CudaVisibleEntries("0,1"), 2);
  EXPECT_EQ(CudaVisibleEntries("3"), 1);
  EXPECT_EQ(CudaVisibleEntries(""), 0);
  EXPECT_EQ(CudaVisibleEntries("-1"), 0);
  EXPECT_EQ(CudaVisibleEntries("0,-1,2"), 1);
  EXPECT_EQ(CudaVisibleEntries("0,,2"), 1);
  EXPECT_EQ(CudaVisibleEntries("GPU-8f3e0c1a,1"), 2);
}

TEST(VisibleGpusTest, NvmlsCountBoundedByCudaVisibleDevices) {
  FakeNvml fake;
  fake.gpus = {FakeGpu{}, FakeGpu{}, FakeGpu{}, FakeGpu{}};
  const NvmlApi api = fake.Api();
  auto all = CountVisibleGpus(&api, std::nullopt);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->count, 4);
  EXPECT_EQ(all->from, "NVML: 4 GPUs");
  EXPECT_EQ(fake.init_calls, 1);
  EXPECT_EQ(fake.shutdown_calls, 1);

  auto two = CountVisibleGpus(&api, std::string("0,1"));
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->count, 2);
  EXPECT_EQ(two->from, "NVML: 4 GPUs, CUDA_VISIBLE_DEVICES=0,1 keeps 2");
  auto more = CountVisibleGpus(&api, std::string("0,1,2,3,4,5"));
  EXPECT_EQ(more->count, 4) << "the variable cannot add GPUs";

  fake.gpus.clear();
  auto none = CountVisibleGpus(&api, std::nullopt);
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->count, 0);
  EXPECT_EQ(none->from, "NVML: 0 GPUs");

  fake.init_result = kNvmlErrorDriverNotLoaded;
  EXPECT_FALSE(CountVisibleGpus(&api, std::nullopt).has_value())
      << "a driver that does not answer says nothing";
  auto only_variable = CountVisibleGpus(&api, std::string("0"));
  ASSERT_TRUE(only_variable.has_value());
  EXPECT_EQ(only_variable->count, 1);
  EXPECT_EQ(only_variable->from, "CUDA_VISIBLE_DEVICES=0");
  EXPECT_FALSE(CountVisibleGpus(nullptr, std::nullopt).has_value()) << "no NVML library";
}

}  // namespace
}  // namespace dlbench::monitor

// step_profile.h on the CPU: the request's checks, a summary of real operator events, and the
// rule that an output is written only where nothing but a regular file is.
#include "step_profile.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace dlbench::torchrunner {
namespace {

std::string TempFolder(const std::string& name) {
  std::string path = (std::filesystem::temp_directory_path() /
                      ("dlbench_step_profile_" + name + "_" + std::to_string(::getpid())))
                         .string();
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

TEST(StepProfile, TheRequestIsCheckedAndAbsentWithoutAFolder) {
  auto none = StepProfileRequestFrom(nullptr, "5");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  const std::string folder = TempFolder("request");
  auto request = StepProfileRequestFrom(folder.c_str(), nullptr);
  ASSERT_TRUE(request.ok()) << request.error().message;
  EXPECT_EQ((*request)->steps, kStepProfileDefaultSteps);
  for (const char* bad : {"0", "1001", "ten", "-3"}) {
    auto r = StepProfileRequestFrom(folder.c_str(), bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("expected a whole number of steps in [1, 1000]"), std::string::npos)
        << bad;
  }
  auto file = StepProfileRequestFrom("/etc/hostname", nullptr);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message.find("not a directory"), std::string::npos);
  std::filesystem::remove_all(folder);
}

TEST(StepProfile, SummarisesTheStepsOperatorsAndWritesNothingOverAFifoOrALink) {
  const std::string folder = TempFolder("summary");
  ASSERT_EQ(::mkfifo((folder + "/s.trace.json").c_str(), 0600), 0);
  std::filesystem::create_symlink("/dev/null", folder + "/s.json");
  const torch::Tensor a = torch::randn({32, 32});
  int calls = 0;
  const nlohmann::json summary = ProfileSteps({folder, 3}, "s", /*cuda=*/false, [&] {
    ++calls;
    (void)torch::mm(a, a).relu();
  });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(summary.at("steps"), 3);
  // Three products and three relus, one each per step.
  bool mm = false;
  for (const nlohmann::json& op : summary.at("host_ops")) {
    if (op.at("name") == "aten::mm") {
      mm = true;
      EXPECT_DOUBLE_EQ(op.at("calls_per_step").get<double>(), 1.0);
    }
  }
  EXPECT_TRUE(mm) << summary.dump();
  EXPECT_NE(summary.value("trace_error", "").find("not a regular file"), std::string::npos) << summary.dump();
  EXPECT_FALSE(summary.contains("trace"));
  EXPECT_NE(summary.value("write_error", ""), "") << summary.dump();
  EXPECT_TRUE(std::filesystem::is_symlink(folder + "/s.json"));
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace dlbench::torchrunner

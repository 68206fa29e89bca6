// CheckResumeEnvironment: a resume on a machine that differs in what decides comparability is
// refused without --resume-elsewhere, and recorded per cell with it; other differences are recorded.
#include "orchestrator/resume_check.h"

#include <gtest/gtest.h>

#include "monitor/fingerprint.h"

namespace dlbench::orchestrator {
namespace {

record::RunRecord Started(const nlohmann::json& fp) {
  record::RunRecord run;
  run.id = 7;
  run.environment = fp;
  run.environment_hash = monitor::ComparabilityHash(fp);
  return run;
}

nlohmann::json Fingerprint() {
  return {{"fingerprint_version", 3},
          {"host", {{"arch", "x86_64"}, {"cpu_model", "EPYC"}, {"hostname", "gpu-a"}}},
          {"gpu", {{"driver_version", "580.1"}, {"models", {"NVIDIA H200"}}}},
          {"launcher", {{"launcher", "slurm"}, {"rank", {{"value", 0}}}}},
          {"runner", {{"runner", "torch"}, {"pid", 100}}},
          {"start_state", {{"host", {{"load_average_1m", 0.5}}}}}};
}

TEST(ResumeCheck, TheSameMachineRecordsNothing) {
  nlohmann::json here = Fingerprint();
  here["start_state"]["host"]["load_average_1m"] = 3.0;  // state, not environment
  here["runner"]["pid"] = 200;
  here["launcher"]["rank"]["value"] = 1;  // per task
  auto got = CheckResumeEnvironment(Started(Fingerprint()), here, false);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_TRUE(got->record.is_null());
  EXPECT_TRUE(got->warning.empty());
}

TEST(ResumeCheck, AnotherHostOfTheSameKindIsRecordedAndWarned) {
  nlohmann::json here = Fingerprint();
  here["host"]["hostname"] = "gpu-b";
  auto got = CheckResumeEnvironment(Started(Fingerprint()), here, false);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->record["decisive_change_count"], 0);
  EXPECT_EQ(got->record["other_change_count"], 1);
  EXPECT_EQ(got->record["other_changes"][0], "/host/hostname: gpu-a -> gpu-b");
  EXPECT_EQ(got->record["environment_hash_of_run"], got->record["environment_hash_here"]);
  EXPECT_NE(got->warning.find("outside what decides comparability: /host/hostname: gpu-a -> gpu-b"),
            std::string::npos)
      << got->warning;
}

TEST(ResumeCheck, ADecisiveDifferenceIsRefusedNamingItUnlessResumedElsewhere) {
  nlohmann::json here = Fingerprint();
  here["gpu"]["driver_version"] = "590.2";
  here["gpu"]["models"][0] = "NVIDIA H100 80GB HBM3";
  auto refused = CheckResumeEnvironment(Started(Fingerprint()), here, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kInvalidInput);
  const std::string& m = refused.error().message;
  EXPECT_NE(m.find("run 7 started on a machine that differs"), std::string::npos) << m;
  EXPECT_NE(m.find("/gpu/driver_version: 580.1 -> 590.2"), std::string::npos) << m;
  EXPECT_NE(m.find("/gpu/models/0: NVIDIA H200 -> NVIDIA H100 80GB HBM3"), std::string::npos) << m;
  EXPECT_NE(m.find("--resume-elsewhere"), std::string::npos) << m;

  auto allowed = CheckResumeEnvironment(Started(Fingerprint()), here, true);
  ASSERT_TRUE(allowed.ok()) << allowed.error().message;
  EXPECT_EQ(allowed->record["decisive_change_count"], 2);
  EXPECT_NE(allowed->record["environment_hash_of_run"], allowed->record["environment_hash_here"]);
  EXPECT_NE(allowed->warning.find("differs in what decides comparability"), std::string::npos)
      << allowed->warning;
  EXPECT_NE(allowed->warning.find("and 1 more"), std::string::npos) << allowed->warning;
}

TEST(ResumeCheck, ManyOtherDifferencesAreCountedButListedUpToALimit) {
  nlohmann::json started = Fingerprint();
  nlohmann::json here = Fingerprint();
  for (int i = 0; i < 40; ++i) {
    started["host"]["extra"]["k" + std::to_string(i)] = i;
    here["host"]["extra"]["k" + std::to_string(i)] = i + 1;
  }
  auto got = CheckResumeEnvironment(Started(started), here, false);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->record["other_change_count"], 40);
  EXPECT_EQ(got->record["other_changes"].size(), 16u);
  EXPECT_NE(got->warning.find("and 39 more"), std::string::npos) << got->warning;
}

}  // namespace
}  // namespace dlbench::orchestrator

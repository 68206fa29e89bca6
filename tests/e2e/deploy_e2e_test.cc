// deploy/kubernetes/dlbench-sweep.yaml (no Kubernetes here, so not run on a cluster): what can be
// checked without one is. The Job's shards are numbered as `--shard auto` reads them (RANK from
// the pod's completion index, WORLD_SIZE equal to the Job's completions), and the matrix it ships
// in its ConfigMap plans, with N shards covering every cell of the plan exactly once.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e_util.h"

namespace dlbench::e2e {
namespace {

std::string EnvValue(const YAML::Node& container, const std::string& name, YAML::Node* value_from = nullptr) {
  for (const YAML::Node& e : container["env"]) {
    if (e["name"].as<std::string>() != name) continue;
    if (value_from != nullptr) *value_from = e["valueFrom"];
    return e["value"] ? e["value"].as<std::string>() : "";
  }
  ADD_FAILURE() << "no env " << name;
  return "";
}

TEST(DeployE2E, TheKubernetesSweepsShardsCoverItsPlanOnce) {
  TempDir dir("deploy_k8s");
  const std::vector<YAML::Node> docs =
      YAML::LoadAllFromFile(std::string(DLBENCH_SOURCE_DIR) + "/deploy/kubernetes/dlbench-sweep.yaml");
  ASSERT_EQ(docs.size(), 2U);
  ASSERT_EQ(docs[0]["kind"].as<std::string>(), "ConfigMap");
  ASSERT_EQ(docs[1]["kind"].as<std::string>(), "Job");
  const YAML::Node job = docs[1]["spec"];
  EXPECT_EQ(job["completionMode"].as<std::string>(), "Indexed");
  const int shards = job["completions"].as<int>();
  ASSERT_GE(shards, 2);
  EXPECT_EQ(job["parallelism"].as<int>(), shards);
  const YAML::Node container = job["template"]["spec"]["containers"][0];
  EXPECT_EQ(std::stoi(EnvValue(container, "WORLD_SIZE")), shards);
  YAML::Node rank_from;
  EnvValue(container, "RANK", &rank_from);
  ASSERT_TRUE(rank_from) << "RANK must come from the pod";
  EXPECT_EQ(rank_from["fieldRef"]["fieldPath"].as<std::string>(),
            "metadata.annotations['batch.kubernetes.io/job-completion-index']");
  std::vector<std::string> command;
  for (const YAML::Node& arg : container["command"]) command.push_back(arg.as<std::string>());
  ASSERT_GE(command.size(), 5U);
  EXPECT_EQ(command[0], "dlbench");
  EXPECT_EQ(command[1], "run");
  EXPECT_NE(std::find(command.begin(), command.end(), "auto"), command.end());
  // The matrix the ConfigMap mounts, planned here as each pod would plan it.
  const std::string matrix = dir / "matrix.yaml";
  WriteText(matrix, docs[0]["data"]["matrix.yaml"].as<std::string>());
  auto whole = RunCommand({Bin("dlbench"), "--db", dir / "r.db", "plan", matrix, "--json"}, dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  std::map<std::string, int> seen;
  for (const nlohmann::json& cell : nlohmann::json::parse(whole.out))
    seen[cell.at("id").get<std::string>()] = 0;
  ASSERT_GE(seen.size(), static_cast<std::size_t>(shards));
  for (int rank = 0; rank < shards; ++rank) {
    auto part =
        RunCommand({Bin("dlbench"), "--db", dir / "r.db", "plan", matrix, "--shard", "auto", "--json"}, dir,
                   {{"RANK", std::to_string(rank)}, {"WORLD_SIZE", std::to_string(shards)}});
    ASSERT_EQ(part.exit_code, 0) << part.err;
    for (const nlohmann::json& cell : nlohmann::json::parse(part.out)) {
      const std::string id = cell.at("id").get<std::string>();
      ASSERT_TRUE(seen.count(id)) << id;
      ++seen[id];
    }
  }
  for (const auto& [id, times] : seen) EXPECT_EQ(times, 1) << id;
}

}  // namespace
}  // namespace dlbench::e2e

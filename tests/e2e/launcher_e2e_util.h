// Shared by the launcher e2e tests (slurm_*e2e_test.cc, torchrun_e2e_test.cc and shard_e2e_test.cc's
// --shard auto tests): a command run with a time limit, the sweep every launcher runs, and a runner
// that writes down its environment.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "e2e_util.h"

namespace dlbench::e2e {

// A command to completion, or killed after `limit_s` (then exit code -1).
inline CommandResult RunFor(const std::vector<std::string>& argv, const TempDir& dir,
                            const std::vector<std::pair<std::string, std::string>>& env,
                            const std::string& tag, int limit_s) {
  SpawnOptions o;
  o.argv = argv;
  o.extra_env = env;
  o.stdout_path = dir / (tag + ".out");
  o.stderr_path = dir / (tag + ".err");
  CommandResult r;
  auto p = Subprocess::Spawn(o);
  if (!p.ok()) {
    r.err = p.error().message;
    return r;
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  std::optional<ExitStatus> st;
  while (!(st = p->TryWait()) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!st) {
    p->Terminate(2000);
    r.exit_code = -1;
  } else {
    r.exit_code = st->signaled ? 128 + st->signal : st->code;
  }
  r.out = ReadFile(o.stdout_path).ok() ? *ReadFile(o.stdout_path) : "";
  r.err = ReadFile(o.stderr_path).ok() ? *ReadFile(o.stderr_path) : "";
  return r;
}

// Four cells in virtual time: fast, and each cell's outcome independent of this machine's load.
inline constexpr char kSweep[] = R"(name: slurm-sweep
runner: null
matrix:
  model: [a, b, c, d]
  step_ms: 1
  virtual_time: true
measure:
  min_steps: 20
  min_time_s: 0.05
  max_time_s: 0.2
)";

// A one-cell matrix whose command runner writes its environment to DIR/runner-env-PID.txt and
// then is the null runner (so the probe and the cell each leave one file).
inline void WriteRunnerEnvMatrix(const TempDir& dir) {
  WriteText(dir / "env.yaml", std::string(R"(name: env
runner:
  command: [/bin/sh, -c, 'env > "$0/runner-env-$$.txt"; exec "$1"', )") +
                                  dir.path().string() + ", " + Bin("dlbench-null") + R"(]
matrix:
  model: [x]
measure:
  min_steps: 5
  min_time_s: 0.02
  max_time_s: 0.1
)");
}

// Every runner-env file in `dir` (two: the probe and the cell) has PATH and no line starting with
// `forbidden` ("\nSLURM", "\nRANK=").
inline void CheckRunnerEnvFiles(const TempDir& dir, const std::vector<std::string>& forbidden) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().filename().string().rfind("runner-env-", 0) != 0) continue;
    ++files;
    auto text = ReadFile(entry.path().string());
    ASSERT_TRUE(text.ok());
    const std::string env = "\n" + *text;
    EXPECT_NE(env.find("\nPATH="), std::string::npos) << *text;
    for (const std::string& f : forbidden) {
      EXPECT_EQ(env.find(f), std::string::npos) << f.substr(1) << " reached the runner:\n" << *text;
    }
  }
  EXPECT_EQ(files, 2) << "the probe and the cell";
}

}  // namespace dlbench::e2e

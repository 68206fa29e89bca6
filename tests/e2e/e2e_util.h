// Helpers for end-to-end tests that drive the real dlbench binary as a user would.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/subprocess.h"

namespace dlbench::e2e {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// A fresh folder per test, removed at the end unless DLBENCH_KEEP_TEST_DIRS is set.
class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    path_ =
        std::filesystem::temp_directory_path() / ("dlbench_e2e_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    if (std::getenv("DLBENCH_KEEP_TEST_DIRS") == nullptr) std::filesystem::remove_all(path_);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline std::string Bin(const std::string& name) { return std::string(DLBENCH_BIN_DIR) + "/" + name; }

inline void WriteText(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// Runs argv to completion with stdout/stderr captured (through files in dir).
inline CommandResult RunCommand(const std::vector<std::string>& argv, const TempDir& dir,
                                std::vector<std::pair<std::string, std::string>> env = {}) {
  static int counter = 0;
  const std::string tag = std::to_string(counter++);
  SpawnOptions o;
  o.argv = argv;
  o.stdout_path = dir / ("cmd" + tag + ".out");
  o.stderr_path = dir / ("cmd" + tag + ".err");
  o.extra_env = std::move(env);
  CommandResult r;
  auto p = Subprocess::Spawn(o);
  if (!p.ok()) {
    r.err = p.error().message;
    return r;
  }
  auto st = p->Wait();
  r.exit_code = st.signaled ? 128 + st.signal : st.code;
  r.out = ReadFile(o.stdout_path).ok() ? *ReadFile(o.stdout_path) : "";
  r.err = ReadFile(o.stderr_path).ok() ? *ReadFile(o.stderr_path) : "";
  return r;
}

// `dlbench ARGS... --db DB` run in dir (so default output folders land there).
inline CommandResult Dlbench(const std::vector<std::string>& args, const TempDir& dir,
                             const std::string& db) {
  std::vector<std::string> argv = {Bin("dlbench"), "--db", db};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, dir);
}

// A tiny ResNet trained on the CPU (32-pixel images, 4 channels at the base, 4 classes, batch 2):
// the model keys of the torch group and ddp tests' matrices, indented to go under `matrix:`.
inline constexpr char kTinyResnetCpuKeys[] = R"(  model: resnet50
  image_size: 32
  base_width: 4
  num_classes: 4
  batch_size: 2
  lr: 0.01
  device: cpu
)";

}  // namespace dlbench::e2e

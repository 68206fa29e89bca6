// Every seed of fuzz/corpus/<target>/ and every input a fuzzer once crashed on,
// fuzz/regressions/<target>/, through its fuzz target: none may crash, hang or trip a check
// (in the sanitizer build, none may touch memory it must not). Runs in the default build, so a
// fixed crash stays fixed without clang or libFuzzer.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "entry_points.h"

namespace dlbench::fuzz {
namespace {

namespace fs = std::filesystem;

// The files of fuzz/<kind>/<target>/, sorted so a failure names the same file every time.
std::vector<fs::path> Inputs(const std::string& kind, const std::string& target) {
  std::vector<fs::path> out;
  const fs::path dir = fs::path(DLBENCH_SOURCE_DIR) / "fuzz" / kind / target;
  if (!fs::is_directory(dir)) return out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().filename() != ".gitkeep") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Replay(const std::string& target, int (*entry)(const std::uint8_t*, std::size_t)) {
  const std::vector<fs::path> seeds = Inputs("corpus", target);
  ASSERT_GE(seeds.size(), 3u) << "fuzz/corpus/" << target << " should hold seeds";
  std::vector<fs::path> all = seeds;
  for (const fs::path& p : Inputs("regressions", target)) all.push_back(p);
  for (const fs::path& path : all) {
    SCOPED_TRACE(path.string());
    const std::string bytes = Bytes(path);
    EXPECT_EQ(entry(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), 0);
  }
}

TEST(FuzzRegressionTest, Matrix) { Replay("matrix", &FuzzMatrix); }
TEST(FuzzRegressionTest, Frames) { Replay("frames", &FuzzFrames); }
TEST(FuzzRegressionTest, Progress) { Replay("progress", &FuzzProgress); }
TEST(FuzzRegressionTest, Http) { Replay("http", &FuzzHttp); }
TEST(FuzzRegressionTest, TfRecord) { Replay("tfrecord", &FuzzTfRecord); }
TEST(FuzzRegressionTest, Procfs) { Replay("procfs", &FuzzProcfs); }

}  // namespace
}  // namespace dlbench::fuzz

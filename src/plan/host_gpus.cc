#include "plan/host_gpus.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>

#include "config/load_rules.h"

namespace dlbench::plan {
namespace {

std::string Text(const Cell& cell, const char* key) {
  const auto it = cell.params.find(key);
  return it != cell.params.end() && it->second.is_string() ? it->second.get<std::string>() : "";
}

// The world_size of a ddp cell of several ranks on a cuda device; 0 for any other cell (a cell of
// one rank runs as an ordinary cell, which needs the one GPU any cuda cell needs).
std::int64_t CudaRanks(const Cell& cell) {
  if (Text(cell, "strategy") != "ddp" || Text(cell, "device").rfind("cuda", 0) != 0) return 0;
  const auto world = cell.params.find("world_size");
  if (world == cell.params.end() || !world->second.is_number_integer()) return 0;
  const std::int64_t ranks = world->second.get<std::int64_t>();
  return ranks >= 2 ? ranks : 0;
}

}  // namespace

int GpusNeeded(const std::vector<Cell>& cells) {
  std::int64_t most = 0;
  for (const Cell& c : cells) most = std::max(most, CudaRanks(c));
  return static_cast<int>(std::min<std::int64_t>(most, 1 << 20));
}

std::vector<std::string> GpuShortfallWarnings(const config::Matrix& matrix, const std::vector<Cell>& cells,
                                              int gpus, const std::string& gpus_from) {
  std::vector<std::string> out;
  std::set<std::string> said;
  for (const Cell& c : cells) {
    const std::int64_t ranks = CudaRanks(c);
    if (ranks <= gpus) continue;
    // dlbench-torch refuses such a cell; another runner is told its ranks' devices and decides.
    std::string w = fmt::format(
        "{}: warning: world_size {} of strategy ddp on cuda needs {} GPUs on this host, and it has {} ({}): "
        "{}",
        config::WhereInMatrix(matrix, c.params, "world_size"), ranks, ranks, gpus, gpus_from,
        matrix.runner.name == "torch" ? "its cells will end unsupported (ranks would share a GPU)"
                                      : "its ranks would share a GPU");
    if (said.insert(w).second) out.push_back(std::move(w));
  }
  return out;
}

}  // namespace dlbench::plan

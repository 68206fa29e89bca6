#include "config/ddp_rules.h"

#include <cstdint>
#include <string>

namespace dlbench::config {
namespace {

std::string Text(const Combination& cell, const char* key) {
  const auto it = cell.find(key);
  return it != cell.end() && it->second.is_string() ? it->second.get<std::string>() : std::string();
}

}  // namespace

std::vector<LoadRuleViolation> CheckDdpCell(const Combination& cell) {
  std::vector<LoadRuleViolation> out;
  const bool ddp = Text(cell, "strategy") == "ddp";
  const bool allreduce = Text(cell, "model") == "allreduce";
  if (!ddp) {
    for (const char* key : {"ddp_mode", "backend", "bucket_cap_bytes"}) {
      if (cell.count(key)) out.push_back({key, "applies with strategy: ddp only"});
    }
    const auto world = cell.find("world_size");
    if (world != cell.end() && world->second.is_number_integer() && world->second.get<std::int64_t>() != 1) {
      out.push_back({"world_size", "is " + world->second.dump() +
                                       " but strategy is not ddp; a single process has world_size 1"});
    }
    if (allreduce) {
      out.push_back(
          {"model", "allreduce measures the all-reduce of a ddp group alone: it needs strategy: ddp"});
    }
  }
  if (ddp && !allreduce && cell.count("scenario") && Text(cell, "scenario") != "train") {
    out.push_back({"scenario",
                   "strategy ddp trains data-parallel: it needs scenario train (infer has no gradients to "
                   "all-reduce; converge trains in one process)"});
  }
  if (Text(cell, "backend") == "nccl") {
    const std::string device = cell.count("device") ? Text(cell, "device") : "cpu";
    if (device.rfind("cuda", 0) != 0) {
      out.push_back({"backend", "nccl runs on CUDA devices only (this cell's device is " + device +
                                    "; gloo or auto on the CPU)"});
    }
  }
  if (cell.count("allreduce_bytes") && !allreduce) {
    out.push_back({"allreduce_bytes", "applies to model allreduce only"});
  }
  return out;
}

Status CheckDdpRules(const Matrix& matrix, const std::vector<Combination>& cells) {
  return ReportCellRules(matrix, cells, CheckDdpCell);
}

}  // namespace dlbench::config

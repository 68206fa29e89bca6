// libFuzzer entry of the procfs target (fuzz/entry_points.h); built with -DDLBENCH_FUZZ=ON.
#include <cstddef>
#include <cstdint>

#include "entry_points.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return dlbench::fuzz::FuzzProcfs(data, size);
}

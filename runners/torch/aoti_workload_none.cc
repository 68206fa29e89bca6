// aoti_workload.h for a LibTorch without the AOTInductor package loader (before 2.6; Debian's 1.13).
#include "aoti_workload.h"
#include "failure.h"

namespace dlbench::torchrunner {

bool AotiBuilt() { return false; }

std::unique_ptr<Workload> MakeAotiWorkload(
    const TorchScriptSpec& /*spec*/, torch::Device /*device*/, std::int64_t /*file_bytes*/,
    nlohmann::json /*package*/) {  // NOLINT(performance-unnecessary-value-param): the signature
                                   // aoti_workload_aoti.cc moves from
  throw UnsupportedError(
      "unsupported: model aoti needs the AOTInductor package loader (LibTorch 2.6+), which this "
      "dlbench-torch was built without (the GPU build has it: scripts/build-gpu.sh)");
}

}  // namespace dlbench::torchrunner

// A build without Gloo's headers: ddp cells on the CPU are refused by name.
#include "ddp/process_group.h"
#include "failure.h"

namespace dlbench::torchrunner::ddp {

bool GlooCompiledIn() { return false; }

c10::intrusive_ptr<c10d::ProcessGroup> MakeGlooGroup(const c10::intrusive_ptr<c10d::Store>&, int, int,
                                                     std::chrono::milliseconds, const std::string&) {
  throw UnsupportedError(
      "unsupported: backend gloo, but this dlbench-torch was built without Gloo's headers (Debian: "
      "libgloo-dev, scripts/setup-debian.sh)");
}

}  // namespace dlbench::torchrunner::ddp

// Compiled when the build has Gloo's headers (Debian: libgloo-dev); TorchConfig does not define
// USE_C10D_GLOO, without which ProcessGroupGloo.hpp declares nothing, so the CMake file defines it
// for this file.
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "ddp/process_group.h"
#include "ddp/wrap_backend.h"

namespace dlbench::torchrunner::ddp {

bool GlooCompiledIn() { return true; }

c10::intrusive_ptr<c10d::ProcessGroup> MakeGlooGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                     int world_size, std::chrono::milliseconds timeout,
                                                     const std::string& bind_addr) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  // The ranks of one host meet on the loopback address; ranks that are launcher tasks on several
  // hosts bind to the address their host reaches the rendezvous from.
  options->devices.push_back(
      c10d::ProcessGroupGloo::createDeviceForHostname(bind_addr.empty() ? "127.0.0.1" : bind_addr));
  // Gloo's own worker threads: one suffices for the one collective in flight at a time.
  options->threads = 1;
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, options);
#if TORCH_VERSION_MAJOR >= 2
  return WrapBackend(store, rank, world_size, c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO,
                     gloo);
#else
  return gloo;
#endif
}

}  // namespace dlbench::torchrunner::ddp

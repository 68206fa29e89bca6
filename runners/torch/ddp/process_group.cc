#include "ddp/process_group.h"

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace dlbench::torchrunner::ddp {

c10::intrusive_ptr<c10d::Store> ConnectStore(const std::string& addr, int port, int rank, int world_size,
                                             std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = rank == 0;
  options.numWorkers = static_cast<std::size_t>(world_size);
  options.waitWorkers = true;
  options.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(addr, options);
}

c10::intrusive_ptr<c10d::Store> OpenFileStore(const std::string& path, int world_size,
                                              std::chrono::milliseconds timeout) {
  auto store = c10::make_intrusive<c10d::FileStore>(path, world_size);
  store->setTimeout(timeout);
  return store;
}

}  // namespace dlbench::torchrunner::ddp

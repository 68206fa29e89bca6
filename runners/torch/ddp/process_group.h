// The c10d rendezvous and process group of one ddp rank (docs/distributed.md): a FileStore the
// ranks of one host share (what `dlbench run` gives them), or a TCPStore that rank 0 serves on the
// address CONFIGURE names; every rank then joins one process group through it:
// Gloo (CPU tensors, compiled when the build has Gloo's headers) or NCCL (CUDA tensors, compiled
// only into a LibTorch with NCCL: process_group_nccl_cuda.cc).
#pragma once

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

namespace dlbench::torchrunner::ddp {

// Connects to (rank 0: serves) the TCPStore at addr:port for `world_size` ranks. Throws
// c10::Error (or std::runtime_error) when the store cannot be reached within `timeout`.
c10::intrusive_ptr<c10d::Store> ConnectStore(const std::string& addr, int port, int rank, int world_size,
                                             std::chrono::milliseconds timeout);

// Opens the c10d FileStore at `path` that `world_size` ranks of one host share. c10d errors
// (a rank that does not arrive) come after `timeout`.
c10::intrusive_ptr<c10d::Store> OpenFileStore(const std::string& path, int world_size,
                                              std::chrono::milliseconds timeout);

// The address of this host from which it reaches addr:port (a route lookup: a UDP socket connected
// there, which sends nothing), numeric: the address a rank of a group that spans hosts binds its
// Gloo pairs to. Throws std::runtime_error naming addr when it does not resolve or has no route.
std::string LocalAddressToward(const std::string& addr, int port);

// Whether this runner has each process group compiled in.
bool GlooCompiledIn();
bool NcclCompiledIn();

// The process group the Reducer and the collectives use; in LibTorch 2.x the backend wrapped in a
// c10d::ProcessGroup with it as the default backend, as the Reducer wants. Throws
// UnsupportedError (failure.h) when the backend is not compiled in; c10d errors otherwise (a
// rank that does not arrive within `timeout`). Gloo's pairs bind to `bind_addr`, an address of
// this host (LocalAddressToward the TCPStore); empty: the loopback address (ranks of one host).
c10::intrusive_ptr<c10d::ProcessGroup> MakeGlooGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                     int world_size, std::chrono::milliseconds timeout,
                                                     const std::string& bind_addr);
c10::intrusive_ptr<c10d::ProcessGroup> MakeNcclGroup(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                     int world_size, std::chrono::milliseconds timeout);

}  // namespace dlbench::torchrunner::ddp

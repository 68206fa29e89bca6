// A ddp cell on one host: world_size rank processes of the cell's runner, supervised as one cell
// (docs/distributed.md, adr/0012-rank-data-in-configure.md). Every rank gets its rank, the world
// size and a c10d TCPStore rendezvous on 127.0.0.1 at a free port in its CONFIGURE; rank 0's
// steps are measured, and its measurement policy's STOP goes to every rank. A rank that fails
// (crashes, exits without DONE, hangs past its timeout, reports ERROR) ends the cell with that
// outcome, the message naming the rank; the other ranks are killed, and nothing they started is
// left running. The stored cell holds every rank's step records.
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "common/error.h"
#include "orchestrator/cell_runner.h"
#include "plan/plan.h"
#include "record/records.h"

namespace dlbench::orchestrator {

class CellDriver;

// Whether a rank has failed by now: it reported ERROR, broke the protocol, ran out of time, or
// exited other than cleanly after DONE.
bool RankFailed(const CellDriver& d);

// The cell's world_size when its strategy is ddp, else 1. A ddp cell of world_size 1 runs as an
// ordinary cell (its runner makes a group of one without a rendezvous).
int RankGroupSize(const plan::Cell& cell);

// Where the ranks of a cell whose logs start with `log_base` (".../cell-0004") meet: the absolute
// path `log_base.rendezvous` of a c10d FileStore, so that nothing listens on the network (a
// TCPStore serves on every interface, whatever address it is given). A regular file left there by
// an earlier attempt (a killed group, a resume) is removed first, since ranks reading a stale store
// would join a group that no longer exists; anything else there (a directory, a FIFO, a symlink)
// is an error, never removed.
Result<std::string> FreshRendezvousFile(const std::string& log_base);

// The effective cell a rank group's GPUs are attributed by: rank 0's (the first entry), with
// `device_uuids` the union of every rank's in rank order, each once, since the ranks of one cell
// run on several GPUs. Rank 0's as it is when no rank named its GPUs.
nlohmann::json RankGroupEffective(const std::vector<const nlohmann::json*>& rank_effectives);

// Runs `cell` as `world_size` ranks; `rec` is RunCell's record of the cell (identity, parameters,
// rank 0's log paths) and receives the outcome, rank 0's conversation and every rank's steps. The
// GPUs' compute processes are taken before the first rank is spawned (Monitor::GpuProcesses), and
// every GPU of the group that had one is a warning of the cell (docs/memory.md). With
// `options.group` (a group run's tasks), rank 0 runs here and rank r on task r, which supervises it
// and reports it (rank_task.cc); the ranks meet in a TCPStore at the group's rendezvous host. A
// cell of more ranks than the group has tasks ends unsupported.
void RunRankGroup(const plan::Cell& cell, const CellRunOptions& options, int world_size,
                  std::vector<record::SeriesPoint> idle_series, record::CellRecord& rec);

}  // namespace dlbench::orchestrator

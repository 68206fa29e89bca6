// Finding and ending what a runner leaves behind (docs/adr/0006-runner-descendants.md). A runner
// may fork (data-loader workers, compilers) and a child may leave the runner's process group
// with setsid(); none of them may outlive the cell, hold its pipes, or share the next cell's GPU.
#pragma once

#include <sys/types.h>

#include <vector>

#include "common/error.h"

namespace dlbench::orchestrator {

// Makes the calling process a child subreaper (prctl PR_SET_CHILD_SUBREAPER): a process orphaned
// anywhere below it (a runner's child after the runner exited, whatever its session) becomes its
// child instead of init's, so it stays findable and is reaped here. Idempotent; kIo when the
// kernel refuses.
Status BecomeSubreaper();

// Every live or zombie process whose chain of parents leads to `root` (root excluded), read from
// /proc, parents before their children. Empty when /proc cannot be read.
std::vector<pid_t> Descendants(pid_t root);

// Whether this process has any child, live or zombie (waitid's ECHILD; no /proc read). Without one
// it has no descendant at all: an orphan below a subreaper is reparented to it, so the topmost
// living process of any chain below this one is its child.
bool HasChildProcesses();

// Ends everything left of a cell: SIGKILL to process group `pgid` (when > 0) and to every
// descendant of this process, reaping those that are (or become) its children, until none is left
// or `timeout_ms` has passed. Returns how many processes other than zombies it found and killed.
// When this process has no child (HasChildProcesses), the group kill is all it does: the /proc
// walk, a read of every process's stat file (about 1.3 ms on a host with 175 processes), is skipped.
//
// Contract: the caller has already reaped its runner, and no other code of this process starts
// child processes while a cell runs (the orchestrator runs one cell at a time), so whatever is
// below this process now belongs to the cell. With BecomeSubreaper, that includes a setsid child
// whose parent has exited.
int KillLeftovers(pid_t pgid, int timeout_ms);

}  // namespace dlbench::orchestrator

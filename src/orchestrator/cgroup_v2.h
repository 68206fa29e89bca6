// cgroup v2 for a cpu cell's memory_cap (docs/memory.md "Memory cap"): where the cells' cgroups can
// go (a delegated parent with the memory controller), and one cell's cgroup: memory.max and
// memory.swap.max written, the runner moved in, memory.events' oom_kill read after it ends, the
// cgroup removed. Every path comes from CgroupSources, so the tests run on a fake tree in a
// temporary folder; no kernel with a usable cgroup v2 memory controller has run this code yet (the
// development machine binds `memory` to cgroup v1).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"

namespace dlbench::orchestrator {

// The environment variable that names a delegated cgroup v2 directory for the cells' cgroups
// (`/sys/fs/cgroup/dlbench.slice`, say): writable by dlbench, `memory` in its cgroup.controllers,
// and no process of its own, so its children can get the memory controller.
inline constexpr const char* kCgroupParentEnv = "DLBENCH_CGROUP_PARENT";
// kCgroupParentEnv's value that opts in to using dlbench's own cgroup: dlbench moves itself (and
// the runner being capped) into a leaf child, `dlbench-<pid>`, so that its own cgroup holds no
// process and can give its children the memory controller (cgroup v2's no-internal-process rule).
// For a delegated cgroup of dlbench's own, such as a systemd scope with Delegate=yes.
inline constexpr const char* kCgroupParentSelf = "self";
// What a reason for not using cgroup v2 says to run when dlbench's own cgroup holds processes.
inline constexpr const char* kCgroupSelfRecipe =
    "run dlbench in a delegated cgroup of its own and let it move itself into a leaf there: "
    "`systemd-run --user --scope -p Delegate=yes env DLBENCH_CGROUP_PARENT=self dlbench run ...` (as root "
    "without --user), or set DLBENCH_CGROUP_PARENT to a delegated cgroup without processes";

// Where detection reads. `parent` is the configured parent (kCgroupParentEnv's value), empty when
// none is configured: then this process's own cgroup is the candidate.
struct CgroupSources {
  std::string mounts = "/proc/self/mounts";
  std::string self_cgroup = "/proc/self/cgroup";
  std::string parent;
};

// The real files, with kCgroupParentEnv from the environment.
CgroupSources SystemCgroupSources();

// The answer of FindCgroupParent: `path` when the cells' cgroups can go there, else `why_not`.
struct CgroupParent {
  std::string path;
  std::string why_not;
  std::string source;  // kCgroupParentEnv, "DLBENCH_CGROUP_PARENT=self" or "this process's cgroup"
  // CgroupCheck::kReadOnly, a usable parent: what dlbench will still do to it when a cell runs
  // (move itself into a leaf, give the children the memory controller); empty when nothing.
  std::string to_do;
};

// kEnable (a run): writes what step 5 below needs. kReadOnly (`plan`): changes nothing and predicts
// from the files what the writes would do.
enum class CgroupCheck { kEnable, kReadOnly };

// Detection, in order; the first rule that fails is `why_not`:
// 1. a cgroup2 file system is mounted (sources.mounts);
// 2. the candidate: sources.parent when set (it must lie under a cgroup2 mount), else the mount
//    point joined with this process's "0::" path (sources.self_cgroup); with kCgroupParentSelf the
//    same, or its parent once this process is in its leaf `dlbench-<pid>`;
// 3. `memory` is in the candidate's cgroup.controllers (when not, and a cgroup v1 hierarchy has the
//    memory controller, the reason names its mount point: v1 controllers cannot join v2);
// 4. the candidate is writable (its children are created there);
// 5. `memory` is in its cgroup.subtree_control, or writing "+memory" there succeeds (it fails with
//    EBUSY when the candidate holds processes: cgroup v2's no-internal-process rule, which is why an
//    unconfigured, non-root process cgroup is rarely usable; the reason then says what to run,
//    kCgroupSelfRecipe). With kCgroupParentSelf, this process and `with` (the runner just spawned,
//    0 for none) move into the candidate's leaf `dlbench-<pid>` first (made when absent; it stays
//    after dlbench ends, since a cgroup cannot be removed by a process inside it).
//    kReadOnly writes nothing: the candidate must hold no process (other than this one, with
//    kCgroupParentSelf) unless it is the mount's root, and `to_do` says what a run will write.
CgroupParent FindCgroupParent(const CgroupSources& sources, CgroupCheck check = CgroupCheck::kEnable,
                              pid_t with = 0);

// One cell's cgroup under a parent FindCgroupParent accepted. Removed (rmdir) when destroyed unless
// Remove ran; a cgroup still holding processes cannot be removed, so the caller ends the runner and
// its leftovers first.
class CellCgroup {
 public:
  // mkdir `parent/name`, memory.max = bytes, memory.swap.max = 0 when swap is accounted (the file is
  // in the new cgroup or its parent; without swap accounting there is none to forbid). On failure
  // the new cgroup is removed again.
  static Result<CellCgroup> Create(const std::string& parent, const std::string& name, std::int64_t bytes);
  CellCgroup(CellCgroup&& other) noexcept;
  CellCgroup& operator=(CellCgroup&& other) noexcept;
  CellCgroup(const CellCgroup&) = delete;
  CellCgroup& operator=(const CellCgroup&) = delete;
  ~CellCgroup();

  // Writes `pid` to cgroup.procs: the process and all its threads move; its later children start
  // there. Memory it was charged before the move stays charged where it was.
  Status Add(pid_t pid) const;
  // memory.events' oom_kill: how many of the cgroup's processes the kernel's OOM killer ended.
  std::int64_t OomKills() const;
  // memory.peak (Linux 5.19 and later), nullopt when the file is absent or unreadable.
  std::optional<std::int64_t> Peak() const;
  // rmdir; kIo naming the errno (EBUSY: processes are still in it).
  Status Remove();
  const std::string& path() const { return path_; }

 private:
  explicit CellCgroup(std::string path) : path_(std::move(path)) {}
  std::string path_;  // empty once removed or moved from
};

// One key's value in a flat-keyed cgroup file ("oom 0\noom_kill 2\n"), nullopt when absent.
std::optional<std::int64_t> CgroupKeyedValue(const std::string& text, const std::string& key);

}  // namespace dlbench::orchestrator

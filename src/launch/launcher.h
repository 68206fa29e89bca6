// The launcher environment contract (issue 23): which launcher started this process and what it
// says about the process's place in a group, read from the environment with every value checked
// and the variable it came from kept.
//
// Precedence: command-line flags (`run --shard K/N`) > torchrun > Slurm. torchrun sets RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (and GROUP_RANK, the node); Slurm's srun sets
// SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, SLURM_JOB_NODELIST and, for a step,
// SLURM_STEP_ID; a Slurm job array's tasks get SLURM_ARRAY_TASK_ID, _COUNT, _MIN, _MAX, _STEP
// (sbatch(1) of Slurm 22.05). A torchrun under srun is torchrun's group: Slurm's values are then
// recorded as overridden. Nothing here prints, exits or reads the process environment itself
// except ProcessEnvironment: tests pass environments made by hand.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace dlbench::launch {

// NAME -> value.
using Environment = std::map<std::string, std::string>;
// This process's environment (environ).
Environment ProcessEnvironment();

enum class Launcher { kNone, kTorchrun, kSlurm, kSlurmArray };
// "none", "torchrun", "slurm", "slurm_array".
std::string_view Name(Launcher launcher);

// A number and where it came from: a variable's name, or how it was derived from several.
struct Sourced {
  std::int64_t value = 0;
  std::string from;
};

// What the launcher says, every value checked. Absent values are nullopt.
struct LaunchContext {
  Launcher launcher = Launcher::kNone;
  std::optional<Sourced> rank;        // 0 <= rank < world_size
  std::optional<Sourced> world_size;  // 1 <= world_size <= kMaxWorldSize
  std::optional<Sourced> local_rank;  // the process's index on its host
  std::optional<Sourced> node_rank;   // the host's index (SLURM_NODEID, GROUP_RANK)
  std::optional<std::string>
      master_addr;  // the rendezvous host: MASTER_ADDR or the first of SLURM_JOB_NODELIST
  std::string master_addr_from;
  std::optional<Sourced> master_port;  // 1..65535
  // Every variable of the contract present (those read and those overridden). The NCCL_*
  // variables are in the fingerprint's `env` beside it, with its redaction of secret-looking names.
  Environment seen;
  // Values present but not used, with why: "SLURM_PROCID=1 (torchrun's RANK takes precedence)".
  std::vector<std::string> overridden;
};

// The largest world size (and so shard count) accepted: anything larger is a malformed value.
inline constexpr std::int64_t kMaxWorldSize = 1 << 20;

// Reads the contract. kInvalidInput naming the variable for a value that is not a decimal integer
// in its range, a rank not below its world size, a variable whose partner is missing (RANK
// without WORLD_SIZE), a job array whose indices are not MIN, MIN+STEP, ..., MAX (--array=1,4,9:
// its tasks cannot be numbered 1..COUNT), and a Slurm batch script's own process when the job has
// several tasks (SLURM_NTASKS > 1 without SLURM_STEP_ID: only srun's tasks are the group).
// Launcher::kNone (no error) when none of the variables is set.
Result<LaunchContext> ReadLaunchContext(const Environment& env);

// The first host of a Slurm host list: "node[01-04,07],gpu3" -> "node01", "a-[2-3]-ib" -> "a-2-ib".
// kInvalidInput for an empty list or unbalanced brackets.
Result<std::string> FirstHost(std::string_view nodelist);

// `run --shard auto`: part K of N from the launcher (rank + 1 of world_size). kInvalidInput when
// no launcher was found, listing the variables looked for.
struct AutoShard {
  int index = 1;  // K, 1-based
  int count = 1;  // N
  std::string from;
};
Result<AutoShard> ShardFromLauncher(const LaunchContext& context);

// The sweep a sharded run belongs to when `run` is given no --sweep NAME: the launcher's job,
// which every task of it shares. srun's tasks: "slurm-JOB.STEP" (SLURM_JOB_ID, SLURM_STEP_ID; two
// sruns of one batch job are two sweeps); a job array's tasks: "slurm-ARRAYJOB"
// (SLURM_ARRAY_JOB_ID: each array task is a job of its own); torchrun's workers:
// "torchrun-RUNID" (TORCHELASTIC_RUN_ID, but not torchrun's default "none", which every
// torchrun without --rdzv_id shares). nullopt when the launcher names no job. kInvalidInput when
// the value is not a sweep name (IsSweepName).
struct LauncherSweep {
  std::string id;
  std::string from;  // the variables it came from
};
Result<std::optional<LauncherSweep>> SweepFromLauncher(const LaunchContext& context);

// A sweep name as `run --sweep` accepts it: 1 to kMaxSweepName characters of A-Z a-z 0-9 . _ -
// (it is written in `sweep:NAME` references and shell commands).
inline constexpr std::size_t kMaxSweepName = 128;
bool IsSweepName(std::string_view name);

// The port rank 0's `dlbench run` listens on for the other tasks of a group run (a ddp cell's
// ranks that are launcher tasks, docs/distributed.md#several-hosts), bound to the rendezvous host:
// DLBENCH_GROUP_PORT when set (1..65535); else under torchrun MASTER_PORT + 1 (MASTER_PORT is
// torchrun's own agent store); else under srun 20000 + (SLURM_JOB_ID x 64 + SLURM_STEP_ID) mod
// 40000, so that two job steps on one host differ. kInvalidInput naming the variable for a
// malformed value, or when nothing gives a port (say DLBENCH_GROUP_PORT).
inline constexpr const char* kGroupPortVariable = "DLBENCH_GROUP_PORT";
Result<Sourced> GroupPort(const LaunchContext& context, const Environment& env);

// The variables `run --shard auto` looks for, as its error lists them.
std::string LookedFor();

// The fingerprint's record: {"launcher": "slurm", "rank": {"value": 1, "from": "SLURM_PROCID"}, ...,
// "master_addr": {"value": "vm", "from": "SLURM_JOB_NODELIST (first host)"}, "seen": {...},
// "overridden": [...]}; absent values are left out.
nlohmann::json ToJson(const LaunchContext& context);

// Launcher variables (torchrun's, Slurm's, Open MPI's, PMI's): a runner that inherits them may
// try to join the group they describe, and hang, so no runner dlbench starts gets them. An entry
// ending in '*' is a prefix.
const std::vector<std::string>& InheritedLauncherVariables();

}  // namespace dlbench::launch

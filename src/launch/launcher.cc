#include "launch/launcher.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, not in any header

namespace dlbench::launch {

namespace {

// torchrun's variables (torch.distributed.run's documentation).
constexpr const char* kRank = "RANK";
constexpr const char* kWorldSize = "WORLD_SIZE";
constexpr const char* kLocalRank = "LOCAL_RANK";
constexpr const char* kLocalWorldSize = "LOCAL_WORLD_SIZE";
constexpr const char* kGroupRank = "GROUP_RANK";
constexpr const char* kMasterAddr = "MASTER_ADDR";
constexpr const char* kMasterPort = "MASTER_PORT";
constexpr const char* kTorchelasticRunId = "TORCHELASTIC_RUN_ID";
// Slurm's (srun(1), sbatch(1) "OUTPUT ENVIRONMENT VARIABLES", Slurm 22.05).
constexpr const char* kSlurmJobId = "SLURM_JOB_ID";
constexpr const char* kSlurmStepId = "SLURM_STEP_ID";
constexpr const char* kSlurmProcId = "SLURM_PROCID";
constexpr const char* kSlurmNtasks = "SLURM_NTASKS";
constexpr const char* kSlurmLocalId = "SLURM_LOCALID";
constexpr const char* kSlurmNodeId = "SLURM_NODEID";
constexpr const char* kSlurmNodelist = "SLURM_JOB_NODELIST";
constexpr const char* kArrayJobId = "SLURM_ARRAY_JOB_ID";
constexpr const char* kArrayTaskId = "SLURM_ARRAY_TASK_ID";
constexpr const char* kArrayTaskCount = "SLURM_ARRAY_TASK_COUNT";
constexpr const char* kArrayTaskMin = "SLURM_ARRAY_TASK_MIN";
constexpr const char* kArrayTaskMax = "SLURM_ARRAY_TASK_MAX";
constexpr const char* kArrayTaskStep = "SLURM_ARRAY_TASK_STEP";

constexpr const char* kTorchrunNames[] = {kRank,      kWorldSize,  kLocalRank,  kLocalWorldSize,
                                          kGroupRank, kMasterAddr, kMasterPort, kTorchelasticRunId};
constexpr const char* kSlurmNames[] = {
    kSlurmJobId, kSlurmStepId, kSlurmProcId,    kSlurmNtasks,  kSlurmLocalId, kSlurmNodeId,  kSlurmNodelist,
    kArrayJobId, kArrayTaskId, kArrayTaskCount, kArrayTaskMin, kArrayTaskMax, kArrayTaskStep};

constexpr std::size_t kMaxHostLength = 255;  // a DNS name
constexpr std::int64_t kMaxPort = 65535;
constexpr std::size_t kMaxDigits = 18;  // fits std::int64_t

Status Invalid(std::string message) { return MakeError(ErrorKind::kInvalidInput, std::move(message)); }

const std::string* Find(const Environment& env, const char* name) {
  const auto it = env.find(name);
  return it == env.end() ? nullptr : &it->second;
}

// A decimal integer in [lo, hi], or kInvalidInput naming the variable and its value.
Result<std::int64_t> Integer(const std::string& name, const std::string& text, std::int64_t lo,
                             std::int64_t hi) {
  bool digits = !text.empty() && text.size() <= kMaxDigits;
  for (const char c : text) digits = digits && c >= '0' && c <= '9';
  if (!digits) {
    return MakeError(
        ErrorKind::kInvalidInput,
        fmt::format("{}='{}': not a decimal integer of at most {} digits", name, text, kMaxDigits));
  }
  const std::int64_t value = std::stoll(text);
  if (value < lo || value > hi) {
    return MakeError(ErrorKind::kInvalidInput,
                     fmt::format("{}={}: out of range [{}, {}]", name, text, lo, hi));
  }
  return value;
}

// The variable `name` as a number in [lo, hi]; nullopt when absent.
Result<std::optional<Sourced>> Optional(const Environment& env, const char* name, std::int64_t lo,
                                        std::int64_t hi) {
  const std::string* text = Find(env, name);
  if (text == nullptr) return std::optional<Sourced>{};
  auto value = Integer(name, *text, lo, hi);
  if (!value.ok()) return value.error();
  return std::optional<Sourced>{Sourced{*value, name}};
}

// Both of a pair or neither: "RANK is set but WORLD_SIZE is not".
Status BothOrNeither(const Environment& env, const char* a, const char* b) {
  const bool has_a = Find(env, a) != nullptr;
  const bool has_b = Find(env, b) != nullptr;
  if (has_a == has_b) return Status::Ok();
  return Invalid(fmt::format("{} is set but {} is not: a launcher sets both", has_a ? a : b, has_a ? b : a));
}

Status RankBelowWorld(const Sourced& rank, const Sourced& world) {
  if (rank.value < world.value) return Status::Ok();
  return Invalid(fmt::format("{}={} is not below {}={}: a rank counts from 0 to the world size - 1",
                             rank.from, rank.value, world.from, world.value));
}

Status LocalAtMostRank(const std::optional<Sourced>& local, const Sourced& rank) {
  if (!local || local->value <= rank.value) return Status::Ok();
  return Invalid(fmt::format("{}={} is above {}={}: a process's index on its host cannot exceed its rank",
                             local->from, local->value, rank.from, rank.value));
}

Status ReadTorchrun(const Environment& env, LaunchContext& c) {
  if (auto st = BothOrNeither(env, kRank, kWorldSize); !st.ok()) return st;
  auto world = Optional(env, kWorldSize, 1, kMaxWorldSize);
  if (!world.ok()) return world.error();
  auto rank = Optional(env, kRank, 0, kMaxWorldSize - 1);
  if (!rank.ok()) return rank.error();
  if (auto st = RankBelowWorld(**rank, **world); !st.ok()) return st;
  auto local = Optional(env, kLocalRank, 0, kMaxWorldSize - 1);
  if (!local.ok()) return local.error();
  if (auto st = LocalAtMostRank(*local, **rank); !st.ok()) return st;
  auto local_world = Optional(env, kLocalWorldSize, 1, kMaxWorldSize);
  if (!local_world.ok()) return local_world.error();
  if (*local && *local_world) {
    if (auto st = RankBelowWorld(**local, **local_world); !st.ok()) return st;
  }
  auto node = Optional(env, kGroupRank, 0, kMaxWorldSize - 1);
  if (!node.ok()) return node.error();
  auto port = Optional(env, kMasterPort, 1, kMaxPort);
  if (!port.ok()) return port.error();
  if (const std::string* addr = Find(env, kMasterAddr)) {
    if (addr->empty() || addr->size() > kMaxHostLength) {
      return Invalid(fmt::format("{}: empty or longer than {} characters", kMasterAddr, kMaxHostLength));
    }
    c.master_addr = *addr;
    c.master_addr_from = kMasterAddr;
  }
  c.launcher = Launcher::kTorchrun;
  c.world_size = *world;
  c.rank = *rank;
  c.local_rank = *local;
  c.node_rank = *node;
  c.master_port = *port;
  for (const char* name : kSlurmNames) {
    if (const std::string* v = Find(env, name)) {
      c.overridden.push_back(fmt::format("{}={} (torchrun's variables take precedence)", name, *v));
    }
  }
  return Status::Ok();
}

Status ReadSlurm(const Environment& env, LaunchContext& c) {
  const bool array = Find(env, kArrayTaskId) != nullptr;
  if (!array) {
    if (auto st = BothOrNeither(env, kSlurmProcId, kSlurmNtasks); !st.ok()) return st;
  }
  auto ntasks = Optional(env, kSlurmNtasks, 1, kMaxWorldSize);
  if (!ntasks.ok()) return ntasks.error();
  auto procid = Optional(env, kSlurmProcId, 0, kMaxWorldSize - 1);
  if (!procid.ok()) return procid.error();
  const bool step = Find(env, kSlurmStepId) != nullptr;
  // A batch script runs once whatever the job's task count: only srun's tasks are the group.
  if (*ntasks && (*ntasks)->value > 1 && !step) {
    return Invalid(
        fmt::format("{}={} but {} is not set: this is a batch script's own process, not one of srun's tasks; "
                    "start dlbench with srun (srun dlbench run ...), or give --shard K/N",
                    kSlurmNtasks, (*ntasks)->value, kSlurmStepId));
  }
  if (*ntasks && *procid) {
    if (auto st = RankBelowWorld(**procid, **ntasks); !st.ok()) return st;
  }
  const Sourced task_rank = *procid ? **procid : Sourced{0, kSlurmProcId};
  const Sourced tasks = *ntasks ? **ntasks : Sourced{1, kSlurmNtasks};
  if (array) {
    auto id = Optional(env, kArrayTaskId, 0, std::numeric_limits<std::int32_t>::max());
    if (!id.ok()) return id.error();
    std::optional<Sourced> bounds[3];
    const char* names[3] = {kArrayTaskCount, kArrayTaskMin, kArrayTaskMax};
    for (int i = 0; i < 3; ++i) {
      if (Find(env, names[i]) == nullptr) {
        return Invalid(
            fmt::format("{} is set but {} is not: a Slurm job array sets both", kArrayTaskId, names[i]));
      }
      auto v = Optional(env, names[i], i == 0 ? 1 : 0,
                        i == 0 ? kMaxWorldSize : std::numeric_limits<std::int32_t>::max());
      if (!v.ok()) return v.error();
      bounds[i] = *v;
    }
    auto step_size = Optional(env, kArrayTaskStep, 1, std::numeric_limits<std::int32_t>::max());
    if (!step_size.ok()) return step_size.error();
    const std::int64_t count = bounds[0]->value, lo = bounds[1]->value, hi = bounds[2]->value;
    const std::int64_t stride = *step_size ? (*step_size)->value : 1;
    const std::int64_t idv = (*id)->value;
    if (idv < lo || idv > hi || (idv - lo) % stride != 0 || lo + (count - 1) * stride != hi) {
      return Invalid(fmt::format(
          "{}={} with {}={}, {}={}, {}={}, {}={}: the array's indices are not MIN, MIN+STEP, ..., MAX "
          "(an index list such as --array=1,4,9?), so its tasks cannot be numbered 1..COUNT; "
          "use --array=0-{} or give --shard K/N",
          kArrayTaskId, idv, kArrayTaskCount, count, kArrayTaskMin, lo, kArrayTaskMax, hi, kArrayTaskStep,
          stride, count - 1));
    }
    const std::int64_t index = (idv - lo) / stride;
    if (count * tasks.value > kMaxWorldSize) {
      return Invalid(fmt::format("{}={} x {}={}: more than {} shards", kArrayTaskCount, count, kSlurmNtasks,
                                 tasks.value, kMaxWorldSize));
    }
    c.launcher = Launcher::kSlurmArray;
    if (tasks.value > 1) {
      c.rank = Sourced{index * tasks.value + task_rank.value,
                       fmt::format("({} - {}) / {} x {} + {}", kArrayTaskId, kArrayTaskMin, kArrayTaskStep,
                                   kSlurmNtasks, kSlurmProcId)};
      c.world_size = Sourced{count * tasks.value, fmt::format("{} x {}", kArrayTaskCount, kSlurmNtasks)};
    } else {
      c.rank = Sourced{index, fmt::format("({} - {}) / {}", kArrayTaskId, kArrayTaskMin, kArrayTaskStep)};
      c.world_size = Sourced{count, kArrayTaskCount};
    }
  } else {
    c.launcher = Launcher::kSlurm;
    c.rank = task_rank;
    c.world_size = tasks;
  }
  auto local = Optional(env, kSlurmLocalId, 0, kMaxWorldSize - 1);
  if (!local.ok()) return local.error();
  if (*local && *procid) {
    if (auto st = LocalAtMostRank(*local, **procid); !st.ok()) return st;
  }
  auto node = Optional(env, kSlurmNodeId, 0, kMaxWorldSize - 1);
  if (!node.ok()) return node.error();
  c.local_rank = *local;
  c.node_rank = *node;
  if (const std::string* list = Find(env, kSlurmNodelist)) {
    auto host = FirstHost(*list);
    if (!host.ok()) return Invalid(fmt::format("{}='{}': {}", kSlurmNodelist, *list, host.error().message));
    c.master_addr = *host;
    c.master_addr_from = fmt::format("{} (first host)", kSlurmNodelist);
  }
  return Status::Ok();
}

}  // namespace

Environment ProcessEnvironment() {
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry(*e);
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

std::string_view Name(Launcher launcher) {
  switch (launcher) {
    case Launcher::kNone:
      return "none";
    case Launcher::kTorchrun:
      return "torchrun";
    case Launcher::kSlurm:
      return "slurm";
    case Launcher::kSlurmArray:
      return "slurm_array";
  }
  return "none";
}

Result<std::string> FirstHost(std::string_view nodelist) {
  std::string host;
  std::size_t i = 0;
  while (i < nodelist.size() && nodelist[i] != ',') {
    const char ch = nodelist[i];
    if (ch == ']') return MakeError(ErrorKind::kInvalidInput, "a ']' without its '['");
    if (ch != '[') {
      host += ch;
      ++i;
      continue;
    }
    const std::size_t close = nodelist.find(']', i);
    if (close == std::string_view::npos) return MakeError(ErrorKind::kInvalidInput, "a '[' without its ']'");
    const std::string_view inner = nodelist.substr(i + 1, close - i - 1);
    const std::string_view first = inner.substr(0, inner.find_first_of(",-"));
    if (first.empty()) return MakeError(ErrorKind::kInvalidInput, "an empty range in '[...]'");
    host += first;
    i = close + 1;
  }
  if (host.empty()) return MakeError(ErrorKind::kInvalidInput, "no host in the list");
  if (host.size() > kMaxHostLength) {
    return MakeError(ErrorKind::kInvalidInput,
                     fmt::format("a host name longer than {} characters", kMaxHostLength));
  }
  return host;
}

Result<LaunchContext> ReadLaunchContext(const Environment& env) {
  LaunchContext c;
  for (const char* name : kTorchrunNames) {
    if (const std::string* v = Find(env, name)) c.seen.emplace(name, *v);
  }
  for (const char* name : kSlurmNames) {
    if (const std::string* v = Find(env, name)) c.seen.emplace(name, *v);
  }
  const bool torchrun = Find(env, kRank) != nullptr || Find(env, kWorldSize) != nullptr;
  const bool slurm = Find(env, kSlurmProcId) != nullptr || Find(env, kSlurmNtasks) != nullptr ||
                     Find(env, kArrayTaskId) != nullptr;
  if (torchrun) {
    if (auto st = ReadTorchrun(env, c); !st.ok()) return st.error();
  } else if (slurm) {
    if (auto st = ReadSlurm(env, c); !st.ok()) return st.error();
  }
  return c;
}

std::string LookedFor() {
  return fmt::format("{} and {} (torchrun), {} and {} (srun), {} with {}, {}, {} and {} (a Slurm job array)",
                     kRank, kWorldSize, kSlurmProcId, kSlurmNtasks, kArrayTaskId, kArrayTaskCount,
                     kArrayTaskMin, kArrayTaskMax, kArrayTaskStep);
}

Result<AutoShard> ShardFromLauncher(const LaunchContext& context) {
  if (context.launcher == Launcher::kNone || !context.rank || !context.world_size) {
    return MakeError(
        ErrorKind::kInvalidInput,
        fmt::format("--shard auto found no launcher: it looked for {}; none is set. Start dlbench "
                    "under srun or torchrun, or give --shard K/N",
                    LookedFor()));
  }
  AutoShard shard;
  shard.index = static_cast<int>(context.rank->value + 1);
  shard.count = static_cast<int>(context.world_size->value);
  shard.from =
      fmt::format("{}: {} + 1 of {}", Name(context.launcher), context.rank->from, context.world_size->from);
  return shard;
}

bool IsSweepName(std::string_view name) {
  if (name.empty() || name.size() > kMaxSweepName) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

Result<std::optional<LauncherSweep>> SweepFromLauncher(const LaunchContext& context) {
  const auto seen = [&context](const char* name) -> const std::string* {
    const auto it = context.seen.find(name);
    return it == context.seen.end() || it->second.empty() ? nullptr : &it->second;
  };
  LauncherSweep sweep;
  if (context.launcher == Launcher::kTorchrun) {
    const std::string* run_id = seen(kTorchelasticRunId);
    if (run_id == nullptr || *run_id == "none") return std::optional<LauncherSweep>();
    sweep = {"torchrun-" + *run_id, kTorchelasticRunId};
  } else if (context.launcher == Launcher::kSlurmArray) {
    const std::string* job = seen(kArrayJobId);
    if (job == nullptr) return std::optional<LauncherSweep>();
    sweep = {"slurm-" + *job, kArrayJobId};
  } else if (context.launcher == Launcher::kSlurm) {
    const std::string* job = seen(kSlurmJobId);
    if (job == nullptr) return std::optional<LauncherSweep>();
    const std::string* step = seen(kSlurmStepId);
    sweep = step == nullptr
                ? LauncherSweep{"slurm-" + *job, kSlurmJobId}
                : LauncherSweep{"slurm-" + *job + "." + *step, std::string(kSlurmJobId) + "." + kSlurmStepId};
  } else {
    return std::optional<LauncherSweep>();
  }
  if (!IsSweepName(sweep.id)) {
    return MakeError(
        ErrorKind::kInvalidInput,
        fmt::format("{} gives the sweep name '{}', which is not 1 to {} characters of A-Z a-z 0-9 . "
                    "_ -: give --sweep NAME",
                    sweep.from, sweep.id, kMaxSweepName));
  }
  return std::optional<LauncherSweep>(std::move(sweep));
}

Result<Sourced> GroupPort(const LaunchContext& context, const Environment& env) {
  auto given = Optional(env, kGroupPortVariable, 1, kMaxPort);
  if (!given.ok()) return given.error();
  if (*given) return **given;
  if (context.launcher == Launcher::kTorchrun && context.master_port) {
    if (context.master_port->value >= kMaxPort)
      return MakeError(ErrorKind::kInvalidInput,
                       fmt::format("MASTER_PORT={}: no port above it for dlbench's group; set {}",
                                   context.master_port->value, kGroupPortVariable));
    return Sourced{context.master_port->value + 1, "MASTER_PORT + 1"};
  }
  const auto seen = context.seen.find(kSlurmJobId);
  if (context.launcher == Launcher::kSlurm && seen != context.seen.end()) {
    auto job = Integer(kSlurmJobId, seen->second, 0, std::numeric_limits<std::int64_t>::max() / 128);
    if (!job.ok()) return job.error();
    std::int64_t step = 0;
    if (const auto it = context.seen.find(kSlurmStepId); it != context.seen.end()) {
      // Steps past 63 wrap onto the same ports; a named step (batch, extern) counts as 0.
      auto parsed = Integer(kSlurmStepId, it->second, 0, kMaxWorldSize);
      if (parsed.ok()) step = *parsed % 64;
    }
    return Sourced{20000 + (*job * 64 + step) % 40000,
                   "20000 + (SLURM_JOB_ID x 64 + SLURM_STEP_ID) mod 40000"};
  }
  return MakeError(
      ErrorKind::kInvalidInput,
      fmt::format("no port for dlbench's group of tasks: set {} (1..65535)", kGroupPortVariable));
}

nlohmann::json ToJson(const LaunchContext& context) {
  nlohmann::json j = nlohmann::json::object();
  j["launcher"] = std::string(Name(context.launcher));
  const auto put = [&j](const char* key, const std::optional<Sourced>& v) {
    if (v) j[key] = {{"value", v->value}, {"from", v->from}};
  };
  put("rank", context.rank);
  put("world_size", context.world_size);
  put("local_rank", context.local_rank);
  put("node_rank", context.node_rank);
  if (context.master_addr)
    j["master_addr"] = {{"value", *context.master_addr}, {"from", context.master_addr_from}};
  put("master_port", context.master_port);
  j["seen"] = context.seen;
  if (!context.overridden.empty()) j["overridden"] = context.overridden;
  return j;
}

const std::vector<std::string>& InheritedLauncherVariables() {
  static const std::vector<std::string> names = {
      "RANK",      "WORLD_SIZE",        "LOCAL_RANK",  "LOCAL_WORLD_SIZE", "GROUP_RANK",
      "ROLE_RANK", "MASTER_ADDR",       "MASTER_PORT", "TORCHELASTIC_*",   "SLURM_*",
      "SLURMD_*",  "OMPI_COMM_WORLD_*", "PMI_*"};
  return names;
}

}  // namespace dlbench::launch

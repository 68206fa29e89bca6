// Data-parallel training through the real `dlbench run` and dlbench-torch ranks (Gloo, CPU, a tiny
// ResNet): two ranks of each ddp_mode end bitwise identical (compute_only aside) and store both
// ranks' steps, with their scaling figures and an allreduce cell's bandwidths; a run in
// which the ranks forget to reduce their gradients (the test-only fault) fails its cells; a rank
// killed mid-cell ends the cell naming it, with no rank left running.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "e2e_sqlite.h"
#include "e2e_util.h"
#include "orchestrator/process_tree.h"
#include "record/metrics.h"

namespace dlbench::e2e {
namespace {

std::string Matrix(const std::string& modes, const std::string& measure) {
  return std::string("runner: torch\nmatrix:\n") + kTinyResnetCpuKeys + R"(  strategy: ddp
  world_size: 2
  ddp_mode: )" +
         modes + R"(
timeout_s: 180
measure:
)" + measure;
}

const char* kShortMeasure = R"(  min_steps: 5
  min_time_s: 0.2
  max_time_s: 2
  target_rel_ci: 0.5
)";

std::map<std::uint32_t, std::size_t> StepsPerRank(const record::CellRecord& c) {
  std::map<std::uint32_t, std::size_t> n;
  for (const auto& row : c.steps) ++n[row.rank];
  return n;
}

// The local addresses ("0100007F:9C41", "00000000:9C41", the tcp6 forms) of the listening TCP
// sockets `pid` holds, from /proc/PID/fd's socket inodes and /proc/net/tcp{,6}.
std::vector<std::string> ListeningAddresses(pid_t pid) {
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<std::string> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retrans, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retrans >> uid >> timeout >> inode;
      if (state == "0A" && inodes.count(inode)) out.push_back(local);  // 0A: LISTEN
    }
  }
  return out;
}

bool Loopback(const std::string& local) {
  const std::string host = local.substr(0, local.find(':'));
  return host == "0100007F" || host == "00000000000000000000000001000000" ||
         host == "0000000000000000FFFF00000100007F";
}

int UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

// Two ranks in each ddp_mode, one rank of overlap (the scaling control) and an allreduce cell of
// two ranks, in one run: overlap and serial ranks end bitwise identical, compute_only ranks skip
// the check, and the scaling figures and bandwidths reach the store and `show`.
TEST(TorchDdpE2E, TwoGlooRanksStayBitwiseIdenticalAndTheirScalingFiguresReachShow) {
  TempDir dir("torch_ddp");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, std::string("runner: torch\nmatrix:\n") + kTinyResnetCpuKeys + R"(  threads: 1
  strategy: ddp
  world_size: [2, 1]
  ddp_mode: [overlap, serial, compute_only]
exclude:
  - {world_size: 1, ddp_mode: serial}
  - {world_size: 1, ddp_mode: compute_only}
include:
  - {model: allreduce, strategy: ddp, world_size: 2, device: cpu, threads: 1, allreduce_bytes: 1048576}
timeout_s: 180
measure:
)" + std::string(kShortMeasure));
  const CommandResult run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  const auto cells = Cells(db, 1, /*steps=*/true);
  ASSERT_EQ(cells.size(), 5u) << run.out << run.err;
  std::map<std::string, const record::CellRecord*> by;  // "2 overlap", "1 overlap", "allreduce"
  for (const auto& c : cells) {
    SCOPED_TRACE(c.label + ": " + c.message);
    ASSERT_EQ(c.outcome, record::Outcome::kOk);
    const int world = c.params.value("world_size", 0);
    if (c.params.value("model", std::string()) == "allreduce") {
      by["allreduce"] = &c;
      continue;
    }
    const std::string mode = c.params.value("ddp_mode", std::string());
    by[std::to_string(world) + " " + mode] = &c;
    const nlohmann::json& ddp = c.effective["ddp"];
    EXPECT_EQ(ddp["backend"], "gloo");
    EXPECT_EQ(ddp["ddp_mode"], mode);
    EXPECT_EQ(ddp["world_size"], world);
    EXPECT_EQ(c.effective["threads"], 1) << "as given: one rank or two, each one thread";
    if (world == 1) continue;
    const auto per_rank = StepsPerRank(c);
    ASSERT_EQ(per_rank.size(), 2u);
    EXPECT_EQ(per_rank.at(0), per_rank.at(1)) << "the ranks agree when to stop, so they run the same steps";
    for (const auto& row : c.steps) {
      EXPECT_EQ((row.record.present & record::kHasComm) != 0, mode != "overlap")
          << "serial separates the all-reduce, compute_only the barrier";
    }
    const nlohmann::json& ranks = c.extras["ddp"]["ranks"];
    ASSERT_EQ(ranks.size(), 2u);
    const nlohmann::json& check0 = ranks[0]["parameter_check"];
    const nlohmann::json& check1 = ranks[1]["parameter_check"];
    if (mode == "compute_only") {
      EXPECT_FALSE(check0["checked"].get<bool>()) << "no gradient is reduced: nothing to agree on";
      continue;
    }
    EXPECT_GE(ddp["buckets"].get<int>(), 1);
    EXPECT_TRUE(check0["identical"].get<bool>());
    EXPECT_EQ(check0["local_hash"], check1["local_hash"]) << "bitwise identical parameters";
  }
  ASSERT_EQ(by.size(), 5u);
  namespace metric = record::metric;
  const record::CellRecord& overlap = *by["2 overlap"];
  const record::CellRecord& serial = *by["2 serial"];
  const record::CellRecord& single = *by["1 overlap"];
  // The references ran first: the world_size 1 cell and the twins before the overlap cell.
  EXPECT_LT(single.index, overlap.index);
  EXPECT_LT(by["2 compute_only"]->index, serial.index);
  EXPECT_LT(serial.index, overlap.index);
  for (const record::CellRecord* c : {&overlap, &serial, &single}) {
    const auto global = record::MetricValue(*c, metric::kDdpGlobalSamplesPerS);
    ASSERT_TRUE(global) << c->label;
    EXPECT_GT(*global, 0) << c->label;
  }
  const double speedup = *record::MetricValue(overlap, metric::kDdpSpeedup);
  EXPECT_NEAR(speedup,
              *record::MetricValue(overlap, metric::kDdpGlobalSamplesPerS) /
                  *record::MetricValue(single, metric::kDdpGlobalSamplesPerS),
              1e-9);
  EXPECT_NEAR(*record::MetricValue(overlap, metric::kDdpScalingEfficiencyPct), speedup / 2 * 100, 1e-9);
  const auto share = record::MetricValue(serial, metric::kDdpAllreduceSharePct);
  ASSERT_TRUE(share);
  EXPECT_GT(*share, 0);
  EXPECT_LT(*share, 100);
  EXPECT_TRUE(record::MetricValue(overlap, metric::kDdpExposedCommNs));
  EXPECT_TRUE(record::MetricValue(overlap, metric::kDdpOverlapPct));
  EXPECT_TRUE(record::MetricValue(serial, metric::kDdpSlowestRank));
  // The serial cell has no world_size 1 cell in this run, and says so.
  EXPECT_FALSE(record::MetricValue(serial, metric::kDdpScalingEfficiencyPct));
  const std::string why = serial.extras[record::kDdpScalingExtrasKey]["efficiency"].value("why_none", "");
  EXPECT_NE(why.find("the run has no world_size 1 cell"), std::string::npos) << why;
  // The allreduce cell: nccl-tests' bandwidths from its mean step, one all-reduce of 1 MiB.
  const record::CellRecord& allreduce = *by["allreduce"];
  EXPECT_EQ(allreduce.effective["allreduce"]["bytes"], 1048576);
  const double algbw = *record::MetricValue(allreduce, metric::kAllreduceAlgbwBytesPerS);
  EXPECT_NEAR(algbw, 1048576.0 / (*record::MetricValue(allreduce, metric::kStepTimeMeanNs) * 1e-9), 1e-3);
  EXPECT_DOUBLE_EQ(*record::MetricValue(allreduce, metric::kAllreduceBusbwBytesPerS), algbw);  // 2(n-1)/n = 1

  const CommandResult show = Dlbench({"show", "1"}, dir, db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("Scaling of resnet50, batch_size 2, device cpu, precision fp32 (ddp;"),
            std::string::npos)
      << show.out;
  EXPECT_NE(show.out.find("1 (control)"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("no efficiency: the run has no world_size 1 cell"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("All-reduce alone"), std::string::npos) << show.out;
}

TEST(TorchDdpE2E, RanksThatDoNotReduceTheirGradientsFailTheCell) {
  TempDir dir("torch_ddp_fault");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, Matrix("[overlap, serial]", kShortMeasure));
  const CommandResult run = RunCommand({Bin("dlbench"), "--db", db, "run", matrix, "--out", dir / "out"}, dir,
                                       {{"DLBENCH_TORCH_DDP_FAULT", "skip_reduction"}});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  const auto cells = Cells(db, 1);
  ASSERT_EQ(cells.size(), 2u) << run.out << run.err;
  for (const auto& c : cells) {
    SCOPED_TRACE(c.label);
    EXPECT_EQ(c.outcome, record::Outcome::kError) << c.message;
    EXPECT_NE(c.message.find("the ranks' parameters differ"), std::string::npos) << c.message;
    EXPECT_EQ(c.effective["threads"], std::max(1, UsableCpus() / 2))
        << "without threads, the ranks of a host share its CPUs";
    // Every rank finds it; the cell names the first whose ERROR arrived.
    EXPECT_TRUE(c.message.rfind("rank 0 of 2: ", 0) == 0 || c.message.rfind("rank 1 of 2: ", 0) == 0)
        << c.message;
  }
}

TEST(TorchDdpE2E, ARankKilledMidCellEndsTheCellNamingItAndLeavesNoRank) {
  TempDir dir("torch_ddp_kill");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  // A cell that would run for a minute: it is the kill that ends it.
  WriteText(matrix, Matrix("overlap", "  min_steps: 100000\n  min_time_s: 60\n  max_time_s: 120\n"));
  SpawnOptions o;
  o.argv = {Bin("dlbench"), "--db", db, "run", matrix, "--out", dir / "out"};
  o.stdout_path = dir / "run.out";
  o.stderr_path = dir / "run.err";
  auto dlbench = Subprocess::Spawn(o);
  ASSERT_TRUE(dlbench.ok()) << dlbench.error().message;

  // The two ranks are dlbench's children, started in rank order; wait until both are up and past
  // their first steps, then kill rank 1.
  std::vector<pid_t> ranks;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (ranks.size() < 2 && std::chrono::steady_clock::now() < until) {
    ranks.clear();
    for (pid_t pid : orchestrator::Descendants(dlbench->pid())) {
      auto cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
      if (cmdline.ok() && cmdline->find("dlbench-torch") != std::string::npos) ranks.push_back(pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(ranks.size(), 2u) << "dlbench started both ranks";
  std::sort(ranks.begin(), ranks.end());
  std::this_thread::sleep_for(std::chrono::seconds(8));
  // The ranks meet in a FileStore and Gloo pairs on 127.0.0.1: nothing of theirs listens on another
  // interface (a TCPStore would, on every one).
  for (pid_t pid : ranks) {
    for (const std::string& local : ListeningAddresses(pid))
      EXPECT_TRUE(Loopback(local)) << "rank process " << pid << " listens on " << local;
  }
  ASSERT_EQ(::kill(ranks[1], SIGKILL), 0);
  const ExitStatus st = dlbench->Wait();
  EXPECT_EQ(st.code, 1) << *ReadFile(dir / "run.err");

  const auto cells = Cells(db, 1);
  ASSERT_EQ(cells.size(), 1u);
  const record::CellRecord& c = cells[0];
  EXPECT_EQ(c.outcome, record::Outcome::kCrashed) << c.message;
  EXPECT_EQ(c.message.rfind("rank 1 of 2: runner killed by SIGKILL", 0), 0u) << c.message;
  EXPECT_EQ(c.extras["ddp"]["ranks"][1]["pid"], ranks[1]) << "the killed process was rank 1";
  for (pid_t pid : ranks) EXPECT_NE(::kill(pid, 0), 0) << "rank process " << pid << " is gone";
  const std::string rendezvous = c.extras["ddp"]["rendezvous"].get<std::string>();
  ASSERT_EQ(rendezvous.rfind("file:///", 0), 0u) << rendezvous;
  EXPECT_FALSE(std::filesystem::exists(rendezvous.substr(7))) << "the killed group's store file is removed";
}

}  // namespace
}  // namespace dlbench::e2e

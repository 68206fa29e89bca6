// `srun -n 2 dlbench run m.yaml --shard auto` under a real Slurm (Debian's slurm-wlm and munge),
// started by this test on this machine as ../shared/notes/slurm-on-one-host.md describes, but
// with everything in a temporary folder: its own munge key and socket, slurm.conf through
// SLURM_CONF, free ports for slurmctld and slurmd. Nothing in /etc is read or written. The
// variables are Slurm's own: the test sets none of them. Skipped (with the reason) when not root
// or when Slurm or munge is not installed.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "e2e_util.h"
#include "group_e2e_util.h"
#include "launcher_e2e_util.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

constexpr const char* kSlurmctld = "/usr/sbin/slurmctld";
constexpr const char* kSlurmd = "/usr/sbin/slurmd";
constexpr const char* kMunged = "/usr/sbin/munged";
constexpr const char* kSrun = "/usr/bin/srun";
constexpr const char* kSinfo = "/usr/bin/sinfo";

// A TCP port nobody listens on now (bound to port 0 and released; another process could take it
// before slurmctld does, which would fail the start-up loudly, not silently).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t len = sizeof addr;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::string ShortHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  const std::string host(name);
  return host.substr(0, host.find('.'));
}

bool Alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

// munged, slurmctld and slurmd of one test, stopped (by the PIDs in their pid files) when it ends.
class SlurmCluster {
 public:
  explicit SlurmCluster(const TempDir& dir) : dir_(dir) {}
  ~SlurmCluster() { Stop(); }

  // The environment every Slurm command of the test needs.
  std::vector<std::pair<std::string, std::string>> Env() const {
    return {{"SLURM_CONF", dir_ / "slurm.conf"}};
  }

  ::testing::AssertionResult Start() {
    namespace fs = std::filesystem;
    // munged refuses a key or a socket folder others may write or read.
    fs::permissions(dir_.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                     fs::perms::others_read | fs::perms::others_exec);
    const std::string munge = dir_ / "munge";
    fs::create_directories(munge);
    fs::permissions(munge, fs::perms::owner_all);
    for (const char* sub : {"state", "spool", "log"}) fs::create_directories(dir_ / sub);
    {
      std::ifstream random("/dev/urandom", std::ios::binary);
      std::string key(1024, '\0');
      random.read(key.data(), static_cast<std::streamsize>(key.size()));
      std::ofstream(munge + "/munge.key", std::ios::binary) << key;
    }
    fs::permissions(munge + "/munge.key", fs::perms::owner_read);
    auto m = RunCommand({kMunged, "--force", "--key-file=" + munge + "/munge.key",
                         "--socket=" + munge + "/socket", "--pid-file=" + munge + "/munged.pid",
                         "--log-file=" + munge + "/munged.log", "--seed-file=" + munge + "/seed"},
                        dir_);
    pid_files_.push_back(munge + "/munged.pid");
    if (m.exit_code != 0) return ::testing::AssertionFailure() << "munged: " << m.err;

    const std::string host = ShortHostName();
    const int ctld_port = FreePort(), d_port = FreePort();
    if (host.empty() || ctld_port == 0 || d_port == 0 || ctld_port == d_port) {
      return ::testing::AssertionFailure() << "no host name or free ports";
    }
    const std::string s = dir_.path().string();
    WriteText(dir_ / "slurm.conf", "ClusterName=dlbenchtest\nSlurmctldHost=" + host + "\nSlurmctldPort=" +
                                       std::to_string(ctld_port) + "\nSlurmdPort=" + std::to_string(d_port) +
                                       "\nSlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\n"
                                       "AuthInfo=socket=" +
                                       munge +
                                       "/socket\nCredType=cred/munge\n"
                                       "StateSaveLocation=" +
                                       s + "/state\nSlurmdSpoolDir=" + s +
                                       "/spool\n"
                                       "SlurmctldLogFile=" +
                                       s + "/log/ctld.log\nSlurmdLogFile=" + s +
                                       "/log/d.log\n"
                                       "SlurmctldPidFile=" +
                                       s + "/ctld.pid\nSlurmdPidFile=" + s +
                                       "/d.pid\n"
                                       "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                                       "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n"
                                       "MpiDefault=none\nReturnToService=2\n"
                                       "NodeName=" +
                                       host +
                                       " CPUs=2 State=UNKNOWN\n"
                                       "PartitionName=p Nodes=" +
                                       host + " Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n");
    for (const auto& [daemon, pid_file] :
         {std::pair{kSlurmctld, s + "/ctld.pid"}, std::pair{kSlurmd, s + "/d.pid"}}) {
      auto r = RunCommand({daemon}, dir_, Env());
      pid_files_.push_back(pid_file);
      if (r.exit_code != 0) return ::testing::AssertionFailure() << daemon << ": " << r.err << Logs();
    }
    // The node is idle once slurmd has registered with slurmctld.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < give_up) {
      auto r = RunCommand({kSinfo, "-h", "-o", "%t"}, dir_, Env());
      if (r.exit_code == 0 && r.out.find("idle") != std::string::npos) return ::testing::AssertionSuccess();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return ::testing::AssertionFailure() << "the node did not become idle in 30 s" << Logs();
  }

  // slurmd, slurmctld, munged: SIGTERM to all, up to 1 s, then SIGKILL to those left (slurmctld
  // took about 5 s to end on SIGTERM here; its state is in the temporary folder, thrown away).
  void Stop() {
    std::vector<pid_t> pids;
    for (auto it = pid_files_.rbegin(); it != pid_files_.rend(); ++it) {
      auto text = ReadFile(*it);
      if (!text.ok() || text->empty()) continue;
      const pid_t pid = static_cast<pid_t>(std::stol(*text));
      if (Alive(pid) && ::kill(pid, SIGTERM) == 0) pids.push_back(pid);
    }
    pid_files_.clear();
    const auto wait_for_all = [&pids](std::chrono::milliseconds limit) {
      const auto give_up = std::chrono::steady_clock::now() + limit;
      for (const pid_t pid : pids) {
        while (Alive(pid) && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
      }
    };
    wait_for_all(std::chrono::milliseconds(1000));
    for (const pid_t pid : pids) {
      if (Alive(pid)) ::kill(pid, SIGKILL);
    }
    wait_for_all(std::chrono::milliseconds(2000));
  }

  std::string Logs() const {
    std::string out;
    for (const char* log : {"log/ctld.log", "log/d.log"}) {
      auto text = ReadFile(dir_ / log);
      if (text.ok())
        out +=
            "\n--- " + std::string(log) + ":\n" + text->substr(text->size() > 3000 ? text->size() - 3000 : 0);
    }
    return out;
  }

 private:
  const TempDir& dir_;
  std::vector<std::string> pid_files_;
};

TEST(SlurmE2E, SrunTasksWithShardAutoRunEachCellOnceAndRecordTheSlurmLauncher) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: slurmd runs the job as SlurmUser root here";
  for (const char* exe : {kSlurmctld, kSlurmd, kMunged, kSrun, kSinfo}) {
    if (::access(exe, X_OK) != 0) {
      GTEST_SKIP() << exe << " is not installed (apt-get install slurm-wlm munge: scripts/setup-debian.sh)";
    }
  }
  TempDir dir("slurm");
  const auto t0 = std::chrono::steady_clock::now();
  SlurmCluster cluster(dir);
  ASSERT_TRUE(cluster.Start());
  const auto t1 = std::chrono::steady_clock::now();

  WriteText(dir / "m.yaml", kSweep);
  // One SQLite file per task, named by the task's own SLURM_PROCID (expanded by the task's shell).
  auto srun = RunFor(
      {kSrun, "-n", "2", "/bin/sh", "-c",
       R"(exec "$0" --db "$1/r-$SLURM_PROCID.db" run "$1/m.yaml" --out "$1/out" --no-monitor --shard auto)",
       Bin("dlbench"), dir.path().string()},
      dir, cluster.Env(), "srun", 60);
  const auto t2 = std::chrono::steady_clock::now();
  std::printf("[ info ] Slurm up in %.2f s; srun -n 2 dlbench run --shard auto took %.2f s\n",
              std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
  ASSERT_EQ(srun.exit_code, 0) << srun.err << cluster.Logs();

  auto plan = Dlbench({"plan", dir / "m.yaml", "--json"}, dir, dir / "plan.db");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::set<std::string> planned;
  for (const auto& c : nlohmann::json::parse(plan.out)) planned.insert(c["id"].get<std::string>());
  ASSERT_EQ(planned.size(), 4u);

  std::set<std::string> ran;
  std::set<std::string> sweeps;
  for (int task = 0; task < 2; ++task) {
    const std::string db = dir / ("r-" + std::to_string(task) + ".db");
    auto store = store::OpenSqliteStore(db);
    ASSERT_TRUE(store.ok()) << db << ": " << store.error().message << "\n" << srun.err;
    auto runs = (*store)->ListRuns();
    ASSERT_TRUE(runs.ok());
    ASSERT_EQ(runs->size(), 1u) << db;
    const std::int64_t id = runs->front().id;
    auto run = (*store)->GetRun(id);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, record::RunStatus::kCompleted);
    const std::string shard = std::to_string(task + 1) + "/2";
    EXPECT_EQ(run->selection.shard, shard);
    const nlohmann::json& l = run->environment["launcher"];
    EXPECT_EQ(l["launcher"], "slurm") << l.dump();
    EXPECT_EQ(l["rank"], (nlohmann::json{{"value", task}, {"from", "SLURM_PROCID"}})) << l.dump();
    EXPECT_EQ(l["world_size"], (nlohmann::json{{"value", 2}, {"from", "SLURM_NTASKS"}})) << l.dump();
    EXPECT_EQ(l["master_addr"]["value"], ShortHostName()) << l.dump();
    EXPECT_EQ(l["shard"]["value"], shard);
    EXPECT_TRUE(l["seen"].contains("SLURM_JOB_ID")) << l.dump();
    // The tasks of one srun are one sweep, named by the job and its step.
    EXPECT_EQ(run->sweep, "slurm-" + l["seen"].value("SLURM_JOB_ID", std::string("?")) + "." +
                              l["seen"].value("SLURM_STEP_ID", std::string("?")))
        << l.dump();
    EXPECT_EQ(l["sweep"]["from"], "SLURM_JOB_ID.SLURM_STEP_ID") << l.dump();
    EXPECT_EQ(run->sweep_cells, 4);
    sweeps.insert(run->sweep);
    auto cells = (*store)->GetCells(id, store::CellQuery{});
    ASSERT_TRUE(cells.ok());
    EXPECT_EQ(cells->size(), 2u);
    for (const auto& c : *cells) {
      EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
      EXPECT_TRUE(ran.insert(c.cell_id).second) << c.cell_id << " ran in both tasks";
    }
  }
  EXPECT_EQ(ran, planned) << "the two tasks together ran the whole matrix";
  ASSERT_EQ(sweeps.size(), 1u) << "both tasks name one sweep";

  // The two task files copied into one store read as one run.
  for (int task = 0; task < 2; ++task) {
    auto copied = Dlbench({"db", "copy", dir / ("r-" + std::to_string(task) + ".db"), dir / "all.db"}, dir,
                          dir / "all.db");
    ASSERT_EQ(copied.exit_code, 0) << copied.err;
  }
  auto show = Dlbench({"show", "sweep:" + *sweeps.begin()}, dir, dir / "all.db");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("2 of 2 shards stored"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("status completed, 4 of 4 cells stored"), std::string::npos) << show.out;

  // A runner started by a dlbench under srun sees none of Slurm's variables: a command runner
  // that writes its environment to a file and then is the null runner.
  WriteRunnerEnvMatrix(dir);
  auto env_run = RunFor({kSrun, "-n", "1", Bin("dlbench"), "--db", dir / "env.db", "run", dir / "env.yaml",
                         "--out", dir / "out", "--no-monitor"},
                        dir, cluster.Env(), "srun-env", 60);
  ASSERT_EQ(env_run.exit_code, 0) << env_run.err;
  CheckRunnerEnvFiles(dir, {"\nSLURM"});
  const auto t3 = std::chrono::steady_clock::now();
  cluster.Stop();
  std::printf("[ info ] the runner-environment run took %.2f s; stopping Slurm %.2f s\n",
              std::chrono::duration<double>(t3 - t2).count(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t3).count());
}

// `srun -n 2 dlbench run m.yaml` without --shard: the two tasks run the matrix once as a group.
// The non-ddp cell runs on task 0 alone; the ddp cell's rank 1 runs on task 1, which sends its
// steps to task 0; task 0 alone writes a store. Then a rank 1 that crashes ends its cell naming
// it, the next cell still runs, and no rank is left running.
TEST(SlurmE2E, SrunTasksWithoutAShardRunTheMatrixOnceAsAGroupAndRankZeroStoresIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: slurmd runs the job as SlurmUser root here";
  for (const char* exe : {kSlurmctld, kSlurmd, kMunged, kSrun, kSinfo}) {
    if (::access(exe, X_OK) != 0) {
      GTEST_SKIP() << exe << " is not installed (apt-get install slurm-wlm munge: scripts/setup-debian.sh)";
    }
  }
  TempDir dir("slurm-group");
  SlurmCluster cluster(dir);
  ASSERT_TRUE(cluster.Start());
  WriteText(dir / "m.yaml", kGroupMatrix);
  const auto t1 = std::chrono::steady_clock::now();
  auto srun = RunFor({kSrun, "-n", "2", "/bin/sh", "-c",
                      R"(exec "$0" --db "$1/r-$SLURM_PROCID.db" run "$1/m.yaml" --out "$1/out" --no-monitor)",
                      Bin("dlbench"), dir.path().string()},
                     dir, cluster.Env(), "srun-group", 60);
  std::printf("[ info ] srun -n 2 dlbench run (a group) took %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
  ASSERT_EQ(srun.exit_code, 0) << srun.out << srun.err << cluster.Logs();
  EXPECT_FALSE(std::filesystem::exists(dir / "r-1.db")) << "rank 0 alone writes the store";
  CheckGroupRun(dir / "r-0.db", "slurm", "SLURM_PROCID",
                "20000 + (SLURM_JOB_ID x 64 + SLURM_STEP_ID) mod 40000");

  // A rank 1 that crashes at its first step: the cell ends crashed naming it, the next cell runs.
  WriteText(dir / "crash.yaml", kGroupCrashMatrix);
  auto crash =
      RunFor({kSrun, "-n", "2", "/bin/sh", "-c",
              R"(exec "$0" --db "$1/crash-$SLURM_PROCID.db" run "$1/crash.yaml" --out "$1/out" --no-monitor)",
              Bin("dlbench"), dir.path().string()},
             dir, cluster.Env(), "srun-crash", 60);
  EXPECT_EQ(crash.exit_code, 1) << "a cell was not ok: " << crash.out << crash.err;
  CheckCrashedRemoteRank(dir / "crash-0.db");
  EXPECT_FALSE(std::filesystem::exists(dir / "crash-1.db"));

  // Tasks given different plans (each its own matrix file) are refused, each saying why.
  WriteText(dir / "m-0.yaml", kGroupMatrix);
  WriteText(dir / "m-1.yaml", kGroupCrashMatrix);
  auto mismatch =
      RunFor({kSrun, "-n", "2", "/bin/sh", "-c",
              R"(exec "$0" --db "$1/x.db" run "$1/m-$SLURM_PROCID.yaml" --out "$1/out" --no-monitor)",
              Bin("dlbench"), dir.path().string()},
             dir, cluster.Env(), "srun-mismatch", 90);
  EXPECT_NE(mismatch.exit_code, 0);
  EXPECT_NE(mismatch.err.find("task 1 on " + ShortHostName() + " has a different plan"), std::string::npos)
      << mismatch.err;
  EXPECT_NE(mismatch.err.find("rank 1 joining rank 0 at "), std::string::npos) << mismatch.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "x.db")) << "a refused group stores nothing";
}

// The processes whose command line has `arg` among its arguments.
std::vector<pid_t> ProcessesWithArg(const std::string& arg) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmdline = ReadFile(entry.path().string() + "/cmdline");
    if (!cmdline.ok()) continue;
    std::string wanted(1, '\0');
    wanted += arg;
    wanted += '\0';
    if (cmdline->insert(0, 1, '\0').find(wanted) != std::string::npos)
      found.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return found;
}

// The children of `parent` named `comm`.
std::vector<pid_t> ChildrenNamed(pid_t parent, const std::string& comm) {
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto stat = ReadFile(entry.path().string() + "/stat");
    if (!stat.ok()) continue;
    const auto open = stat->find('('), close = stat->rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    std::istringstream rest(stat->substr(close + 2));
    std::string state;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent && stat->substr(open + 1, close - open - 1) == comm)
      found.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return found;
}

// What KillATaskMidCell saw.
struct KilledTask {
  bool runner_died = false;  // rank 1's runner was gone within 2 s of the kill
  std::string err;           // srun's stderr (every task's)
  double srun_s = 0;
};

// Starts `argv` (an srun of two dlbench tasks, `--db DIR/NAME-$SLURM_PROCID.db`), waits for rank
// 1's runner to start and hang, SIGKILLs task `victim`'s dlbench (found by its --db argument), and
// waits for srun to end.
KilledTask KillATaskMidCell(const TempDir& dir, const std::vector<std::pair<std::string, std::string>>& env,
                            const std::vector<std::string>& argv, const std::string& name, int victim) {
  KilledTask out;
  SpawnOptions o;
  o.argv = argv;
  o.extra_env = env;
  o.stdout_path = dir / ("srun-" + name + ".out");
  o.stderr_path = dir / ("srun-" + name + ".err");
  const auto t0 = std::chrono::steady_clock::now();
  auto srun = Subprocess::Spawn(o);
  EXPECT_TRUE(srun.ok()) << srun.error().message;
  if (!srun.ok()) return out;
  const auto task_of = [&](int rank) {
    const std::vector<pid_t> found = ProcessesWithArg(dir / (name + "-" + std::to_string(rank) + ".db"));
    return found.empty() ? pid_t{-1} : found.front();
  };
  pid_t runner = -1;
  const auto give_up = t0 + std::chrono::seconds(30);
  while (runner < 0 && std::chrono::steady_clock::now() < give_up && !srun->TryWait()) {
    const pid_t task = task_of(1);
    const std::vector<pid_t> children = task > 0 ? ChildrenNamed(task, "dlbench-null") : std::vector<pid_t>{};
    if (!children.empty()) runner = children.front();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_GT(runner, 0) << "rank 1's runner never started";
  // Past its first step, the runner hangs (it ignores SIGTERM and reads nothing more).
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(ProcessLives(runner));
  const pid_t task = task_of(victim);
  EXPECT_GT(task, 0);
  if (runner > 0 && task > 0) {
    EXPECT_EQ(::kill(task, SIGKILL), 0);
    const auto killed = std::chrono::steady_clock::now();
    while (ProcessLives(runner) && std::chrono::steady_clock::now() < killed + std::chrono::seconds(2))
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    out.runner_died = !ProcessLives(runner);
  }
  std::optional<ExitStatus> st;
  while (!(st = srun->TryWait()) && std::chrono::steady_clock::now() < t0 + std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!st) srun->Terminate(2000);
  out.srun_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.err = ReadFile(o.stderr_path).ok() ? *ReadFile(o.stderr_path) : "";
  EXPECT_TRUE(st.has_value()) << "srun did not end within 60 s: " << out.err;
  return out;
}

// `srun -n 2 dlbench run` (a group) whose rank 1 hangs, exits early, or whose whole task is killed
// mid-cell: each time the cell ends naming rank 1, rank 0 finishes the run (the next cells run),
// and no rank process is left running. Then rank 0's task killed mid-cell: rank 1's task ends its
// runner and exits 4.
TEST(SlurmE2E, AGroupRunEndsTheCellNamingARemoteRankThatHangsExitsEarlyOrLosesItsTask) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: slurmd runs the job as SlurmUser root here";
  for (const char* exe : {kSlurmctld, kSlurmd, kMunged, kSrun, kSinfo}) {
    if (::access(exe, X_OK) != 0) {
      GTEST_SKIP() << exe << " is not installed (apt-get install slurm-wlm munge: scripts/setup-debian.sh)";
    }
  }
  TempDir dir("slurm-group-faults");
  SlurmCluster cluster(dir);
  ASSERT_TRUE(cluster.Start());
  auto group_run = [&](const std::string& name) -> std::vector<std::string> {
    return {kSrun,
            "-n",
            "2",
            "/bin/sh",
            "-c",
            R"(exec "$0" --db "$1/$2-$SLURM_PROCID.db" run "$1/$2.yaml" --out "$1/out" --no-monitor)",
            Bin("dlbench"),
            dir.path().string(),
            name};
  };

  // 1. Rank 1 hangs (ignoring SIGTERM) under a 3 s timeout: its task kills it at the timeout.
  WriteText(dir / "hang.yaml", kGroupHangMatrix);
  auto t = std::chrono::steady_clock::now();
  auto hang = RunFor(group_run("hang"), dir, cluster.Env(), "srun-hang", 60);
  std::printf("[ info ] a hung rank 1: srun took %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
  EXPECT_EQ(hang.exit_code, 1) << "a cell was not ok: " << hang.out << hang.err;
  CheckFailingRemoteRank(dir / "hang-0.db", {{"a", record::Outcome::kTimeout,
                                              "no result within timeout_s=3; killed its process group"},
                                             {"b", record::Outcome::kOk, ""}});
  EXPECT_FALSE(std::filesystem::exists(dir / "hang-1.db"));

  // 2. Rank 1 exits early: with exit code 3, and with 0 after closing its protocol pipe.
  WriteText(dir / "exit.yaml", kGroupExitMatrix);
  t = std::chrono::steady_clock::now();
  auto exit = RunFor(group_run("exit"), dir, cluster.Env(), "srun-exit", 60);
  std::printf("[ info ] rank 1 exiting early: srun took %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
  EXPECT_EQ(exit.exit_code, 1) << "a cell was not ok: " << exit.out << exit.err;
  CheckFailingRemoteRank(dir / "exit-0.db",
                         {{"a", record::Outcome::kError, "runner ended with exit code 3"},
                          {"a", record::Outcome::kInvalid, "runner exited without sending DONE"},
                          {"b", record::Outcome::kOk, ""}});

  // 3. Rank 1's task (its dlbench) is killed while its runner hangs mid-cell: that runner does
  // not outlive it, and rank 0 names the lost connection, ends the later ddp cell that needs the
  // task without starting it, runs the non-ddp cell and completes the run (exit 1: cells not ok).
  WriteText(dir / "lost.yaml", kGroupLostTaskMatrix);
  const KilledTask lost = KillATaskMidCell(dir, cluster.Env(), group_run("lost"), "lost", 1);
  std::printf("[ info ] rank 1's task killed: srun took %.2f s\n", lost.srun_s);
  EXPECT_TRUE(lost.runner_died) << "rank 1's runner outlived its task's dlbench";
  CheckFailingRemoteRank(dir / "lost-0.db",
                         {{"a", record::Outcome::kError, "rank 0 lost the connection to its task on "},
                          {"b", record::Outcome::kError, "lost the connection to its task on ", false},
                          {"c", record::Outcome::kOk, ""}});
  EXPECT_NE(lost.err.find("task 0: Exited with exit code 1"), std::string::npos) << lost.err;
  EXPECT_NE(lost.err.find("task 1: Killed"), std::string::npos) << lost.err;

  // 4. Rank 0's task is killed while rank 1's runner hangs mid-cell: rank 1's task kills its runner
  // on the lost connection and exits 4; nothing is stored by it.
  WriteText(dir / "lost0.yaml", kGroupLostTaskMatrix);
  const KilledTask lost0 = KillATaskMidCell(dir, cluster.Env(), group_run("lost0"), "lost0", 0);
  std::printf("[ info ] rank 0's task killed: srun took %.2f s\n", lost0.srun_s);
  EXPECT_TRUE(lost0.runner_died) << "rank 1's task did not end its runner";
  EXPECT_NE(lost0.err.find("task 0: Killed"), std::string::npos) << lost0.err;
  EXPECT_NE(lost0.err.find("task 1: Exited with exit code 4"), std::string::npos) << lost0.err;
  EXPECT_NE(lost0.err.find("the connection to rank 0's task was lost during cell 1 (a ddp ws=2 inject=hang); "
                           "this task's rank 1 was killed"),
            std::string::npos)
      << lost0.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "lost0-1.db"));
}

// The first of the processes whose command line has `arg` among its arguments, waiting up to 30 s
// for one; -1 when none came.
pid_t WaitForProcessWithArg(const std::string& arg) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < give_up) {
    const std::vector<pid_t> found = ProcessesWithArg(arg);
    if (!found.empty()) return found.front();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

// `srun -n 2 dlbench run m.yaml --only ...` interrupted (Ctrl-C to rank 0) in its second cell,
// then `srun -n 2 dlbench run m.yaml --resume 1`: every task resumes, rank 0 with the run's stored
// selection and finished cell, which it sends the other task to check; the finished cell is not
// run again, the rest run as a group, and the run completes. Tasks that disagree on --resume are
// refused.
TEST(SlurmE2E, AnInterruptedGroupRunResumesUnderSrunWithItsSelectionAndKeepsItsFinishedCells) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: slurmd runs the job as SlurmUser root here";
  for (const char* exe : {kSlurmctld, kSlurmd, kMunged, kSrun, kSinfo}) {
    if (::access(exe, X_OK) != 0) {
      GTEST_SKIP() << exe << " is not installed (apt-get install slurm-wlm munge: scripts/setup-debian.sh)";
    }
  }
  TempDir dir("slurm-group-resume");
  SlurmCluster cluster(dir);
  ASSERT_TRUE(cluster.Start());
  WriteText(dir / "m.yaml", kGroupResumeMatrix);
  const std::string db0 = dir / "r-0.db";
  auto group_run = [&](const std::string& options) -> std::vector<std::string> {
    return {
        kSrun,
        "-n",
        "2",
        "/bin/sh",
        "-c",
        R"(exec "$0" --db "$1/r-$SLURM_PROCID.db" run "$1/m.yaml" --out "$1/out" --no-monitor )" + options,
        Bin("dlbench"),
        dir.path().string()};
  };

  // 1. The first run, interrupted while its second cell runs.
  SpawnOptions o;
  o.argv = group_run("--only 'model!=c'");
  o.extra_env = cluster.Env();
  o.stdout_path = dir / "first.out";
  o.stderr_path = dir / "first.err";
  const auto t0 = std::chrono::steady_clock::now();
  auto first = Subprocess::Spawn(o);
  ASSERT_TRUE(first.ok()) << first.error().message;
  bool second_cell = false;
  while (!second_cell && std::chrono::steady_clock::now() < t0 + std::chrono::seconds(30) &&
         !first->TryWait()) {
    auto err = ReadFile(o.stderr_path);
    second_cell = err.ok() && err->find("[2/2] b") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(second_cell) << *ReadFile(o.stderr_path);
  const pid_t zero = WaitForProcessWithArg(db0);
  ASSERT_GT(zero, 0);
  ASSERT_EQ(::kill(zero, SIGINT), 0);
  std::optional<ExitStatus> st;
  while (!(st = first->TryWait()) && std::chrono::steady_clock::now() < t0 + std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!st) first->Terminate(2000);
  const std::string first_err = *ReadFile(o.stderr_path);
  ASSERT_TRUE(st.has_value()) << first_err;
  EXPECT_NE(first_err.find("task 0: Exited with exit code 130"), std::string::npos) << first_err;
  EXPECT_NE(first_err.find("task 1: Exited with exit code 4"), std::string::npos) << first_err;
  std::string finished_id;
  std::int64_t finished_started = 0;
  {
    auto store = store::OpenSqliteStore(db0);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto run = (*store)->GetRun(1);
    ASSERT_TRUE(run.ok()) << run.error().message;
    EXPECT_EQ(run->status, record::RunStatus::kInterrupted);
    auto cells = (*store)->GetCells(1, store::CellQuery{});
    ASSERT_TRUE(cells.ok());
    ASSERT_EQ(cells->size(), 1u) << "only the first cell finished";
    EXPECT_EQ(cells->front().params.value("model", ""), "a");
    finished_id = cells->front().cell_id;
    finished_started = cells->front().started_wall_ns;
  }

  // 2. Every task resumes: rank 0 reapplies --only and skips cell a; the other task agrees.
  const auto t1 = std::chrono::steady_clock::now();
  auto resumed = RunFor(group_run("--resume 1"), dir, cluster.Env(), "resume", 60);
  std::printf("[ info ] srun -n 2 dlbench run --resume (a group) took %.2f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.err.find("resuming run 1 with its selection: --only 'model!=c'"), std::string::npos)
      << resumed.err;
  EXPECT_NE(resumed.err.find("task 1: resuming run 1 with rank 0 (1 cell(s) already finished)"),
            std::string::npos)
      << resumed.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "r-1.db")) << "rank 0 alone writes the store";
  {
    auto store = store::OpenSqliteStore(db0);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto run = (*store)->GetRun(1);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->status, record::RunStatus::kCompleted);
    auto runs = (*store)->ListRuns();
    ASSERT_TRUE(runs.ok());
    EXPECT_EQ(runs->size(), 1u) << "the resume is the same run";
    store::CellQuery with_steps;
    with_steps.with_steps = true;
    auto cells = (*store)->GetCells(1, with_steps);
    ASSERT_TRUE(cells.ok());
    ASSERT_EQ(cells->size(), 2u) << "cells a and b; c is outside the run's selection";
    for (const record::CellRecord& c : *cells) {
      EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
      if (c.cell_id == finished_id) {
        EXPECT_EQ(c.started_wall_ns, finished_started) << "the finished cell is not run again";
        continue;
      }
      EXPECT_EQ(c.params.value("model", ""), "b");
      std::set<std::uint32_t> ranks;
      for (const record::StepRow& row : c.steps) ranks.insert(row.rank);
      EXPECT_EQ(ranks, (std::set<std::uint32_t>{0, 1})) << "both tasks ran their rank of cell b";
    }
  }

  // 3. Tasks that disagree on --resume are refused on both sides; nothing changes.
  // Only task 0 is given --resume 1.
  const std::string only_task_zero_resumes =
      R"(R=""; [ "$SLURM_PROCID" = 0 ] && R="--resume 1"; )"
      R"(exec "$0" --db "$1/r-$SLURM_PROCID.db" run "$1/m.yaml" --out "$1/out" --no-monitor $R)";
  auto mixed =
      RunFor({kSrun, "-n", "2", "/bin/sh", "-c", only_task_zero_resumes, Bin("dlbench"), dir.path().string()},
             dir, cluster.Env(), "mixed", 60);
  EXPECT_NE(mixed.exit_code, 0);
  EXPECT_NE(mixed.err.find("task 1 on " + ShortHostName() + " starts a new run, and rank 0 resumes run 1"),
            std::string::npos)
      << mixed.err;
  auto store = store::OpenSqliteStore(db0);
  ASSERT_TRUE(store.ok());
  auto runs = (*store)->ListRuns();
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 1u);
}

// Rank 0's task stopped (SIGSTOP: the connection stays open, as when its host vanishes) while rank
// 1's runner hangs mid-cell: rank 1's task hears no beat for DLBENCH_GROUP_SILENCE_S (2 s), kills
// its runner and exits 4 saying why. Rank 0's task is then killed: its store keeps the run
// `running`, which `runs` and `show` call abandoned.
TEST(SlurmE2E, ATaskWhoseRankZeroFallsSilentEndsItsRankAndTheKilledRunReadsAbandoned) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: slurmd runs the job as SlurmUser root here";
  for (const char* exe : {kSlurmctld, kSlurmd, kMunged, kSrun, kSinfo}) {
    if (::access(exe, X_OK) != 0) {
      GTEST_SKIP() << exe << " is not installed (apt-get install slurm-wlm munge: scripts/setup-debian.sh)";
    }
  }
  TempDir dir("slurm-group-silent");
  SlurmCluster cluster(dir);
  ASSERT_TRUE(cluster.Start());
  WriteText(dir / "lost.yaml", kGroupLostTaskMatrix);
  SpawnOptions o;
  o.argv = {kSrun,
            "-n",
            "2",
            "/bin/sh",
            "-c",
            R"(exec "$0" --db "$1/lost-$SLURM_PROCID.db" run "$1/lost.yaml" --out "$1/out" --no-monitor)",
            Bin("dlbench"),
            dir.path().string()};
  o.extra_env = cluster.Env();
  o.extra_env.emplace_back("DLBENCH_GROUP_SILENCE_S", "2");
  o.stdout_path = dir / "srun.out";
  o.stderr_path = dir / "srun.err";
  auto srun = Subprocess::Spawn(o);
  ASSERT_TRUE(srun.ok()) << srun.error().message;
  const pid_t task1 = WaitForProcessWithArg(dir / "lost-1.db");
  const pid_t task0 = WaitForProcessWithArg(dir / "lost-0.db");
  ASSERT_GT(task1, 0);
  ASSERT_GT(task0, 0);
  pid_t runner = -1;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (runner < 0 && std::chrono::steady_clock::now() < give_up) {
    const std::vector<pid_t> children = ChildrenNamed(task1, "dlbench-null");
    if (!children.empty()) runner = children.front();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(runner, 0) << "rank 1's runner never started";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past its first step: it hangs
  ASSERT_EQ(::kill(task0, SIGSTOP), 0);
  const auto stopped = std::chrono::steady_clock::now();
  while ((ProcessLives(task1) || ProcessLives(runner)) &&
         std::chrono::steady_clock::now() < stopped + std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double noticed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  std::printf("[ info ] rank 1's task and runner gone %.2f s after rank 0's task stopped\n", noticed_s);
  EXPECT_FALSE(ProcessLives(runner)) << "rank 1's task did not end its runner";
  EXPECT_FALSE(ProcessLives(task1)) << "rank 1's task did not notice the silence";
  // The silence counts from the last beat heard, up to one beat interval before the stop.
  EXPECT_GE(noticed_s, 1.0) << "not before the silence limit";
  ::kill(task0, SIGKILL);
  std::optional<ExitStatus> st;
  while (!(st = srun->TryWait()) && std::chrono::steady_clock::now() < stopped + std::chrono::seconds(40))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!st) srun->Terminate(2000);
  const std::string err = *ReadFile(o.stderr_path);
  EXPECT_NE(err.find("task 1: Exited with exit code 4"), std::string::npos) << err;
  EXPECT_NE(err.find("rank 0's task sent nothing for 2 s (it sends a beat every 1 s): its host is gone, the "
                     "network to it is cut, or it is stopped during cell 1 (a ddp ws=2 inject=hang); this "
                     "task's rank 1 was killed"),
            std::string::npos)
      << err;

  // Rank 0's dlbench died with the run `running`: nothing runs it, and both commands say so.
  auto runs = Dlbench({"runs"}, dir, dir / "lost-0.db");
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_NE(runs.out.find(" abandoned "), std::string::npos) << runs.out;
  auto show = Dlbench({"show", "1"}, dir, dir / "lost-0.db");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("status abandoned, 0 of 3 cells stored"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("--resume 1' runs the rest"), std::string::npos) << show.out;
}

}  // namespace
}  // namespace dlbench::e2e

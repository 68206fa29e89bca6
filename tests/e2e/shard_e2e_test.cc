// `dlbench run --shard K/N` as a multi-GPU user runs it: two dlbench processes, one per
// (pretend) GPU, on one matrix and one database at the same time. Both finish, each is its own
// run, their cells are disjoint and together the whole matrix, each holds exactly what
// `plan --shard` listed, the database passes integrity_check, and the shared progress file is
// never seen half-written. An interrupted shard resumes with the selection it stored, and with no
// other.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "e2e_sqlite.h"
#include "e2e_util.h"
#include "launcher_e2e_util.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

// 8 quick cells, each measured for 0.2 to 0.8 s, so the two shards' cells overlap in time.
// min_time_s is at most a quarter of max_time_s: MSER-5 may cut up to half the steps as warm-up
// and the cell must still have min_time_s measured to end ok on a loaded machine.
constexpr char kEightCells[] = R"(name: shards
runner: null
matrix:
  model: [a, b, c, d, e, f, g, h]
  step_ms: [0.3]
measure:
  min_steps: 20
  min_time_s: 0.2
  max_time_s: 0.8
)";

std::string Text(const std::string& path) {
  auto text = ReadFile(path);
  return text.ok() ? *text : "";
}

std::unique_ptr<store::ResultStore> OpenStore(const std::string& db) {
  auto s = store::OpenSqliteStore(db);
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(s).value() : nullptr;
}

std::set<std::string> CellIds(store::ResultStore& s, std::int64_t run_id) {
  std::set<std::string> ids;
  auto cells = s.GetCells(run_id, store::CellQuery{});
  EXPECT_TRUE(cells.ok()) << cells.error().message;
  if (!cells.ok()) return ids;
  for (const auto& c : *cells) {
    EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
    EXPECT_TRUE(ids.insert(c.cell_id).second) << c.cell_id << " stored twice in run " << run_id;
  }
  return ids;
}

std::vector<record::CellRecord> Cells(const std::string& db, std::int64_t run_id = 1) {
  auto s = OpenStore(db);
  if (!s) return {};
  auto cells = s->GetCells(run_id, store::CellQuery{});
  EXPECT_TRUE(cells.ok()) << cells.error().message;
  return cells.ok() ? *cells : std::vector<record::CellRecord>{};
}

// The cell ids `dlbench plan ... --json` lists.
std::set<std::string> PlannedIds(const std::string& matrix, const TempDir& dir, const std::string& db,
                                 const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"plan", matrix, "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto plan = Dlbench(args, dir, db);
  EXPECT_EQ(plan.exit_code, 0) << plan.err;
  std::set<std::string> ids;
  for (const auto& c : nlohmann::json::parse(plan.out)) ids.insert(c["id"].get<std::string>());
  return ids;
}

// The run id from dlbench run's first stderr line, "dlbench: run 7 (name): ...".
std::int64_t RunIdFromStderr(const std::string& err) {
  const std::string prefix = "dlbench: run ";
  auto at = err.find(prefix);
  return at == std::string::npos ? 0 : std::stoll(err.substr(at + prefix.size()));
}

struct Shard {
  std::string spec;
  std::string out, err;
  Subprocess process;
};

Shard StartShard(const std::string& spec, const std::string& gpu, const std::string& matrix,
                 const std::string& db, const TempDir& dir) {
  const std::string tag = spec.substr(0, spec.find('/'));
  SpawnOptions o;
  o.argv = {Bin("dlbench"), "--db", db, "run", matrix, "--out", dir / "out", "--shard", spec};
  o.extra_env = {{"CUDA_VISIBLE_DEVICES", gpu}};  // as the docs' example; the null runner ignores it
  o.stdout_path = dir / ("shard" + tag + ".out");
  o.stderr_path = dir / ("shard" + tag + ".err");
  auto p = Subprocess::Spawn(o);
  EXPECT_TRUE(p.ok()) << p.error().message;
  return Shard{spec, o.stdout_path, o.stderr_path, std::move(p).value()};
}

TEST(ShardE2E, TwoConcurrentShardsOnOneDatabaseRunTheMatrixOnce) {
  TempDir dir("shards");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, kEightCells);
  const std::set<std::string> planned = PlannedIds(matrix, dir, db);
  ASSERT_EQ(planned.size(), 8u);

  // Both start before either has created the database: they race to create it, too.
  std::vector<Shard> shards;
  shards.push_back(StartShard("1/2", "0", matrix, db, dir));
  shards.push_back(StartShard("2/2", "1", matrix, db, dir));

  // While they run, every read of the shared progress file must be one whole JSON object.
  const std::string progress = db + ".progress.json";
  int progress_reads = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!(shards[0].process.TryWait() && shards[1].process.TryWait()) &&
         std::chrono::steady_clock::now() < give_up) {
    auto text = ReadFile(progress);
    if (text.ok()) {
      ++progress_reads;
      auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
      EXPECT_TRUE(j.is_object() && j.contains("run_id") && j.contains("pid")) << "torn progress file:\n"
                                                                              << *text;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::printf("[ info ] %d reads of the progress file while both shards ran\n", progress_reads);

  std::map<std::string, std::int64_t> run_of_shard;
  for (Shard& s : shards) {
    const ExitStatus st = s.process.Wait();
    const std::string err = Text(s.err);
    EXPECT_TRUE(st.success()) << "shard " << s.spec << ": " << st.Describe() << "\n" << err;
    EXPECT_NE(err.find("4 cells, shard " + s.spec + " of 8"), std::string::npos) << err;
    run_of_shard[s.spec] = RunIdFromStderr(err);
  }
  ASSERT_NE(run_of_shard["1/2"], run_of_shard["2/2"]) << "each process is its own run";

  EXPECT_EQ(IntegrityCheck(db), "ok");
  EXPECT_FALSE(std::filesystem::exists(progress)) << "the last run to finish removes the progress file";
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos)
        << "left behind: " << entry.path();
  }

  auto s = OpenStore(db);
  ASSERT_TRUE(s);
  std::set<std::string> all;
  for (const auto& [spec, run_id] : run_of_shard) {
    ASSERT_GT(run_id, 0) << spec;
    auto run = s->GetRun(run_id);
    ASSERT_TRUE(run.ok()) << run.error().message;
    EXPECT_EQ(run->status, record::RunStatus::kCompleted) << spec;
    EXPECT_EQ(run->total_cells, 4) << spec;
    const std::set<std::string> ids = CellIds(*s, run_id);
    EXPECT_EQ(ids, PlannedIds(matrix, dir, db, {"--shard", spec}))
        << "shard " << spec << " ran what plan listed";
    for (const auto& id : ids) EXPECT_TRUE(all.insert(id).second) << id << " ran in both shards";
  }
  EXPECT_EQ(all, planned) << "the two shards together are the whole matrix";
  auto runs = s->ListRuns();
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 2u);
}

// The last line of `text` that contains `needle` ("" when none).
std::string LineWith(const std::string& text, const std::string& needle) {
  const auto at = text.rfind(needle);
  if (at == std::string::npos) return "";
  const auto begin = text.rfind('\n', at) + 1;  // npos + 1 is 0: the first line
  return text.substr(begin, text.find('\n', at) - begin);
}

TEST(ShardE2E, AnInterruptedShardResumesWithTheSelectionItStored) {
  TempDir dir("shard_resume");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  // Cells of more than a second (a 1 s set-up before READY, not measured, then the measure bounds
  // of kEightCells): SIGINT after the first stored cell lands with three cells to go.
  WriteText(matrix, R"(runner: null
matrix:
  model: [a, b, c, d, e, f, g, h]
  step_ms: [0.3]
  setup_ms: [1000]
measure:
  min_steps: 20
  min_time_s: 0.2
  max_time_s: 0.8
)");
  Shard shard = StartShard("2/2", "1", matrix, db, dir);
  ASSERT_GE(WaitForStoredCells(db, 1, 1, 60), 1u) << Text(shard.err);
  ::kill(shard.process.pid(), SIGINT);
  ASSERT_EQ(shard.process.Wait().code, 130) << Text(shard.err);
  const std::string err = Text(shard.err);
  const std::string hint = LineWith(err, "continue with: ");
  // The hint names the database it was run on, so that pasting it works.
  ASSERT_NE(hint.find("dlbench --db " + db + " run "), std::string::npos) << err;
  EXPECT_NE(err.find("Details: dlbench --db " + db + " show 1"), std::string::npos) << err;
  EXPECT_EQ(hint.find("--shard"), std::string::npos) << "the run stored its shard; the hint needs none:\n"
                                                     << err;
  EXPECT_EQ(hint.substr(hint.size() - 11), " --resume 1") << err;
  const auto stored = Cells(db);
  ASSERT_GE(stored.size(), 1u);
  ASSERT_LT(stored.size(), 4u);

  // The run names its selection.
  auto show = Dlbench({"show", "1"}, dir, db);
  EXPECT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("\n  selection: --shard 2/2\n"), std::string::npos) << show.out;
  auto exported = Dlbench({"export", "1", "--format", "json"}, dir, db);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(nlohmann::json::parse(exported.out)["run"]["selection"], nlohmann::json({{"shard", "2/2"}}));

  // Another selection is refused, naming both; nothing runs.
  for (const std::vector<std::string>& wrong : {std::vector<std::string>{"--shard", "1/2"},
                                                {"--shard", "1/4"},
                                                {"--only", "model=b"},
                                                {"--only", "model=b", "--shard", "2/2"}}) {
    std::vector<std::string> args = {"run", matrix, "--out", dir / "out", "--resume", "1"};
    args.insert(args.end(), wrong.begin(), wrong.end());
    std::string asked;
    for (const auto& w : wrong) asked += (asked.empty() ? "" : " ") + w;
    auto refused = Dlbench(args, dir, db);
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(refused.err.find("run 1 was started with --shard 2/2, but this resume asks for " + asked + ";"),
              std::string::npos)
        << refused.err;
    EXPECT_EQ(Cells(db).size(), stored.size()) << "a refused resume runs nothing";
  }

  // Plain --resume reapplies the stored shard and runs exactly its remaining cells.
  auto resumed = Dlbench({"run", matrix, "--out", dir / "out", "--resume", "1"}, dir, db);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("dlbench: resuming run 1 with its selection: --shard 2/2\n"), std::string::npos)
      << resumed.err;
  EXPECT_NE(resumed.err.find(std::to_string(4 - stored.size()) + " cells (" + std::to_string(stored.size()) +
                             " already finished), shard 2/2 of 8"),
            std::string::npos)
      << resumed.err;
  auto s = OpenStore(db);
  ASSERT_TRUE(s);
  EXPECT_EQ(CellIds(*s, 1), PlannedIds(matrix, dir, db, {"--shard", "2/2"}));
  EXPECT_EQ(s->GetRun(1)->status, record::RunStatus::kCompleted);
  for (const auto& before : stored) {
    const auto after = Cells(db);
    const auto same = std::find_if(after.begin(), after.end(),
                                   [&](const record::CellRecord& c) { return c.cell_id == before.cell_id; });
    ASSERT_NE(same, after.end());
    EXPECT_EQ(same->started_wall_ns, before.started_wall_ns) << before.cell_id << " ran again";
  }
  s.reset();

  // A run stored before runs recorded their selection reads as the whole matrix: it needs its
  // shard given again, and the cell-count guard refuses a resume without it.
  ASSERT_EQ(ExecuteSql(db, "UPDATE runs SET selection = '{}' WHERE id = 1"), "ok");
  auto unrecorded = Dlbench({"run", matrix, "--out", dir / "out", "--resume", "1"}, dir, db);
  EXPECT_EQ(unrecorded.exit_code, 2) << unrecorded.err;
  EXPECT_NE(unrecorded.err.find("run 1 has 4 cells, but this selection keeps 8 cells"), std::string::npos)
      << unrecorded.err;
  auto given = Dlbench({"run", matrix, "--out", dir / "out", "--resume", "1", "--shard", "2/2"}, dir, db);
  EXPECT_EQ(given.exit_code, 0) << given.err;
  EXPECT_NE(given.err.find("0 cells (4 already finished), shard 2/2 of 8"), std::string::npos) << given.err;
  EXPECT_EQ(Cells(db).size(), 4u);
}

// The variables srun gave task 1 of `srun -n 2` on this machine (set by hand here; the `slurm`
// test reads the real ones), with an NCCL variable the fingerprint records beside them.
const std::vector<std::pair<std::string, std::string>> kSrunTask1 = {{"SLURM_JOB_ID", "7"},
                                                                     {"SLURM_STEP_ID", "0"},
                                                                     {"SLURM_PROCID", "1"},
                                                                     {"SLURM_NTASKS", "2"},
                                                                     {"SLURM_LOCALID", "1"},
                                                                     {"SLURM_NODEID", "0"},
                                                                     {"SLURM_JOB_NODELIST", "node[03-04]"},
                                                                     {"NCCL_DEBUG", "WARN"}};

TEST(ShardE2E, AutoTakesTheShardFromTheLauncherAndTheFingerprintSaysWhere) {
  TempDir dir("shard_auto");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, kSweep);
  auto run = RunCommand({Bin("dlbench"), "--db", db, "run", matrix, "--out", dir / "out", "--shard", "auto"},
                        dir, kSrunTask1);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("2 cells, shard 2/2 of 4"), std::string::npos) << run.err;
  auto s = OpenStore(db);
  ASSERT_TRUE(s);
  EXPECT_EQ(CellIds(*s, 1), PlannedIds(matrix, dir, db, {"--shard", "2/2"}));
  auto stored = s->GetRun(1);
  ASSERT_TRUE(stored.ok()) << stored.error().message;
  EXPECT_EQ(stored->selection.shard, "2/2") << "the run stores the resolved shard, as --resume compares it";
  const nlohmann::json& l = stored->environment["launcher"];
  EXPECT_EQ(l["launcher"], "slurm") << l.dump();
  EXPECT_EQ(l["rank"], (nlohmann::json{{"value", 1}, {"from", "SLURM_PROCID"}}));
  EXPECT_EQ(l["world_size"], (nlohmann::json{{"value", 2}, {"from", "SLURM_NTASKS"}}));
  EXPECT_EQ(l["local_rank"]["from"], "SLURM_LOCALID");
  EXPECT_EQ(l["master_addr"],
            (nlohmann::json{{"value", "node03"}, {"from", "SLURM_JOB_NODELIST (first host)"}}));
  EXPECT_EQ(l["shard"]["value"], "2/2");
  EXPECT_EQ(l["shard"]["from"], "--shard auto: slurm: SLURM_PROCID + 1 of SLURM_NTASKS");
  EXPECT_FALSE(l.contains("nccl")) << "NCCL_* are in the fingerprint's env, redacted as it does";
  EXPECT_EQ(stored->environment["env"]["NCCL_DEBUG"], "WARN");
  EXPECT_EQ(l["seen"]["SLURM_JOB_ID"], "7");
  s.reset();

  // torchrun's variables take precedence over Slurm's, and `plan --shard auto` agrees with run.
  auto both = kSrunTask1;
  both.insert(both.end(), {{"RANK", "0"},
                           {"WORLD_SIZE", "4"},
                           {"LOCAL_RANK", "0"},
                           {"MASTER_ADDR", "127.0.0.1"},
                           {"MASTER_PORT", "29500"}});
  auto plan =
      RunCommand({Bin("dlbench"), "--db", db, "plan", matrix, "--json", "--shard", "auto"}, dir, both);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  std::set<std::string> planned;
  for (const auto& c : nlohmann::json::parse(plan.out)) planned.insert(c["id"].get<std::string>());
  EXPECT_EQ(planned, PlannedIds(matrix, dir, db, {"--shard", "1/4"}));
  // A flag takes precedence over both; the fingerprint still records the launcher it saw.
  auto flagged = RunCommand(
      {Bin("dlbench"), "--db", db, "run", matrix, "--out", dir / "out", "--shard", "4/4"}, dir, both);
  ASSERT_EQ(flagged.exit_code, 0) << flagged.err;
  s = OpenStore(db);
  ASSERT_TRUE(s);
  const nlohmann::json l2 = s->GetRun(2)->environment["launcher"];
  EXPECT_EQ(l2["launcher"], "torchrun") << l2.dump();
  EXPECT_EQ(l2["shard"], (nlohmann::json{{"value", "4/4"}, {"from", "--shard"}}));
  EXPECT_EQ(l2["master_port"]["value"], 29500);
  ASSERT_TRUE(l2["overridden"].is_array());
  EXPECT_EQ(CellIds(*s, 2), PlannedIds(matrix, dir, db, {"--shard", "4/4"}));
}

TEST(ShardE2E, AutoWithoutALauncherOrWithAMalformedOneIsAnErrorNamingTheVariables) {
  TempDir dir("shard_auto_bad");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, kSweep);
  // Whatever launched this test, its variables are not passed on to dlbench here.
  const std::vector<std::string> argv = {"/usr/bin/env",
                                         "-u",
                                         "RANK",
                                         "-u",
                                         "WORLD_SIZE",
                                         "-u",
                                         "SLURM_PROCID",
                                         "-u",
                                         "SLURM_NTASKS",
                                         "-u",
                                         "SLURM_ARRAY_TASK_ID",
                                         Bin("dlbench"),
                                         "--db",
                                         db,
                                         "run",
                                         matrix,
                                         "--shard",
                                         "auto"};
  auto none = RunCommand(argv, dir);
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_EQ(none.err.rfind("dlbench run: ", 0), 0u) << none.err;
  for (const char* name : {"RANK and WORLD_SIZE (torchrun)", "SLURM_PROCID and SLURM_NTASKS (srun)",
                           "SLURM_ARRAY_TASK_ID", "--shard K/N"})
    EXPECT_NE(none.err.find(name), std::string::npos) << name << ": " << none.err;
  EXPECT_FALSE(std::filesystem::exists(db)) << "nothing is created";

  auto bad = RunCommand({Bin("dlbench"), "--db", db, "run", matrix, "--shard", "auto"}, dir,
                        {{"RANK", "2"}, {"WORLD_SIZE", "2"}});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--shard auto: RANK=2 is not below WORLD_SIZE=2"), std::string::npos) << bad.err;
  auto batch = RunCommand({Bin("dlbench"), "--db", db, "run", matrix, "--shard", "auto"}, dir,
                          {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}});
  EXPECT_EQ(batch.exit_code, 2) << batch.err;
  EXPECT_NE(batch.err.find("SLURM_NTASKS=2 but SLURM_STEP_ID is not set"), std::string::npos) << batch.err;
  EXPECT_FALSE(std::filesystem::exists(db));
}

}  // namespace
}  // namespace dlbench::e2e

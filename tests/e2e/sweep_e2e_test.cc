// Sweeps (issue 23): the shards of one plan, each its own `dlbench run --shard K/N --sweep NAME`
// process writing one SQLite store, read as one run by `runs --sweeps`, `show sweep:NAME`,
// `compare`, `report` and `export`; a missing shard is said plainly. The null runner's virtual
// time keeps every cell ok and valid on a loaded machine.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "e2e_util.h"
#include "launcher_e2e_util.h"

namespace dlbench::e2e {
namespace {

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The line of `text` that starts with `prefix` ("" when none).
std::string LineStarting(const std::string& text, const std::string& prefix) {
  const std::string with_newline = "\n" + text;
  const auto at = with_newline.find("\n" + prefix);
  if (at == std::string::npos) return "";
  const auto end = text.find('\n', at);
  return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

void RunShard(const std::string& matrix, const std::string& shard, const std::string& sweep,
              const TempDir& dir, const std::string& db) {
  auto r = Dlbench({"run", matrix, "--out", dir / "out", "--shard", shard, "--sweep", sweep}, dir, db);
  ASSERT_EQ(r.exit_code, 0) << shard << " of " << sweep << ":\n" << r.err;
}

TEST(SweepE2E, ShardsOfOneSweepReadAsOneRunAndAMissingShardIsSaid) {
  TempDir dir("sweep");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, kSweep);  // four cells: a, b, c, d
  RunShard(matrix, "1/2", "full", dir, db);
  RunShard(matrix, "2/2", "full", dir, db);
  RunShard(matrix, "2/2", "half", dir, db);  // shard 1/2 of "half" never runs

  auto runs = Dlbench({"runs"}, dir, db);
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_NE(runs.out.find("full 1/2"), std::string::npos) << runs.out;
  EXPECT_NE(runs.out.find("full 2/2"), std::string::npos) << runs.out;
  EXPECT_NE(runs.out.find("half 2/2"), std::string::npos) << runs.out;

  auto sweeps = Dlbench({"runs", "--sweeps"}, dir, db);
  ASSERT_EQ(sweeps.exit_code, 0) << sweeps.err;
  const std::string full = LineStarting(sweeps.out, "full ");
  const std::string half = LineStarting(sweeps.out, "half ");
  EXPECT_NE(full.find(" 2/2 "), std::string::npos) << sweeps.out;  // shards stored of N
  EXPECT_NE(full.find(" 4/4 "), std::string::npos) << sweeps.out;  // cells stored of the plan's
  EXPECT_NE(full.find(" yes "), std::string::npos) << sweeps.out;
  EXPECT_NE(half.find(" 1/2 "), std::string::npos) << sweeps.out;
  EXPECT_NE(half.find(" 2/4 "), std::string::npos) << sweeps.out;
  EXPECT_NE(half.find("no (missing 1 of 2)"), std::string::npos) << sweeps.out;

  // show: every cell of the plan once, from both shards.
  auto show = Dlbench({"show", "sweep:full"}, dir, db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("sweep full: slurm-sweep"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("2 of 2 shards stored (runs 1, 2)"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("status completed, 4 of 4 cells stored"), std::string::npos) << show.out;
  for (const char* cell : {"\n0  a ", "\n1  b ", "\n2  c ", "\n3  d "})
    EXPECT_EQ(Count(show.out, cell), 1) << cell << show.out;
  EXPECT_EQ(show.out.find("note:"), std::string::npos) << show.out;

  auto show_half = Dlbench({"show", "sweep:half"}, dir, db);
  ASSERT_EQ(show_half.exit_code, 0) << show_half.err;
  EXPECT_NE(show_half.out.find("note: shard 1/2 has not stored a run"), std::string::npos) << show_half.out;
  EXPECT_NE(show_half.out.find("status incomplete, 2 of 4 cells stored"), std::string::npos) << show_half.out;

  // export: the sweep's cells once each, with its shards and the one missing.
  auto exported = Dlbench({"export", "sweep:half", "--format", "json"}, dir, db);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.err.find("note: sweep:half: shard 1/2 has not stored a run"), std::string::npos)
      << exported.err;
  const auto half_json = nlohmann::json::parse(exported.out);
  EXPECT_EQ(half_json["run"]["sweep"]["missing"], nlohmann::json::array({"1/2"}));
  EXPECT_EQ(half_json["run"]["sweep"]["cells"], 4);
  EXPECT_EQ(half_json["cells"].size(), 2u);
  auto full_export = Dlbench({"export", "sweep:full", "--format", "json"}, dir, db);
  ASSERT_EQ(full_export.exit_code, 0) << full_export.err;
  const auto full_json = nlohmann::json::parse(full_export.out);
  std::set<std::string> ids;
  for (const auto& c : full_json["cells"]) ids.insert(c["cell_id"].get<std::string>());
  EXPECT_EQ(ids.size(), 4u) << full_export.out;

  // compare: the two sweeps' cells match by key; the missing shard is said.
  auto cmp = Dlbench({"compare", "sweep:full", "sweep:half", "--format", "json"}, dir, db);
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  EXPECT_NE(cmp.err.find("note: sweep:half: shard 1/2 has not stored a run"), std::string::npos) << cmp.err;
  const auto cmp_json = nlohmann::json::parse(cmp.out);
  EXPECT_EQ(cmp_json["cells"].size(), 2u) << cmp.out;
  EXPECT_EQ(cmp_json["only_in_base"].size(), 2u) << cmp.out;
  auto cmp_text = Dlbench({"compare", "sweep:full", "sweep:full"}, dir, db);
  ASSERT_EQ(cmp_text.exit_code, 0) << cmp_text.err;
  EXPECT_NE(cmp_text.out.find("4 no change"), std::string::npos) << cmp_text.out;
  EXPECT_NE(cmp_text.out.find("sweep full"), std::string::npos) << cmp_text.out;

  // report: one page for the sweep.
  auto report = Dlbench({"report", "sweep:full", "-o", dir / "sweep.html"}, dir, db);
  ASSERT_EQ(report.exit_code, 0) << report.err;
  EXPECT_NE(report.out.find("(sweep full, 4 cells)"), std::string::npos) << report.out;

  auto unknown = Dlbench({"show", "sweep:nope"}, dir, db);
  EXPECT_EQ(unknown.exit_code, 2) << unknown.err;
  EXPECT_NE(
      unknown.err.find("no run in sqlite:" + db + " is a shard of sweep 'nope' (its sweeps: half, full)"),
      std::string::npos)
      << unknown.err;
}

TEST(SweepE2E, ASweepNameNeedsAShardIsBoundedAndNamesOnePlan) {
  TempDir dir("sweep_bad");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, kSweep);
  auto no_shard = Dlbench({"run", matrix, "--sweep", "s"}, dir, db);
  EXPECT_EQ(no_shard.exit_code, 2);
  EXPECT_NE(no_shard.err.find("--sweep s needs --shard K/N"), std::string::npos) << no_shard.err;
  auto bad_name = Dlbench({"run", matrix, "--shard", "1/2", "--sweep", "a b"}, dir, db);
  EXPECT_EQ(bad_name.exit_code, 2);
  EXPECT_NE(bad_name.err.find("--sweep 'a b': a sweep name is 1 to 128 characters"), std::string::npos)
      << bad_name.err;
  EXPECT_FALSE(std::filesystem::exists(db)) << "a refused run creates no store";

  // One name for two plans (another N): the sweep is refused with the runs that disagree.
  RunShard(matrix, "1/2", "s", dir, db);
  RunShard(matrix, "1/4", "s", dir, db);
  auto show = Dlbench({"show", "sweep:s"}, dir, db);
  EXPECT_EQ(show.exit_code, 2) << show.out;
  EXPECT_NE(
      show.err.find("sweep s holds runs of different plans (run 2 is shard 1/4 and run 1 is shard 1/2)"),
      std::string::npos)
      << show.err;
  auto sweeps = Dlbench({"runs", "--sweeps"}, dir, db);
  EXPECT_EQ(sweeps.exit_code, 0) << sweeps.err;
  EXPECT_NE(sweeps.out.find("conflict: run 2 is shard 1/4"), std::string::npos) << sweeps.out;
}

// srun's variables for task PROCID of `srun -n 8` in job 7, step 0 (as the real Slurm sets them:
// slurm_e2e_test checks the same path under a real srun).
std::vector<std::pair<std::string, std::string>> SrunTask(int procid) {
  return {{"SLURM_JOB_ID", "7"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_PROCID", std::to_string(procid)},
          {"SLURM_NTASKS", "8"},
          {"SLURM_LOCALID", std::to_string(procid)},
          {"SLURM_NODEID", "0"},
          {"SLURM_JOB_NODELIST", "vm"}};
}

// More srun tasks than cells: the tasks past the plan's four cells have an empty shard, which
// exits 0 with a line (srun must not report the job failed) and stores nothing; the others share
// the job's sweep, which is complete without the empty shards.
TEST(SweepE2E, UnderALauncherAnEmptyShardExitsZeroAndTheJobIsOneCompleteSweep) {
  TempDir dir("sweep_srun");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, kSweep);  // four cells
  for (int task : {0, 1, 2, 3, 7}) {
    auto r = RunCommand({Bin("dlbench"), "--db", db, "run", matrix, "--out", dir / "out", "--shard", "auto"},
                        dir, SrunTask(task));
    ASSERT_EQ(r.exit_code, 0) << "task " << task << ":\n" << r.err;
    if (task == 7) {
      EXPECT_NE(
          r.err.find("dlbench: shard 8/8 (from the launcher) has no cells: the plan has 4 cells, fewer than "
                     "the launcher's 8 tasks; nothing to run here, no run stored"),
          std::string::npos)
          << r.err;
    }
  }
  auto runs = Dlbench({"runs"}, dir, db);
  EXPECT_EQ(Count(runs.out, "slurm-7.0 "), 4) << runs.out;
  auto sweeps = Dlbench({"runs", "--sweeps"}, dir, db);
  ASSERT_EQ(sweeps.exit_code, 0) << sweeps.err;
  const std::string line = LineStarting(sweeps.out, "slurm-7.0 ");
  EXPECT_NE(line.find(" 4/8 "), std::string::npos) << sweeps.out;
  EXPECT_NE(line.find(" 4/4 "), std::string::npos) << sweeps.out;
  EXPECT_NE(line.find(" yes "), std::string::npos) << "shards 5-8 of 4 cells hold none:\n" << sweeps.out;
  auto show = Dlbench({"show", "sweep:slurm-7.0"}, dir, db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("status completed, 4 of 4 cells stored"), std::string::npos) << show.out;
  EXPECT_EQ(show.out.find("note:"), std::string::npos) << show.out;
}

// Issue 23's plan-time check: a ddp cuda cell of more ranks than this host's GPUs is a warning at
// its world_size line. CUDA_VISIBLE_DEVICES=0 bounds the count at 1 whatever GPUs (or none) the
// machine running the test has.
TEST(HostGpusE2E, PlanAndRunWarnAtTheWorldSizeLineWhenTheHostShowsTooFewGpus) {
  TempDir dir("host_gpus");
  WriteText(dir / "ddp.yaml",
            "runner: torch\nmatrix:\n  model: resnet50\n  device: [cuda, cpu]\n  strategy: ddp\n"
            "  world_size: [1, 2]\n");
  auto plan = RunCommand({Bin("dlbench"), "--db", dir / "r.db", "plan", dir / "ddp.yaml"}, dir,
                         {{"CUDA_VISIBLE_DEVICES", "0"}});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(
      plan.err.find(dir / "ddp.yaml" +
                    ":6:3: warning: world_size 2 of strategy ddp on cuda needs 2 GPUs on this host, and it "
                    "has 1 ("),
      std::string::npos)
      << plan.err;
  EXPECT_NE(plan.err.find("CUDA_VISIBLE_DEVICES=0"), std::string::npos) << plan.err;
  EXPECT_EQ(Count(plan.err, "warning: world_size"), 1) << "once, for the cuda cell only:\n" << plan.err;
  EXPECT_EQ(Count(plan.out, ",model=resnet50,"), 4) << "every cell is still planned:\n" << plan.out;

  // run says the same before its first cell (the same function; the cells then run as their runner
  // decides: dlbench-null's ranks, in virtual time, do not refuse, so the warning says only that
  // they would share the GPU).
  WriteText(dir / "null.yaml",
            "runner: null\nmatrix:\n  device: cuda\n  strategy: ddp\n  world_size: 2\n  step_ms: 1\n"
            "  virtual_time: true\nmeasure:\n  max_time_s: 1\n");
  auto run =
      RunCommand({Bin("dlbench"), "--db", dir / "n.db", "run", dir / "null.yaml", "--out", dir / "out"}, dir,
                 {{"CUDA_VISIBLE_DEVICES", "0"}});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.err.find(dir / "null.yaml" +
                         ":5:3: world_size 2 of strategy ddp on cuda needs 2 GPUs on this host, and it has 1 "
                         "(CUDA_VISIBLE_DEVICES=0): its ranks would share a GPU"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(Count(run.err, "world_size 2 of strategy ddp"), 1) << run.err;
}

}  // namespace
}  // namespace dlbench::e2e

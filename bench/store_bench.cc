// How long storing one cell takes on each backend: PutCell of a cell with 10,000 steps (two of
// the three phases measured), 8 sampled series of 1,000 points each (10 Hz over a 100 s cell) and
// 40 metrics, on SQLite (a file in $TMPDIR) and on PostgreSQL (a scratch database), alternating
// between them so both see the same machine load. Prints the median, min and max per backend and
// the ratio of the medians; the target is PostgreSQL <= 3x SQLite (docs/storage.md, "Cost").
//
//   build/bin/dlbench-bench-store [--pg URL] [--steps N] [--repeat R]
//
// --pg names a server by a role that may CREATE DATABASE (a scratch database is made and dropped);
// without it the bench starts a throwaway cluster of its own (scripts/pg-test-cluster.sh).
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "store/postgres/pg_store.h"
#include "store/postgres/pg_test_util.h"
#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace {

using namespace dlbench;

record::CellRecord BenchCell(std::int64_t run_id, int index, int steps) {
  record::CellRecord cell;
  cell.run_id = run_id;
  cell.index = index;
  cell.cell_id = "resnet50/bs64/cuda:0/fp16#r" + std::to_string(index);
  cell.key = "resnet50/bs64/cuda:0/fp16";
  cell.label = "resnet50 bs=64 cuda:0 fp16";
  cell.params = {{"model", "resnet50"}, {"batch_size", 64}, {"device", "cuda:0"}, {"precision", "fp16"}};
  cell.effective = {{"device", "cuda:0"}, {"dtype", "float16"}, {"threads", 16}};
  cell.hello = {{"runner", "torch"}, {"protocol", 1}};
  cell.seed = 1234567;
  cell.outcome = record::Outcome::kOk;
  cell.verdict = record::Verdict::kValid;
  cell.verdict_reasons = nlohmann::json::array();
  cell.window = record::MeasuredWindow{50, steps - 50};
  cell.warmup_rule = "mser5";
  cell.stop_reason = "ci_target";
  cell.stdout_path = "/logs/run-1/cell.out";
  cell.stderr_path = "/logs/run-1/cell.err";
  cell.started_wall_ns = 1'700'000'000'000'000'000;
  cell.finished_wall_ns = cell.started_wall_ns + 100'000'000'000;
  for (int m = 0; m < 40; ++m)
    cell.metrics.push_back({"metric_" + std::to_string(m), 1.5e6 + m * 0.25, "ns"});
  cell.steps.resize(static_cast<std::size_t>(steps));
  for (int i = 0; i < steps; ++i) {
    record::StepRecord& r = cell.steps[static_cast<std::size_t>(i)].record;
    r.start_ns = 12'000'000'000LL + i * 10'000'000LL;
    r.end_ns = r.start_ns + 9'800'000 + (i % 97) * 1000;
    r.samples = 64;
    r.data_wait_ns = 20'000 + i % 13;
    r.compute_ns = 9'700'000 + i % 31;
    r.present = record::kHasDataWait | record::kHasCompute;
  }
  const char* series[] = {"gpu0.sm_util_pct", "gpu0.mem_util_pct", "gpu0.power_w",        "gpu0.sm_clock_mhz",
                          "gpu0.temp_c",      "host.cpu_util_pct", "host.mem_used_bytes", "proc.rss_bytes"};
  for (int t = 0; t < 1000; ++t) {
    for (const char* name : series)
      cell.series.push_back({12'000'000'000LL + t * 100'000'000LL, name, 50.0 + t % 17});
  }
  return cell;
}

struct Timings {
  std::vector<double> ms;
  double Median() const {
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    return n == 0 ? 0 : (n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]));
  }
  double Min() const { return ms.empty() ? 0 : *std::min_element(ms.begin(), ms.end()); }
  double Max() const { return ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()); }
};

bool TimePut(store::ResultStore& store, const record::CellRecord& cell, Timings& timings) {
  const auto start = std::chrono::steady_clock::now();
  Status put = store.PutCell(cell);
  const auto end = std::chrono::steady_clock::now();
  if (!put.ok()) {
    std::fprintf(stderr, "dlbench-bench-store: PutCell on %s failed: %s\n", store.Describe().c_str(),
                 put.error().message.c_str());
    return false;
  }
  timings.ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  return true;
}

int Usage() {
  std::fprintf(stderr,
               "usage: dlbench-bench-store [--pg URL] [--steps N (100..1000000)] [--repeat R (1..1000)]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string pg_url;
  int steps = 10'000, repeat = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return Usage();
    if (arg == "--pg") {
      pg_url = argv[++i];
    } else if (arg == "--steps") {
      steps = std::atoi(argv[++i]);
    } else if (arg == "--repeat") {
      repeat = std::atoi(argv[++i]);
    } else {
      return Usage();
    }
  }
  if (steps < 100 || steps > 1'000'000 || repeat < 1 || repeat > 1000) return Usage();

  std::optional<store::testing::PrivateCluster> own;
  store::testing::PgCluster cluster;
  if (pg_url.empty()) {
    own.emplace();
    if (!own->skip_reason().empty() || !own->error().empty()) {
      std::fprintf(stderr, "dlbench-bench-store: cannot start a PostgreSQL server: %s%s (or give --pg URL)\n",
                   own->skip_reason().c_str(), own->error().c_str());
      return 1;
    }
    cluster = own->cluster();
  } else {
    cluster.admin_url = pg_url;
  }
  store::testing::ScratchDatabase database(cluster, "bench");
  if (!database.ok()) {
    std::fprintf(stderr, "dlbench-bench-store: %s\n", database.error().c_str());
    return 1;
  }
  store::testing::ScratchDir dir;
  auto lite = store::OpenSqliteStore(dir.File("bench.db"));
  auto pg = store::PostgresStore::Open(database.url());
  if (!lite.ok() || !pg.ok()) {
    std::fprintf(stderr, "dlbench-bench-store: %s\n",
                 (!lite.ok() ? lite.error() : pg.error()).message.c_str());
    return 1;
  }
  record::RunRecord run;
  run.name = "bench";
  run.environment_hash = "bench";
  const auto lite_run = (*lite)->BeginRun(run);
  const auto pg_run = (*pg)->BeginRun(run);
  if (!lite_run.ok() || !pg_run.ok()) return 1;

  // One untimed cell each first: the first transaction pays for cold caches and plans.
  Timings warmup, sqlite_ms, postgres_ms;
  if (!TimePut(**lite, BenchCell(*lite_run, 0, steps), warmup) ||
      !TimePut(**pg, BenchCell(*pg_run, 0, steps), warmup)) {
    return 1;
  }
  for (int i = 1; i <= repeat; ++i) {
    const record::CellRecord a = BenchCell(*lite_run, i, steps);
    const record::CellRecord b = BenchCell(*pg_run, i, steps);
    if (!TimePut(**lite, a, sqlite_ms) || !TimePut(**pg, b, postgres_ms)) return 1;
  }
  auto setting = [&](const char* name) {
    auto rows = (*pg)->connection().Query(std::string("SELECT current_setting('") + name + "')");
    return rows.ok() && rows->size() > 0 ? rows->Text(0, 0) : std::string("?");
  };
  const record::CellRecord shape = BenchCell(0, 0, steps);
  std::printf(
      "PutCell of one cell: %d steps, %zu series points, %zu metrics; %d repetitions after one untimed\n",
      steps, shape.series.size(), shape.metrics.size(), repeat);
  std::printf("sqlite      %s (WAL, synchronous=NORMAL)\n", (*lite)->Describe().c_str());
  std::printf("postgresql  %s (server %d, fsync=%s, synchronous_commit=%s)\n", (*pg)->Describe().c_str(),
              (*pg)->connection().server_version(), setting("fsync").c_str(),
              setting("synchronous_commit").c_str());
  std::printf("%-11s median %8.2f ms  min %8.2f ms  max %8.2f ms\n", "sqlite", sqlite_ms.Median(),
              sqlite_ms.Min(), sqlite_ms.Max());
  std::printf("%-11s median %8.2f ms  min %8.2f ms  max %8.2f ms\n", "postgresql", postgres_ms.Median(),
              postgres_ms.Min(), postgres_ms.Max());
  const double ratio = sqlite_ms.Median() > 0 ? postgres_ms.Median() / sqlite_ms.Median() : 0;
  std::printf("ratio       %.2f (postgresql median / sqlite median; target <= 3)\n", ratio);
  return 0;
}

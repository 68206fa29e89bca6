// The PostgreSQL store end to end, through the real dlbench binary and null-runner processes:
// every command gives the same results on both backends (a run copied with `db copy` and back),
// `run` writes to PostgreSQL directly, the Grafana dashboard's queries return rows, bad locations
// are one-line exit-3 errors without the password, reading commands never create a store, a
// newer schema is refused untouched, and a server that restarts during a run loses no cell while
// one that stays away ends the run with its cell spilled and `--resume` stores it.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "e2e_util.h"
#include "store/postgres/pg_store.h"
#include "store/postgres/pg_test_util.h"

namespace dlbench::e2e {
namespace {

using store::testing::PgCluster;
using store::testing::ScratchDatabase;

constexpr char kSmokeMatrix[] = R"(name: smoke
runner: null
matrix:
  model: [tiny, small]
  batch_size: [1, 8]
  step_ms: [0.3]
measure:
  min_steps: 20
  min_time_s: 0.1
  max_time_s: 1.0
  target_rel_ci: 0.05
)";

// Ten cells of about half a second each: long enough to stop the server between them.
constexpr char kTenCells[] = R"(name: ten
runner: null
matrix:
  model: [a, b, c, d, e, f, g, h, i, j]
  step_ms: [2]
measure:
  min_steps: 20
  min_time_s: 0.4
  max_time_s: 1.0
  target_rel_ci: 0.5
)";

std::string WithPassword(const std::string& url, const std::string& password) {
  const std::size_t at = url.find('@');
  return url.substr(0, at) + ":" + password + url.substr(at);
}

CommandResult DlbenchEnv(const std::vector<std::string>& args, const TempDir& dir, const std::string& db,
                         std::vector<std::pair<std::string, std::string>> env) {
  std::vector<std::string> argv = {Bin("dlbench"), "--db", db};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, dir, std::move(env));
}

std::size_t Lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::size_t StoredCells(const std::string& url, std::int64_t run_id) {
  auto store = store::PostgresStore::Open(url);
  if (!store.ok()) return 0;
  auto ids = (*store)->FinishedCellIds(run_id);
  return ids.ok() ? ids->size() : 0;
}

std::string One(const std::string& url, const std::string& sql) {
  auto c = store::pg::Connection::Open(url);
  EXPECT_TRUE(c.ok()) << c.error().message;
  if (!c.ok()) return "";
  auto rows = c->Query(sql);
  EXPECT_TRUE(rows.ok()) << sql << ": " << rows.error().message;
  return rows.ok() && rows->size() > 0 ? rows->Text(0, 0) : "";
}

// Grafana's macros and variables as Grafana would expand them for the whole history.
std::string ExpandGrafana(std::string sql, const std::map<std::string, std::string>& variables) {
  const std::string macro = "$__timeFilter(";
  for (std::size_t at = sql.find(macro); at != std::string::npos; at = sql.find(macro)) {
    const std::size_t close = sql.find(')', sql.find(')', at) + 1);  // the macro's argument has one ')'
    const std::string expr = sql.substr(at + macro.size(), close - at - macro.size());
    sql.replace(at, close + 1 - at, expr + " BETWEEN to_timestamp(0) AND now() + interval '1 day'");
  }
  for (const auto& [name, value] : variables) {
    for (std::size_t at = sql.find(name); at != std::string::npos; at = sql.find(name, at + value.size())) {
      sql.replace(at, name.size(), value);
    }
  }
  return sql;
}

TEST(PostgresE2E, EveryCommandGivesTheSameResultsOnBothBackends) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase db(cluster, "same");
  ASSERT_TRUE(db.ok()) << db.error();
  TempDir dir("pg_same");
  const std::string matrix = dir / "smoke.yaml", lite = dir / "r.db";
  WriteText(matrix, kSmokeMatrix);
  ASSERT_EQ(Dlbench({"run", matrix, "--out", dir / "out"}, dir, lite).exit_code, 0);
  ASSERT_EQ(Dlbench({"tag", "1", "baseline"}, dir, lite).exit_code, 0);
  ASSERT_EQ(Dlbench({"run", matrix, "--out", dir / "out"}, dir, lite).exit_code, 0);

  auto copied = RunCommand({Bin("dlbench"), "db", "copy", lite, db.url()}, dir);
  ASSERT_EQ(copied.exit_code, 0) << copied.out << copied.err;
  EXPECT_NE(copied.out.find("copied 8 cells of 2 runs"), std::string::npos) << copied.out;

  const std::vector<std::vector<std::string>> commands = {
      {"runs"},
      {"show", "1"},
      {"show", "latest", "-v"},
      {"export", "1", "--format", "json"},
      {"export", "2", "--format", "csv"},
      {"export", "2", "--series"},
      {"export", "baseline", "--format", "prometheus"},
      {"compare", "baseline", "latest"},
      {"compare", "1", "2", "--format", "json"},
      {"trend"},
  };
  for (const auto& command : commands) {
    auto on_sqlite = Dlbench(command, dir, lite);
    auto on_postgres = Dlbench(command, dir, db.url());
    std::string words;
    for (const auto& w : command) words += w + " ";
    EXPECT_EQ(on_postgres.exit_code, on_sqlite.exit_code) << words << on_postgres.err;
    EXPECT_EQ(on_postgres.out, on_sqlite.out) << words;
    EXPECT_FALSE(on_postgres.out.empty()) << words;
  }

  // Copying again changes nothing; copying back gives the same results again.
  const std::string before =
      One(db.url(), "SELECT count(*) || '/' || (SELECT count(*) FROM steps) FROM cells");
  auto twice = RunCommand({Bin("dlbench"), "db", "copy", lite, db.url()}, dir);
  ASSERT_EQ(twice.exit_code, 0) << twice.err;
  EXPECT_NE(twice.out.find("copied 0 cells of 2 runs"), std::string::npos) << twice.out;
  EXPECT_EQ(One(db.url(), "SELECT count(*) || '/' || (SELECT count(*) FROM steps) FROM cells"), before);
  const std::string back = dir / "back.db";
  ASSERT_EQ(RunCommand({Bin("dlbench"), "db", "copy", db.url(), back}, dir).exit_code, 0);
  EXPECT_EQ(Dlbench({"export", "2", "--format", "json"}, dir, back).out,
            Dlbench({"export", "2", "--format", "json"}, dir, lite).out);
  auto one_run = RunCommand({Bin("dlbench"), "db", "copy", lite, dir / "one.db", "--run", "baseline"}, dir);
  ASSERT_EQ(one_run.exit_code, 0) << one_run.err;
  EXPECT_NE(one_run.out.find("copied 4 cells of 1 run "), std::string::npos) << one_run.out;

  // dlbench run writes to PostgreSQL itself, named by --db or by $DLBENCH_DB.
  auto direct = Dlbench({"run", matrix, "--out", dir / "out-pg"}, dir, db.url());
  ASSERT_EQ(direct.exit_code, 0) << direct.out << direct.err;
  EXPECT_NE(direct.err.find("store " + db.url()), std::string::npos) << direct.err;
  auto by_env = RunCommand({Bin("dlbench"), "show", "3"}, dir, {{"DLBENCH_DB", db.url()}});
  EXPECT_EQ(by_env.exit_code, 0) << by_env.err;
  EXPECT_NE(by_env.out.find("run 3"), std::string::npos) << by_env.out;
  auto report = Dlbench({"report", "latest", "--baseline", "baseline", "-o", dir / "r.html"}, dir, db.url());
  EXPECT_EQ(report.exit_code, 0) << report.err;

  // The Grafana dashboard reads this history straight from PostgreSQL: every variable and panel
  // query runs and returns rows (Grafana would show an empty panel for a query that returns none).
  std::ifstream file(std::string(DLBENCH_SOURCE_DIR) + "/deploy/grafana/dlbench-postgres.json");
  const auto dashboard = nlohmann::json::parse(file, nullptr, false);
  ASSERT_FALSE(dashboard.is_discarded()) << "deploy/grafana/dlbench-postgres.json does not parse";
  const std::map<std::string, std::string> variables = {{"$model", "'tiny', 'small'"},
                                                        {"$key", "SELECT key FROM cells"}};
  int queries = 0;
  auto connection = store::pg::Connection::Open(db.url());
  ASSERT_TRUE(connection.ok());
  std::vector<std::string> sqls;
  for (const auto& v : dashboard["templating"]["list"]) sqls.push_back(v["query"].get<std::string>());
  for (const auto& panel : dashboard["panels"]) {
    EXPECT_EQ(panel["datasource"]["uid"], "dlbench-postgres") << panel["title"];
    for (const auto& target : panel["targets"]) sqls.push_back(target["rawSql"].get<std::string>());
  }
  for (const std::string& raw : sqls) {
    const std::string sql = ExpandGrafana(raw, variables);
    auto rows = connection->Query(sql);
    ASSERT_TRUE(rows.ok()) << sql << "\n" << rows.error().message;
    EXPECT_GT(rows->size(), 0) << sql;
    ++queries;
  }
  EXPECT_GE(queries, 7);
  std::ifstream provisioning(std::string(DLBENCH_SOURCE_DIR) +
                             "/deploy/grafana/provisioning/datasources/dlbench.yml");
  const std::string datasources((std::istreambuf_iterator<char>(provisioning)),
                                std::istreambuf_iterator<char>());
  EXPECT_NE(datasources.find("uid: dlbench-postgres"), std::string::npos);
}

// A sweep's shards (issue 23) copied into PostgreSQL read as one run there as in SQLite: db copy
// carries each run's sweep, and every sweep command prints the same on both backends.
TEST(PostgresE2E, ASweepReadsTheSameOnBothBackends) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase db(cluster, "sweep");
  ASSERT_TRUE(db.ok()) << db.error();
  TempDir dir("pg_sweep");
  const std::string matrix = dir / "m.yaml", lite = dir / "r.db";
  WriteText(matrix,
            "name: sweep\nrunner: null\nmatrix:\n  model: [a, b, c]\n  step_ms: 1\n  virtual_time: true\n"
            "measure:\n  min_steps: 20\n  min_time_s: 0.05\n  max_time_s: 0.2\n");
  for (const char* shard : {"1/3", "3/3"}) {
    auto r = Dlbench({"run", matrix, "--out", dir / "out", "--shard", shard, "--sweep", "s"}, dir, lite);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  auto copied = RunCommand({Bin("dlbench"), "db", "copy", lite, db.url()}, dir);
  ASSERT_EQ(copied.exit_code, 0) << copied.out << copied.err;
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"runs", "--sweeps"}, std::vector<std::string>{"show", "sweep:s"},
        std::vector<std::string>{"export", "sweep:s", "--format", "json"},
        std::vector<std::string>{"compare", "sweep:s", "sweep:s", "--format", "json"}}) {
    auto on_sqlite = Dlbench(command, dir, lite);
    auto on_postgres = Dlbench(command, dir, db.url());
    EXPECT_EQ(on_postgres.exit_code, 0) << command[0] << ": " << on_postgres.err;
    EXPECT_EQ(on_postgres.out, on_sqlite.out) << command[0];
    EXPECT_EQ(on_postgres.err, on_sqlite.err) << command[0];
  }
  auto show = Dlbench({"show", "sweep:s"}, dir, db.url());
  EXPECT_NE(show.out.find("note: shard 2/3 has not stored a run"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("status incomplete, 2 of 3 cells stored"), std::string::npos) << show.out;
}

TEST(PostgresE2E, BadLocationsAreOneLineExitThreeWithoutThePassword) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase empty(cluster, "empty");
  ASSERT_TRUE(empty.ok()) << empty.error();
  TempDir dir("pg_bad");
  const std::string matrix = dir / "m.yaml";
  WriteText(matrix, kSmokeMatrix);
  struct Case {
    std::string what, url, secret, says;
  };
  const std::string base = cluster.admin_url.substr(0, cluster.admin_url.rfind('/'));
  const Case cases[] = {
      {"malformed", "postgresql://dlbench:s3cret-a@127.0.0.1:notaport/postgres", "s3cret-a", "port"},
      {"unknown parameter", "postgres://dlbench:s3cret-b@127.0.0.1/postgres?nosuch=1", "s3cret-b", "nosuch"},
      {"wrong password", WithPassword(cluster.password_url, "s3cret-c"), "s3cret-c",
       "password authentication failed"},
      {"missing database", WithPassword(base + "/no_such_db", "s3cret-d"), "s3cret-d", "does not exist"},
      {"server down", "postgresql://dlbench:s3cret-e@127.0.0.1:1/postgres", "s3cret-e", "refused"},
      {"no dlbench store", WithPassword(empty.url(), "s3cret-f"), "s3cret-f", "holds no dlbench store"},
  };
  for (const Case& c : cases) {
    for (const std::vector<std::string>& command :
         {std::vector<std::string>{"runs"}, std::vector<std::string>{"show", "latest"},
          std::vector<std::string>{"run", matrix, "--out", dir / "out"}}) {
      if (c.what == "no dlbench store" && command[0] == "run") continue;  // run creates the store
      auto r = Dlbench(command, dir, c.url);
      EXPECT_EQ(r.exit_code, 3) << c.what << " " << command[0] << ": " << r.err;
      EXPECT_EQ(Lines(r.err), 1u) << c.what << " " << command[0] << ": " << r.err;
      EXPECT_EQ(r.err.rfind("dlbench " + command[0] + ": store error: ", 0), 0u) << c.what << ": " << r.err;
      EXPECT_NE(r.err.find(c.says), std::string::npos) << c.what << ": " << r.err;
      EXPECT_EQ(r.err.find(c.secret), std::string::npos) << c.what << ": " << r.err;
      EXPECT_EQ(r.out.find(c.secret), std::string::npos) << c.what << ": " << r.out;
    }
    auto by_env = RunCommand({Bin("dlbench"), "runs"}, dir, {{"DLBENCH_DB", c.url}});
    EXPECT_EQ(by_env.exit_code, 3) << c.what;
    EXPECT_EQ(by_env.err.find(c.secret), std::string::npos) << by_env.err;
  }
  EXPECT_EQ(One(empty.url(), "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"), "0")
      << "reading commands created tables";
  auto help = RunCommand({Bin("dlbench"), "--help"}, dir,
                         {{"DLBENCH_DB", WithPassword(cluster.admin_url, "s3cret-g")}});
  EXPECT_EQ(help.out.find("s3cret-g"), std::string::npos) << "--help shows no default taken from $DLBENCH_DB";
}

TEST(PostgresE2E, ReadingCommandsNeverCreateAStore) {
  TempDir dir("pg_read_only");
  const std::string missing = dir / "missing.db", empty = dir / "empty.db";
  WriteText(empty, "");
  const std::vector<std::vector<std::string>> commands = {
      {"runs"},
      {"show", "latest"},
      {"export", "latest", "--format", "json"},
      {"compare", "1", "2"},
      {"trend"},
      {"report", "latest", "-o", dir / "r.html"},
      {"serve", "--listen", "127.0.0.1:0"},
      {"tag", "1", "x"},
  };
  for (const std::string& db : {missing, empty}) {
    for (const auto& command : commands) {
      auto r = Dlbench(command, dir, db);
      EXPECT_EQ(r.exit_code, 3) << command[0] << " on " << db << ": " << r.err;
      EXPECT_EQ(Lines(r.err), 1u) << r.err;
      EXPECT_NE(r.err.find("does not create one"), std::string::npos) << r.err;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(missing)) << "a reading command created the database";
  EXPECT_EQ(std::filesystem::file_size(empty), 0u) << "a reading command wrote into the empty file";
  EXPECT_FALSE(std::filesystem::exists(dir / "r.html"));
}

TEST(PostgresE2E, ANewerSchemaIsRefusedWithNothingChanged) {
  DLBENCH_PG_CLUSTER_OR_SKIP(cluster);
  ScratchDatabase db(cluster, "newer");
  ASSERT_TRUE(db.ok()) << db.error();
  TempDir dir("pg_newer");
  const std::string matrix = dir / "m.yaml";
  WriteText(matrix, kSmokeMatrix);
  ASSERT_EQ(Dlbench({"run", matrix, "--out", dir / "out"}, dir, db.url()).exit_code, 0);
  ASSERT_EQ(
      One(db.url(), "INSERT INTO schema_version VALUES (99, 'from a newer dlbench', 1) RETURNING version"),
      "99");
  const std::string snapshot =
      "SELECT (SELECT count(*) FROM runs) || '/' || (SELECT count(*) FROM cells) || '/' || "
      "(SELECT count(*) FROM steps) || '/' || (SELECT string_agg(status, ',') FROM runs) || '/' || "
      "(SELECT count(*) FROM pg_tables WHERE schemaname = 'public')";
  const std::string before = One(db.url(), snapshot);
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"runs"}, std::vector<std::string>{"run", matrix, "--out", dir / "out"},
        std::vector<std::string>{"tag", "1", "x"}}) {
    auto r = Dlbench(command, dir, db.url());
    EXPECT_EQ(r.exit_code, 3) << command[0] << ": " << r.err;
    EXPECT_NE(r.err.find("schema version 99, newer than this dlbench knows"), std::string::npos) << r.err;
    EXPECT_EQ(Lines(r.err), 1u) << r.err;
  }
  EXPECT_EQ(One(db.url(), snapshot), before);
}

TEST(PostgresE2E, AServerRestartedDuringARunLosesNoCell) {
  DLBENCH_PRIVATE_PG_CLUSTER_OR_SKIP(server);
  ScratchDatabase db(server.cluster(), "restart");
  ASSERT_TRUE(db.ok()) << db.error();
  TempDir dir("pg_restart");
  const std::string matrix = dir / "ten.yaml";
  WriteText(matrix, kTenCells);
  SpawnOptions o;
  o.argv = {Bin("dlbench"), "--db", db.url(), "run", matrix, "--out", dir / "out"};
  o.stdout_path = dir / "run.out";
  o.stderr_path = dir / "run.err";
  o.extra_env = {{"DLBENCH_DB_RETRY_S", "300"}, {"DLBENCH_SPILL_DIR", dir / "spill"}};
  auto run = Subprocess::Spawn(o);
  ASSERT_TRUE(run.ok()) << run.error().message;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (StoredCells(db.url(), 1) < 2 && std::chrono::steady_clock::now() < deadline && !run->TryWait()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(StoredCells(db.url(), 1), 2u) << *ReadFile(dir / "run.err");
  ASSERT_TRUE(server.Pause());
  // At least one cell finishes while the server is away: its PutCell waits and retries.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  ASSERT_TRUE(server.Resume());
  const ExitStatus status = run->Wait();
  const std::string err = *ReadFile(dir / "run.err");
  EXPECT_TRUE(status.success()) << status.Describe() << "\n" << err;
  EXPECT_EQ(StoredCells(db.url(), 1), 10u) << err;
  EXPECT_NE(err.find("lost the connection to"), std::string::npos) << err;
  EXPECT_NE(err.find("reconnected to"), std::string::npos) << err;
  auto show = Dlbench({"runs"}, dir, db.url());
  EXPECT_NE(show.out.find("completed"), std::string::npos) << show.out;
}

TEST(PostgresE2E, AServerThatStaysAwayEndsTheRunWithItsCellSpilledAndResumeStoresIt) {
  DLBENCH_PRIVATE_PG_CLUSTER_OR_SKIP(server);
  ScratchDatabase db(server.cluster(), "away");
  ASSERT_TRUE(db.ok()) << db.error();
  TempDir dir("pg_away");
  const std::string matrix = dir / "ten.yaml", spill = dir / "spill";
  WriteText(matrix, kTenCells);
  const std::vector<std::pair<std::string, std::string>> env = {{"DLBENCH_DB_RETRY_S", "2"},
                                                                {"DLBENCH_SPILL_DIR", spill}};
  SpawnOptions o;
  o.argv = {Bin("dlbench"), "--db", db.url(), "run", matrix, "--out", dir / "out"};
  o.stdout_path = dir / "run.out";
  o.stderr_path = dir / "run.err";
  o.extra_env = env;
  auto run = Subprocess::Spawn(o);
  ASSERT_TRUE(run.ok()) << run.error().message;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (StoredCells(db.url(), 1) < 1 && std::chrono::steady_clock::now() < deadline && !run->TryWait()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(StoredCells(db.url(), 1), 1u);
  ASSERT_TRUE(server.Pause());
  const ExitStatus status = run->Wait();
  const std::string err = *ReadFile(dir / "run.err");
  EXPECT_EQ(status.code, 3) << status.Describe() << "\n" << err;
  const std::string last_line = err.substr(err.rfind('\n', err.size() - 2) + 1);
  EXPECT_EQ(last_line.rfind("dlbench run: unavailable: ", 0), 0u) << err;
  EXPECT_NE(last_line.find("the PostgreSQL server " + db.url() + " could not be reached for 2 s"),
            std::string::npos)
      << last_line;
  EXPECT_NE(last_line.find(spill), std::string::npos) << last_line;
  EXPECT_NE(last_line.find("--resume 1"), std::string::npos) << last_line;
  std::size_t spilled = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(spill)) {
    spilled += entry.path().string().find(".cell.json") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(spilled, 1u) << "the cell that finished while the server was away is kept";

  ASSERT_TRUE(server.Resume());
  const std::size_t before = StoredCells(db.url(), 1);
  auto resumed = DlbenchEnv({"run", matrix, "--out", dir / "out", "--resume", "1"}, dir, db.url(), env);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_NE(resumed.err.find("from its spill file"), std::string::npos) << resumed.err;
  EXPECT_EQ(StoredCells(db.url(), 1), 10u);
  // The resumed run ran only the cells that had no stored result: the spilled one was not re-run.
  EXPECT_NE(resumed.err.find(std::to_string(10 - before - 1) + " cells (" + std::to_string(before + 1) +
                             " already finished)"),
            std::string::npos)
      << resumed.err;
  spilled = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(spill)) {
    spilled += entry.path().string().find(".cell.json") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(spilled, 0u);
}

}  // namespace
}  // namespace dlbench::e2e

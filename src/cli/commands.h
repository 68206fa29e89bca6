// The dlbench command line. main() builds one CLI::App and lets each command file register its
// subcommand; a subcommand's callback returns its exit code through CommandContext.
//
// Exit codes (docs/cli.md):
//   0  success
//   1  the command ran and found a failure it was asked to report (a cell that did not end ok
//      in `run`; a regression with `compare --fail-on-regression`)
//   2  bad usage or invalid input (arguments, matrix file); nothing ran
//   3  the store could not be opened, read or written
//   4  an I/O or system failure (output folder, runner binary not found)
//   130 interrupted by Ctrl-C (finished cells are stored; resume with --resume)
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "common/error.h"
#include "store/result_store.h"

namespace dlbench::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailureFound = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitStore = 3;
inline constexpr int kExitIo = 4;
// compare --fail-on-regression matched too few of the base's cells to judge anything.
inline constexpr int kExitTooFewMatched = 5;
inline constexpr int kExitInterrupted = 130;

struct CommandContext {
  // --db, else $DLBENCH_DB, else ./dlbench.db: a SQLite path or a postgresql:// URL, which may
  // hold a password; show it only through store::DisplayLocation or the store's Describe().
  std::string db_path;
  int exit_code = kExitOk;
};

// The store named by the context, created when missing (`run`); prints the error (one line,
// exit code 3) and sets exit_code on failure.
std::unique_ptr<store::ResultStore> OpenStoreOrReport(CommandContext& ctx);
// The same for a store that must exist already and is written (`tag`): a missing SQLite file or a
// PostgreSQL database without dlbench's tables is exit 3, and nothing is created.
std::unique_ptr<store::ResultStore> OpenExistingStoreOrReport(CommandContext& ctx);
// The same for commands that only read (show, runs, export, compare, trend, report, serve): the
// store must exist (nothing is created), and a SQLite store on a read-only file or filesystem is
// opened read-only (store::OpenSqliteStoreForReading).
std::unique_ptr<store::ResultStore> OpenStoreForReadingOrReport(CommandContext& ctx);
// Whether a run stored as running has no live process: its lock can be had (its dlbench was
// killed, or its host went down, before it could mark the run interrupted). The lock is taken and
// let go at once to tell; false when it cannot be told.
bool RunAbandoned(store::ResultStore& store, std::int64_t run_id, record::RunStatus status);
// A run's status in words for `runs` and `show`: the stored one, or "abandoned" (RunAbandoned).
std::string RunStatusWord(store::ResultStore& store, std::int64_t run_id, record::RunStatus status);
// The words that start every error line: "dlbench" and the subcommand being run ("dlbench
// show"). main() sets them when a subcommand is parsed.
void SetCommandWords(std::string words);
const std::string& CommandWordsForErrors();
// Prints "dlbench <subcommand>: <kind>: <message>" and returns the exit code that fits the
// error's kind.
int ReportError(const Error& error);
// The same for an error of plan::SelectPlan (or of a run, which starts with it): a matrix file's
// diagnostics are printed as they are, one "file:line:col: error: ..." per line, and exit 2.
int ReportSelectionError(const Error& error, const std::string& matrix_path);

// --shard as given, with `auto` read from the launcher this process runs under (launch/launcher.h):
// "K/N" for `auto` (rank + 1 of world size), anything else unchanged (SelectPlan checks it).
// `launcher` (when not null) gets the fingerprint's record of the launcher contract, with where
// the shard came from. kInvalidInput for `auto` without a launcher or with a malformed one; a
// malformed launcher without `auto` is recorded as {"launcher": "invalid", "error": ...}.
Result<std::string> ResolveShard(const std::string& shard, nlohmann::json* launcher);

// The sweep a run is a shard of: --sweep NAME as given, else, for a run with a --shard, the
// launcher's job (launch::SweepFromLauncher), else "" (none). `shard` is --shard as given.
// kInvalidInput for --sweep without --shard and for a name that is not launch::IsSweepName.
// `launcher` (when not null, as ResolveShard filled it) gets {"sweep": {"value", "from"}}.
Result<std::string> ResolveSweep(const std::string& sweep, const std::string& shard,
                                 nlohmann::json* launcher);

// An option that no longer exists, kept so that a script using it fails with what to write
// instead, never with a value read in another unit. Hidden from --help.
void RetireOption(CLI::App* cmd, const std::string& name, const std::string& instead);

// Each adds one subcommand to app. Defined in cmd_<name>.cc.
void RegisterRun(CLI::App& app, CommandContext& ctx);
void RegisterPlan(CLI::App& app, CommandContext& ctx);
void RegisterRuns(CLI::App& app, CommandContext& ctx);
void RegisterPrune(CLI::App& app, CommandContext& ctx);  // in cmd_runs.cc
void RegisterShow(CLI::App& app, CommandContext& ctx);
void RegisterExport(CLI::App& app, CommandContext& ctx);
void RegisterEnv(CLI::App& app, CommandContext& ctx);
void RegisterCompare(CLI::App& app, CommandContext& ctx);
void RegisterTrend(CLI::App& app, CommandContext& ctx);
void RegisterTag(CLI::App& app, CommandContext& ctx);
void RegisterReport(CLI::App& app, CommandContext& ctx);
void RegisterServe(CLI::App& app, CommandContext& ctx);
void RegisterParams(CLI::App& app, CommandContext& ctx);
void RegisterMetrics(CLI::App& app, CommandContext& ctx);
void RegisterNoise(CLI::App& app, CommandContext& ctx);
void RegisterSelftest(CLI::App& app, CommandContext& ctx);
void RegisterModels(CLI::App& app, CommandContext& ctx);
void RegisterDb(CLI::App& app, CommandContext& ctx);

}  // namespace dlbench::cli

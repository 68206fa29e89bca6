#include <fmt/core.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "cli/commands.h"
#include "common/text.h"
#include "launch/launcher.h"
#include "plan/selection.h"
#include "store/open_store.h"

namespace dlbench::cli {
namespace {

std::unique_ptr<store::ResultStore> OpenOrReport(CommandContext& ctx, store::OpenMode mode) {
  store::OpenOptions options;
  options.mode = mode;
  auto opened = store::OpenStore(ctx.db_path, options);
  if (!opened.ok()) {
    Error e = opened.error();
    // Whatever went wrong opening it (a malformed URL included), the store is what failed: exit 3.
    e.kind = ErrorKind::kStore;
    ctx.exit_code = ReportError(e);
    return nullptr;
  }
  return std::move(opened).value();
}

}  // namespace

namespace {
std::string& CommandWords() {
  static std::string words = "dlbench";
  return words;
}
}  // namespace

void SetCommandWords(std::string words) { CommandWords() = std::move(words); }
const std::string& CommandWordsForErrors() { return CommandWords(); }

int ReportError(const Error& error) {
  // Messages quote file names, keys and values from the user's input: escaped for the terminal.
  std::fprintf(stderr, "%s: %s: %s\n", CommandWords().c_str(), ErrorKindName(error.kind),
               TerminalSafe(error.message).c_str());
  switch (error.kind) {
    case ErrorKind::kInvalidInput:
    case ErrorKind::kNotFound:
    case ErrorKind::kUnsupported:
      return kExitUsage;
    case ErrorKind::kStore:
    case ErrorKind::kUnavailable:
      return kExitStore;
    default:
      return kExitIo;
  }
}

void RetireOption(CLI::App* cmd, const std::string& name, const std::string& instead) {
  cmd->add_option(name)
      ->check(CLI::Validator([name, instead](const std::string&) { return name + " is gone: " + instead; },
                             "", "retired"))
      ->group("");
}

int ReportSelectionError(const Error& error, const std::string& matrix_path) {
  if (!plan::IsMatrixDiagnostic(error, matrix_path)) return ReportError(error);
  std::fprintf(stderr, "%s\n", TerminalSafe(error.message).c_str());
  return kExitUsage;
}

Result<std::string> ResolveShard(const std::string& shard, nlohmann::json* launcher) {
  auto context = launch::ReadLaunchContext(launch::ProcessEnvironment());
  if (shard == "auto") {
    if (!context.ok()) return MakeError(ErrorKind::kInvalidInput, "--shard auto: " + context.error().message);
    auto from_launcher = launch::ShardFromLauncher(*context);
    if (!from_launcher.ok()) return from_launcher.error();
    const std::string resolved = fmt::format("{}/{}", from_launcher->index, from_launcher->count);
    if (launcher != nullptr) {
      *launcher = launch::ToJson(*context);
      (*launcher)["shard"] = {{"value", resolved}, {"from", "--shard auto: " + from_launcher->from}};
    }
    return resolved;
  }
  if (launcher != nullptr) {
    *launcher = context.ok() ? launch::ToJson(*context)
                             : nlohmann::json{{"launcher", "invalid"}, {"error", context.error().message}};
    // Flags take precedence over any launcher.
    if (!shard.empty()) (*launcher)["shard"] = {{"value", shard}, {"from", "--shard"}};
  }
  return shard;
}

Result<std::string> ResolveSweep(const std::string& sweep, const std::string& shard,
                                 nlohmann::json* launcher) {
  const auto record = [launcher](const std::string& value, const std::string& from) {
    if (launcher != nullptr && launcher->is_object())
      (*launcher)["sweep"] = {{"value", value}, {"from", from}};
  };
  if (!sweep.empty()) {
    if (shard.empty()) {
      return MakeError(
          ErrorKind::kInvalidInput,
          "--sweep " + sweep + " needs --shard K/N (or auto): a sweep is the shards of one plan");
    }
    if (!launch::IsSweepName(sweep)) {
      return MakeError(ErrorKind::kInvalidInput,
                       fmt::format("--sweep '{}': a sweep name is 1 to {} characters of A-Z a-z 0-9 . _ -",
                                   sweep, launch::kMaxSweepName));
    }
    record(sweep, "--sweep");
    return sweep;
  }
  if (shard.empty()) return std::string();
  auto context = launch::ReadLaunchContext(launch::ProcessEnvironment());
  if (!context.ok()) return std::string();  // recorded as invalid by ResolveShard; no job to name
  auto from_launcher = launch::SweepFromLauncher(*context);
  if (!from_launcher.ok()) return from_launcher.error();
  if (!from_launcher->has_value()) return std::string();
  record((*from_launcher)->id, (*from_launcher)->from);
  return (*from_launcher)->id;
}

std::unique_ptr<store::ResultStore> OpenStoreOrReport(CommandContext& ctx) {
  return OpenOrReport(ctx, store::OpenMode::kCreate);
}

std::unique_ptr<store::ResultStore> OpenExistingStoreOrReport(CommandContext& ctx) {
  return OpenOrReport(ctx, store::OpenMode::kExisting);
}

std::unique_ptr<store::ResultStore> OpenStoreForReadingOrReport(CommandContext& ctx) {
  return OpenOrReport(ctx, store::OpenMode::kRead);
}

bool RunAbandoned(store::ResultStore& store, std::int64_t run_id, record::RunStatus status) {
  if (status != record::RunStatus::kRunning) return false;
  auto held = store.TryLockRun(run_id, store::ThisProcessAsOwner());
  if (!held.ok() || held->has_value()) return false;  // a live holder, or no way to tell
  (void)store.UnlockRun(run_id);
  return true;
}

std::string RunStatusWord(store::ResultStore& store, std::int64_t run_id, record::RunStatus status) {
  return RunAbandoned(store, run_id, status) ? "abandoned" : std::string(record::Name(status));
}

}  // namespace dlbench::cli

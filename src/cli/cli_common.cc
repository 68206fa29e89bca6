#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "cli/commands.h"
#include "common/text.h"
#include "plan/selection.h"

namespace dlbench::cli {

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

namespace {

std::unique_ptr<store::ResultStore> OrReport(Result<std::unique_ptr<store::ResultStore>> opened,
                                             CommandContext& ctx) {
  if (!opened.ok()) {
    Error e = opened.error();
    if (e.kind != ErrorKind::kStore) e.kind = ErrorKind::kStore;
    ctx.exit_code = ReportError(e);
    return nullptr;
  }
  return std::move(opened).value();
}

}  // namespace

std::unique_ptr<store::ResultStore> OpenStoreOrReport(CommandContext& ctx) {
  return OrReport(store::OpenSqliteStore(ctx.db_path), ctx);
}

std::unique_ptr<store::ResultStore> OpenStoreForReadingOrReport(CommandContext& ctx) {
  return OrReport(store::OpenSqliteStoreForReading(ctx.db_path), ctx);
}

}  // namespace dlbench::cli

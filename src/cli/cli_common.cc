#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
#include "plan/selection.h"

namespace dlbench::cli {

int ReportError(const Error& error) {
  std::fprintf(stderr, "dlbench: %s: %s\n", ErrorKindName(error.kind), error.message.c_str());
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

int ReportSelectionError(const Error& error, const std::string& matrix_path) {
  if (!plan::IsMatrixDiagnostic(error, matrix_path)) return ReportError(error);
  std::fprintf(stderr, "%s\n", error.message.c_str());
  return kExitUsage;
}

std::unique_ptr<store::ResultStore> OpenStoreOrReport(CommandContext& ctx) {
  auto opened = store::OpenSqliteStore(ctx.db_path);
  if (!opened.ok()) {
    Error e = opened.error();
    if (e.kind != ErrorKind::kStore) e.kind = ErrorKind::kStore;
    ctx.exit_code = ReportError(e);
    return nullptr;
  }
  return std::move(opened).value();
}

}  // namespace dlbench::cli

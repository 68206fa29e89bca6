// Small file helpers that report failures as values.
#pragma once

#include <string>

#include "common/error.h"

namespace dlbench {

// The whole file; kNotFound when it does not exist, kIo when it cannot be read.
Result<std::string> ReadFile(const std::string& path);
// Writes to a temporary file of this process next to path, then renames it over path, so readers
// never see half a file and concurrent writers (threads or processes) never mix their contents:
// the last rename wins.
Status WriteFileAtomic(const std::string& path, const std::string& contents);
// mkdir -p.
Status MakeDirs(const std::string& path);
// The last `max_lines` lines of a text file (for error messages built from a runner's stderr).
std::string TailLines(const std::string& path, int max_lines);

}  // namespace dlbench

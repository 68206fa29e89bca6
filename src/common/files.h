// Small file helpers that report failures as values.
#pragma once

#include <string>

#include "common/error.h"

namespace dlbench {

// The whole file; kNotFound when it does not exist, kIo when it cannot be read.
Result<std::string> ReadFile(const std::string& path);
// Replaces a file of the program's own (a progress file, a run's copy of its matrix): writes a
// temporary file of this process next to path, then renames it over path, so readers never see
// half a file and concurrent writers (threads or processes) never mix their contents: the last
// rename wins. Only an absent path or a regular file is replaced; anything else (a directory, a
// symbolic link, a FIFO, a device, a socket) is refused with kIo naming what it is, and left as
// it was. (Between the check and the rename another process could put something else there; a
// program that can do that can replace the path itself.)
Status WriteFileAtomic(const std::string& path, const std::string& contents);
// Writes an output the user named (`-o PATH`), by what PATH is now (docs/cli.md, "Output files"):
// - absent, or a regular file: replaced atomically, as WriteFileAtomic does;
// - a symbolic link, a FIFO or a character device (/dev/null, /dev/stdout, a terminal): written
//   through, as a shell's `>` would: opened for writing (a link is followed; a regular file it
//   leads to is truncated and rewritten in place, a missing one created), never renamed over;
// - a directory, a block device or a socket: refused.
// kIo with the path and the reason on failure, including a failed write (/dev/full: "No space
// left on device").
Status WriteOutputFile(const std::string& path, const std::string& contents);
// mkdir -p.
Status MakeDirs(const std::string& path);
// The last `max_lines` lines of a text file (for error messages built from a runner's stderr).
std::string TailLines(const std::string& path, int max_lines);

}  // namespace dlbench

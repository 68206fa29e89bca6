#include "orchestrator/progress_file.h"

#include <unistd.h>

#include <cstdio>

#include "common/clock.h"
#include "common/files.h"

namespace dlbench::orchestrator {

ProgressFileObserver::ProgressFileObserver(std::string db_path) : path_(record::ProgressPath(db_path)) {
  progress_.pid = static_cast<std::int64_t>(getpid());
}

void ProgressFileObserver::Write() {
  progress_.updated_wall_ns = WallNowNs();
  // Progress is a courtesy to `serve`: a file that cannot be written loses no result.
  (void)WriteFileAtomic(path_, record::EncodeProgress(progress_));
}

void ProgressFileObserver::OnRunStart(const RunStart& start) {
  progress_.run_id = start.run_id;
  progress_.cells_total = static_cast<std::int64_t>(start.to_run);
  progress_.cells_done = 0;
  progress_.started_wall_ns = WallNowNs();
  Write();
}

void ProgressFileObserver::OnCellStart(const CellStart& start) {
  progress_.current_cell = start.cell.label;
  Write();
}

void ProgressFileObserver::OnCellEnd(const CellEnd& end) {
  progress_.cells_done = static_cast<std::int64_t>(end.done);
  Write();
}

void ProgressFileObserver::OnRunEnd(const RunEnd& /*end*/) {
  auto text = ReadFile(path_);
  if (!text.ok()) return;
  auto written = record::ParseProgress(*text);
  if (!written.ok() || written->pid != progress_.pid) return;
  std::remove(path_.c_str());
}

}  // namespace dlbench::orchestrator

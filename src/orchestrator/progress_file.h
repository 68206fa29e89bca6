// The progress file as a run observer: `<db>.progress.json` (record/progress.h, the one codec),
// which `dlbench serve` reads to expose the active run. Written when the run starts and as each
// cell starts and ends (atomically: a reader never sees half a file), and removed when the run
// ends if this process wrote it last (several runs may share a database, one per --shard: the file
// is then whichever wrote last, and another live run's must stay).
#pragma once

#include <string>

#include "orchestrator/run.h"
#include "record/progress.h"

namespace dlbench::orchestrator {

class ProgressFileObserver final : public RunObserver {
 public:
  // `db_path`: the store's file; the progress file is record::ProgressPath(db_path).
  explicit ProgressFileObserver(std::string db_path);

  void OnRunStart(const RunStart& start) override;
  void OnCellStart(const CellStart& start) override;
  void OnCellEnd(const CellEnd& end) override;
  void OnRunEnd(const RunEnd& end) override;

 private:
  void Write();

  std::string path_;
  record::RunProgress progress_;
};

}  // namespace dlbench::orchestrator

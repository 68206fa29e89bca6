#include "orchestrator/retry.h"

#include <fmt/core.h>

#include <optional>
#include <utility>
#include <vector>

#include "plan/estimate.h"
#include "record/metrics.h"

namespace dlbench::orchestrator {

bool IsDisturbed(record::Verdict verdict) {
  return verdict == record::Verdict::kContended || verdict == record::Verdict::kShifted ||
         verdict == record::Verdict::kDrifting;
}

nlohmann::json AttemptSummary(const record::CellRecord& rec, int attempt) {
  nlohmann::json j = {{"attempt", attempt},
                      {"outcome", rec.outcome},
                      {"verdict", rec.verdict},
                      {"verdict_reasons", rec.verdict_reasons},
                      {"started_wall_ns", rec.started_wall_ns},
                      {"finished_wall_ns", rec.finished_wall_ns},
                      {"stderr_path", rec.stderr_path},
                      {"stored", false}};
  if (!rec.message.empty()) j["message"] = rec.message;
  for (std::string_view name :
       {record::metric::kSamplesPerS, record::metric::kStepTimeMeanNs, record::metric::kMeasuredSteps}) {
    if (auto v = record::MetricValue(rec, name)) j[std::string(name)] = *v;
  }
  return j;
}

record::CellRecord RunWithRetries(const plan::Cell& cell, const CellRunOptions& options, int retries,
                                  const RunCellFn& run_cell, const OnRetryFn& on_retry) {
  const int allowed = retries > 0 && !plan::RetryRefusal(cell) ? retries + 1 : 1;
  nlohmann::json list = nlohmann::json::array();
  std::optional<record::CellRecord> before;
  for (int attempt = 1;; ++attempt) {
    CellRunOptions o = options;
    o.attempt = attempt;
    if (attempt > 1) o.log_suffix += fmt::format(".attempt-{}", attempt);
    if (before && on_retry) on_retry(RetryStart{attempt, allowed, *before});
    record::CellRecord rec = run_cell(cell, o);
    if (rec.outcome == record::Outcome::kInterrupted) return rec;
    const bool disturbed = rec.outcome == record::Outcome::kOk && IsDisturbed(rec.verdict);
    if (attempt == 1 && (!disturbed || allowed == 1)) return rec;  // as without retries
    list.push_back(AttemptSummary(rec, attempt));
    if (disturbed && attempt < allowed) {
      before = std::move(rec);
      continue;
    }
    list.back()["stored"] = true;
    rec.extras[record::kAttemptsExtrasKey] = {{"stored", attempt},
                                              {"allowed", allowed},
                                              {"every_attempt_disturbed", disturbed},
                                              {"list", std::move(list)}};
    return rec;
  }
}

}  // namespace dlbench::orchestrator

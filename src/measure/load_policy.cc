#include "measure/load_policy.h"

#include <algorithm>
#include <cmath>

namespace dlbench::measure {

std::int64_t LoadQueryFloor(const config::MeasureSettings& settings, const LoadClaim& claim) {
  std::int64_t floor = std::max<std::int64_t>({settings.min_steps, claim.min_queries, 1});
  if (claim.percentile_claim) {
    floor =
        std::max(floor, stats::MinQueriesForClaim(claim.early_stopping, claim.latency_bound_ns.has_value()));
  }
  return floor;
}

LoadPolicy::LoadPolicy(const config::MeasureSettings& settings, const LoadClaim& claim)
    : settings_(settings), claim_(claim), floor_(LoadQueryFloor(settings, claim)) {}

bool LoadPolicy::EarlyStoppingMet(std::int64_t queries, std::int64_t over) {
  if (queries < cached_needed_) return false;
  cached_needed_ = stats::EarlyStoppingWithBound(queries, over, claim_.early_stopping).queries_needed;
  return queries >= cached_needed_;
}

void LoadPolicy::Add(const record::QueryRecord* records, std::size_t count) {
  const auto max_time_ns = static_cast<std::int64_t>(std::min(settings_.max_time_s * 1e9, 9e18));
  const auto min_time_ns = static_cast<std::int64_t>(std::min(settings_.min_time_s * 1e9, 9e18));
  for (std::size_t i = 0; i < count; ++i) {
    const record::QueryRecord& r = records[i];
    if (seen_ == 0) first_scheduled_ns_ = r.scheduled_ns;
    ++seen_;
    last_completed_ns_ = std::max(last_completed_ns_, r.completed_ns);
    if (claim_.latency_bound_ns &&
        static_cast<double>(r.completed_ns - r.scheduled_ns) > *claim_.latency_bound_ns) {
      ++over_;
    }
    if (decided_) continue;
    const char* reason = nullptr;
    if (seen_ >= settings_.max_steps) {
      reason = "max_steps";
    } else if (r.scheduled_ns - first_scheduled_ns_ >= max_time_ns) {
      reason = "max_time";
    } else if (!claim_.ceilings_only && seen_ >= floor_ &&
               last_completed_ns_ - first_scheduled_ns_ >= min_time_ns) {
      if (!claim_.latency_bound_ns) {
        reason = "min_queries";
      } else if (EarlyStoppingMet(seen_, over_)) {
        reason = "early_stopping";
      }
    }
    if (reason != nullptr) {
      decided_ = Decision{true, reason};
      decided_queries_ = seen_;
    }
  }
}

Decision LoadPolicy::Evaluate() const { return decided_.value_or(Decision{}); }

std::int64_t LoadPolicy::MeasuredQueries() const { return decided_ ? decided_queries_ : seen_; }

}  // namespace dlbench::measure

// PostgresStore::Retrying's definition, for the files that implement the store's operations
// (pg_store.cc, pg_store_read.cc, pg_store_admin.cc); nothing else includes this.
#pragma once

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <thread>

#include "common/log.h"
#include "store/postgres/pg_store.h"

namespace dlbench::store {

template <class Op>
auto PostgresStore::Retrying(Op&& op) -> decltype(op()) {
  using R = decltype(op());
  const auto start = std::chrono::steady_clock::now();
  // The window is per outage, not per call: once it has run out, later calls try once until one
  // succeeds, so a caller that still has things to say (a spilled cell, a failed run's status)
  // ends at once rather than after another whole window each.
  const auto window = std::chrono::duration<double>(unreachable_ ? 0.0 : options_.retry_s);
  std::optional<Error> last;
  for (int attempt = 0;; ++attempt) {
    if (connection_.broken()) {
      auto fresh = pg::Connection::Open(url_);
      if (fresh.ok()) {
        connection_ = std::move(*fresh);
      } else if (fresh.error().kind != ErrorKind::kUnavailable) {
        return R(fresh.error());
      } else {
        last = fresh.error();
      }
    }
    if (!connection_.broken()) {
      R result = op();
      if (result.ok() || result.error().kind != ErrorKind::kUnavailable) {
        unreachable_ = false;
        if (attempt > 0) {
          LogWarning("reconnected to {} after {:.1f} s", Describe(),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
        return result;
      }
      last = result.error();
      // Whatever the old connection's state, the next attempt starts on a new one.
      connection_ = pg::Connection();
    } else if (!last) {
      last = MakeError(ErrorKind::kUnavailable, "the connection to " + Describe() + " is closed");
    }
    const auto elapsed = std::chrono::steady_clock::now() - start;
    if (attempt == 0 && !unreachable_) {
      LogWarning("lost the connection to {} ({}); retrying for up to {:.0f} s", Describe(), last->message,
                 options_.retry_s);
    }
    if (elapsed >= window) {
      unreachable_ = true;
      return R(MakeError(
          ErrorKind::kUnavailable,
          fmt::format("the PostgreSQL server {} could not be reached for {:.0f} s (retried {} times): {}",
                      Describe(), options_.retry_s, attempt, last->message)));
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(window - elapsed);
    std::this_thread::sleep_for(std::min(RetryBackoff(attempt), left + std::chrono::milliseconds(1)));
  }
}

}  // namespace dlbench::store

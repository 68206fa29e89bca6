// Checks the end-to-end tests make on a store the real binary wrote (or is writing).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "store/result_store.h"

namespace dlbench::e2e {

// "ok" when the database file is sound, else SQLite's complaint ("cannot open", "no row").
inline std::string IntegrityCheck(const std::string& db) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    return "cannot open";
  }
  sqlite3_stmt* st = nullptr;
  std::string out = "no row";
  if (sqlite3_prepare_v2(h, "PRAGMA integrity_check", -1, &st, nullptr) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
  }
  sqlite3_finalize(st);
  sqlite3_close(h);
  return out;
}

// Runs one constant SQL statement on the database (a test's way to make a state the binary never
// writes, such as a run stored by an older schema). "ok", or SQLite's message.
inline std::string ExecuteSql(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    return "cannot open";
  }
  char* message = nullptr;
  std::string out = "ok";
  if (sqlite3_exec(h, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    out = message != nullptr ? message : "failed";
  }
  sqlite3_free(message);
  sqlite3_close(h);
  return out;
}

// Polls the store until run `run_id` has at least `at_least` finished cells or `timeout_s`
// passes; returns how many it last saw. For tests that interrupt a run part-way.
// The integer the one-row, one-column query `sql` returns; -1 when it cannot be read.
inline std::int64_t QueryInt(const std::string& db, const std::string& sql) {
  sqlite3* h = nullptr;
  std::int64_t out = -1;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(h, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
      out = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
  }
  sqlite3_close(h);
  return out;
}

inline std::size_t WaitForStoredCells(const std::string& db, std::int64_t run_id, std::size_t at_least,
                                      int timeout_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::size_t n = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (std::filesystem::exists(db)) {
      auto s = store::OpenSqliteStore(db);
      if (s.ok()) {
        auto ids = (*s)->FinishedCellIds(run_id);
        if (ids.ok() && (n = ids->size()) >= at_least) return n;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return n;
}

// The cells of a stored run (with their steps when asked); an empty list, and a test failure, when
// the store or the run cannot be read.
inline std::vector<record::CellRecord> Cells(const std::string& db, std::int64_t run_id, bool steps = false) {
  auto s = store::OpenSqliteStore(db);
  EXPECT_TRUE(s.ok()) << s.error().message;
  if (!s.ok()) return {};
  store::CellQuery q;
  q.with_steps = steps;
  auto cells = (*s)->GetCells(run_id, q);
  EXPECT_TRUE(cells.ok());
  return cells.ok() ? *cells : std::vector<record::CellRecord>{};
}

}  // namespace dlbench::e2e

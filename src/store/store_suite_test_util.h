// The shared ResultStore suite (StoreTest, instantiated for "sqlite" and "postgres" in
// store_suite_test.cc): the fixture, what it needs of a backend, and the comparison of a cell as it
// reads back. The tests are in store_suite_*_test.cc, grouped by what they cover. The PostgreSQL
// instances run against the test cluster (store/postgres/pg_test_util.h) and skip without one.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "store/result_store.h"

namespace dlbench::store::testing {

inline constexpr CellQuery kEverything{true, true, std::nullopt};

// What the suite needs of a backend besides the ResultStore: opening the test's store again (a
// second connection), raw SQL for what a user sees in the database's own shell, and a write
// transaction held open.
class Backend {
 public:
  virtual ~Backend() = default;
  // Empty when ready; else why not (the test is skipped, or fails when it must run).
  virtual std::string Prepare() = 0;
  virtual Result<std::unique_ptr<ResultStore>> Open() = 0;
  // The first column of the first row of `sql` as text ("" for NULL); a failure fails the test.
  virtual std::string Query(const std::string& sql) = 0;
  virtual Status Execute(const std::string& sql) = 0;
  // Runs `sql` in a write transaction that stays open (uncommitted) until the handle dies.
  virtual std::shared_ptr<void> HoldUncommitted(const std::string& sql) = 0;
  // Child rows whose cell row is gone (the foreign keys should make this 0).
  virtual std::string OrphanRows() = 0;
  // The SQL that reads params.model of a cell, in this backend's JSON functions.
  virtual std::string ModelOfParams() const = 0;
  virtual bool keeps_invalid_utf8() const = 0;
};

// The backend named "sqlite" or "postgres"; nullptr for one this build does not have.
std::unique_ptr<Backend> MakeBackend(const std::string& name);

class StoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  // Opens the backend's store, or skips the test where the backend is not here (it fails instead
  // where DLBENCH_REQUIRE_POSTGRES=1).
  void SetUp() override;
  static bool RequirePostgres() {
    const char* required = std::getenv("DLBENCH_REQUIRE_POSTGRES");
    return required != nullptr && std::string(required) == "1";
  }
  std::int64_t Begin(const RunRecord& run) {
    auto id = store_->BeginRun(run);
    EXPECT_TRUE(id.ok()) << id.error().message;
    return id.ok() ? *id : -1;
  }
  std::string Count(const std::string& table) {
    // Table names come from the test's own constants, never from data.
    return backend_->Query("SELECT count(*) FROM " + table);
  }
  std::string Query(const std::string& sql) { return backend_->Query(sql); }
  Status Exec(const std::string& sql) { return backend_->Execute(sql); }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<ResultStore> store_;
};

// Every field of `got` equals `want`'s as the store promises to keep it (NaN equal to NaN, steps
// normalised as they read back); steps and series are compared when `with_children`, else they
// must be empty.
void ExpectSameCell(const CellRecord& want, const CellRecord& got, bool with_children);

}  // namespace dlbench::store::testing

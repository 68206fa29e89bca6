// The PostgreSQL schema of the result store and the runner that migrates a database to it
// (docs/storage.md). Its versions are the SQLite schema's (store/sqlite_schema.h), step for step
// with the same descriptions, so a store's version means the same tables and columns on both
// backends; SchemaLockstepTest fails when one backend has a step the other lacks.
//
// Step N turns a version N-1 database into version N; a database without dlbench's tables is
// version 0. Each step runs in its own transaction together with the schema_version row that
// records it, under a transaction-level advisory lock, so several processes opening one new
// database apply each step once and a database is always at exactly one version (PostgreSQL's DDL
// is transactional).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "store/postgres/pg_connection.h"

namespace dlbench::store::pg {

struct Migration {
  int version = 0;          // the version this step produces; steps are 1, 2, 3, ... with no gaps
  std::string description;  // recorded in schema_version; equal to the SQLite step's
  // Runs inside the step's transaction: it must not BEGIN or COMMIT. Its SQL is constant text.
  std::function<Status(Connection&)> apply;
};

// dlbench's own steps, oldest first. The last one's version is the code's schema version.
const std::vector<Migration>& SchemaMigrations();
int LatestVersion(const std::vector<Migration>& migrations);

// The schema version of the database's current schema (current_schema(), normally public): 0
// when it holds no table. kStore when it holds tables but no schema_version table (some other
// program's database), or when there is no schema to work in.
Result<int> ReadSchemaVersion(Connection& connection);

// Applies the steps newer than the database's version. Refuses (kStore, naming both versions, with
// nothing changed) a database newer than the newest step. With `create` false, a database at
// version 0 is refused (kStore) instead of getting the schema: commands that only read never
// create a store.
Status Migrate(Connection& connection, const std::vector<Migration>& migrations, bool create);

}  // namespace dlbench::store::pg

// The SQLite schema of the result store and the runner that migrates a database to it
// (docs/storage.md describes every table and column).
//
// The schema is a list of numbered steps. Step N turns a version N-1 database into version N; a
// fresh database is version 0 and runs them all. Each step runs in its own transaction together
// with the schema_version row that records it, so a database is always at exactly one version.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "store/sqlite_db.h"

namespace dlbench::store::sqlite {

struct Migration {
  int version = 0;          // the version this step produces; steps are 1, 2, 3, ... with no gaps
  std::string description;  // recorded in schema_version
  // Runs inside the step's transaction: it must not BEGIN or COMMIT. Its SQL is constant text.
  std::function<Status(Database&)> apply;
};

// dlbench's own steps, oldest first. The last one's version is the code's schema version.
const std::vector<Migration>& SchemaMigrations();

// The version of the newest step in `migrations` (0 when empty).
int LatestVersion(const std::vector<Migration>& migrations);

// The database's schema version: 0 for an empty database (no tables). kStore when the database
// holds tables but is not a dlbench store (no schema_version table, or one of another shape, as
// Flyway's), or when its version is damaged (no row, not an integer, below 1). Reads only.
Result<std::int64_t> ReadSchemaVersion(Database& db);

// Reads the version in one snapshot and refuses (kStore) a database this build must not write: one
// ReadSchemaVersion refuses, or one newer than the newest step of `migrations` ("has schema
// version N, newer than this dlbench knows (M): it was created by a newer dlbench"). Reads
// only, so a refused file is left byte for byte as it was. Returns the version.
Result<std::int64_t> CheckSchema(Database& db, const std::vector<Migration>& migrations);

// Applies the steps of `migrations` newer than the database's version, one transaction each,
// after CheckSchema: old code must not write into a schema it does not know. Several processes
// may migrate at once; the version is re-read under the write lock, so each step is applied
// exactly once. `migrations` being misnumbered is a programmer error (checked).
Status Migrate(Database& db, const std::vector<Migration>& migrations);

// Runs constant SQL statements one after another (for migration steps).
Status ExecuteAll(Database& db, const std::vector<std::string>& statements);

}  // namespace dlbench::store::sqlite

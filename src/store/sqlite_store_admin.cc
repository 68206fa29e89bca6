// SqliteStore's removals: a tag, a whole run (`dlbench tag --delete`, `runs --delete`, `prune`).
#include <string>

#include "store/sqlite_store.h"
#include "store/store_codec.h"

namespace dlbench::store {

using sqlite::Transaction;

Status SqliteStore::DeleteTag(const std::string& tag) {
  auto tx = Transaction::Begin(db_, Transaction::Mode::kImmediate);
  if (!tx.ok()) return tx.error();
  auto find = db_.Prepare("SELECT 1 FROM tags WHERE name = ?1");
  if (!find.ok()) return find.error();
  find->Bind(1, std::string_view(tag));
  auto found = find->Step();
  if (!found.ok()) return found.error();
  if (!*found) return codec::NotATag(tag, ResolveRunName(tag));
  auto del = db_.Prepare("DELETE FROM tags WHERE name = ?1");
  if (!del.ok()) return del.error();
  del->Bind(1, std::string_view(tag));
  DLBENCH_RETURN_IF_ERROR(del->Run());
  return tx->Commit();
}

Status SqliteStore::DeleteRun(std::int64_t run_id) {
  auto tx = Transaction::Begin(db_, Transaction::Mode::kImmediate);
  if (!tx.ok()) return tx.error();
  auto exists = RunExists(run_id);
  if (!exists.ok()) return exists.error();
  if (!*exists)
    return MakeError(ErrorKind::kNotFound, "no run with id " + std::to_string(run_id) + " in " + Describe());
  // Children first: the foreign keys are enforced (PRAGMA foreign_keys = ON).
  static constexpr const char* kStatements[] = {
      "DELETE FROM series WHERE cell_id IN (SELECT id FROM cells WHERE run_id = ?1)",
      "DELETE FROM steps WHERE cell_id IN (SELECT id FROM cells WHERE run_id = ?1)",
      "DELETE FROM metrics WHERE cell_id IN (SELECT id FROM cells WHERE run_id = ?1)",
      "DELETE FROM cells WHERE run_id = ?1",
      "DELETE FROM tags WHERE run_id = ?1",
      "DELETE FROM runs WHERE id = ?1",
  };
  for (const char* sql : kStatements) {
    auto stmt = db_.Prepare(sql);
    if (!stmt.ok()) return stmt.error();
    stmt->Bind(1, run_id);
    DLBENCH_RETURN_IF_ERROR(stmt->Run());
  }
  auto orphans = db_.Prepare("DELETE FROM environments WHERE id NOT IN (SELECT environment_id FROM runs)");
  if (!orphans.ok()) return orphans.error();
  DLBENCH_RETURN_IF_ERROR(orphans->Run());
  return tx->Commit();
}

}  // namespace dlbench::store

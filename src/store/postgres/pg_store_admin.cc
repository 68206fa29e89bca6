// PostgresStore's removals: a tag, a whole run (`dlbench tag --delete`, `runs --delete`, `prune`).
#include <string>

#include "store/postgres/pg_store.h"
#include "store/postgres/pg_store_retrying.h"
#include "store/store_codec.h"

namespace dlbench::store {

using pg::Params;
using pg::Transaction;

Status PostgresStore::DeleteTag(const std::string& tag) {
  auto removed = Retrying([&]() -> Result<bool> {
    auto tx = Transaction::Begin(connection_, Transaction::Mode::kReadWrite);
    if (!tx.ok()) return tx.error();
    auto rows = connection_.Query("DELETE FROM tags WHERE name = $1 RETURNING run_id", Params().Add(tag));
    if (!rows.ok()) return rows.error();
    const bool any = rows->size() > 0;
    DLBENCH_RETURN_IF_ERROR(tx->Commit());
    return any;
  });
  if (!removed.ok()) return removed.error();
  if (*removed) return Status::Ok();
  return codec::NotATag(tag, ResolveRunName(tag));
}

Status PostgresStore::DeleteRun(std::int64_t run_id) {
  return Retrying([&]() -> Status {
    auto tx = Transaction::Begin(connection_, Transaction::Mode::kReadWrite);
    if (!tx.ok()) return tx.error();
    DLBENCH_RETURN_IF_ERROR(RequireRun(run_id));
    static constexpr const char* kStatements[] = {
        "DELETE FROM series WHERE cell_id IN (SELECT id FROM cells WHERE run_id = $1)",
        "DELETE FROM steps WHERE cell_id IN (SELECT id FROM cells WHERE run_id = $1)",
        "DELETE FROM metrics WHERE cell_id IN (SELECT id FROM cells WHERE run_id = $1)",
        "DELETE FROM cells WHERE run_id = $1",
        "DELETE FROM tags WHERE run_id = $1",
        "DELETE FROM runs WHERE id = $1",
    };
    for (const char* sql : kStatements)
      DLBENCH_RETURN_IF_ERROR(connection_.Execute(sql, Params().Add(run_id)));
    DLBENCH_RETURN_IF_ERROR(connection_.Execute(
        "DELETE FROM environments WHERE id NOT IN (SELECT environment_id FROM runs)", Params()));
    return tx->Commit();
  });
}

}  // namespace dlbench::store

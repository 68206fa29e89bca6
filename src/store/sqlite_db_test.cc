// The RAII layer: typed binds read back exactly, errors are values naming the file and statement,
// transactions roll back unless committed, and opening bad paths fails clearly.
#include "store/sqlite_db.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "store/sqlite_store.h"
#include "store/store_test_util.h"

namespace dlbench::store::sqlite {
namespace {

using testing::ScratchDir;

Database OpenOrDie(const std::string& path) {
  auto db = Database::Open(path);
  if (!db.ok()) ADD_FAILURE() << db.error().message;
  return std::move(db).value();
}

TEST(SqliteDbTest, TypedBindsReadBackExactly) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  Database db = OpenOrDie(dir.File("t.db"));
  ASSERT_TRUE(db.Execute("CREATE TABLE t (i INTEGER, d REAL, s TEXT, o INTEGER)").ok());
  auto insert = db.Prepare("INSERT INTO t (i, d, s, o) VALUES (?1, ?2, ?3, ?4)");
  ASSERT_TRUE(insert.ok()) << insert.error().message;

  const std::string with_nul("a\0b \xC3\xA9 \xF0\x9F\x9A\x80", 12);
  struct Row {
    std::int64_t i;
    double d;
    std::string s;
    std::optional<std::int64_t> o;
  };
  const Row rows[] = {
      {std::numeric_limits<std::int64_t>::min(), 0.1, with_nul, std::nullopt},
      {std::numeric_limits<std::int64_t>::max(), -1e308, "", 7},
      {0, std::numeric_limits<double>::quiet_NaN(), "x", 0},
  };
  for (const Row& r : rows) {
    insert->Bind(1, r.i).Bind(2, r.d).Bind(3, std::string_view(r.s)).Bind(4, r.o);
    ASSERT_TRUE(insert->Run().ok());
  }
  auto select = db.Prepare("SELECT i, d, s, o FROM t ORDER BY rowid");
  ASSERT_TRUE(select.ok());
  for (const Row& r : rows) {
    auto row = select->Step();
    ASSERT_TRUE(row.ok() && *row);
    EXPECT_EQ(select->Int64(0), r.i);
    if (std::isnan(r.d)) {
      EXPECT_TRUE(select->IsNull(1)) << "NaN is stored as NULL";
      EXPECT_TRUE(std::isnan(select->DoubleOrNan(1)));
    } else {
      EXPECT_EQ(select->Double(1), r.d);
    }
    EXPECT_EQ(select->Text(2), r.s);
    EXPECT_EQ(select->OptionalInt64(3), r.o);
  }
  auto end = select->Step();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
}

TEST(SqliteDbTest, ErrorsAreValuesNamingTheDatabaseAndStatement) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  Database db = OpenOrDie(dir.File("t.db"));

  auto missing_table = db.Prepare("SELECT * FROM nowhere");
  ASSERT_FALSE(missing_table.ok());
  EXPECT_EQ(missing_table.error().kind, ErrorKind::kStore);
  EXPECT_NE(missing_table.error().message.find("no such table: nowhere"), std::string::npos);
  EXPECT_NE(missing_table.error().message.find(dir.File("t.db")), std::string::npos);

  auto two = db.Prepare("SELECT 1; SELECT 2");
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().kind, ErrorKind::kInternal);

  auto bad_bind = db.Prepare("SELECT ?1");
  ASSERT_TRUE(bad_bind.ok());
  bad_bind->Bind(2, 5);
  auto step = bad_bind->Step();
  ASSERT_FALSE(step.ok()) << "a bind out of range surfaces at Step()";
  EXPECT_NE(step.error().message.find("parameter 2"), std::string::npos) << step.error().message;

  ASSERT_TRUE(db.Execute("CREATE TABLE u (v INTEGER NOT NULL UNIQUE)").ok());
  auto insert = db.Prepare("INSERT INTO u (v) VALUES (?1)");
  ASSERT_TRUE(insert.ok());
  insert->Bind(1, 1);
  ASSERT_TRUE(insert->Run().ok());
  Status duplicate = insert->Run();
  ASSERT_FALSE(duplicate.ok());
  EXPECT_NE(duplicate.error().message.find("UNIQUE constraint failed"), std::string::npos);
  insert->Bind(1, 2);
  EXPECT_TRUE(insert->Run().ok()) << "a statement that failed can run again";
}

TEST(SqliteDbTest, TransactionRollsBackUnlessCommitted) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  Database db = OpenOrDie(dir.File("t.db"));
  ASSERT_TRUE(db.Execute("CREATE TABLE t (v INTEGER)").ok());
  {
    auto tx = Transaction::Begin(db, Transaction::Mode::kImmediate);
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(db.Execute("INSERT INTO t VALUES (1)").ok());
  }
  EXPECT_EQ(*db.QueryText("SELECT count(*) FROM t"), "0");
  {
    auto tx = Transaction::Begin(db, Transaction::Mode::kImmediate);
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(db.Execute("INSERT INTO t VALUES (2)").ok());
    ASSERT_TRUE(tx->Commit().ok());
  }
  EXPECT_EQ(*db.QueryText("SELECT count(*) FROM t"), "1");
}

TEST(SqliteDbTest, BadPathsAreClearStoreErrors) {
  ScratchDir dir;
  ASSERT_TRUE(dir.ok());
  {
    std::ofstream junk(dir.File("notes.txt"));
    junk << "these are my notes, not a database; SQLite must not take them for one\n";
  }
  struct Case {
    std::string path;
    std::string expected;
  };
  const Case cases[] = {
      {dir.File("missing/dir/results.db"), "does not exist"},
      {dir.File("notes.txt"), "not a SQLite database"},
      {dir.File(""), "is a directory"},
  };
  for (const Case& c : cases) {
    auto store = OpenSqliteStore(c.path);
    ASSERT_FALSE(store.ok()) << c.path;
    EXPECT_EQ(store.error().kind, ErrorKind::kStore) << c.path;
    EXPECT_NE(store.error().message.find(c.expected), std::string::npos) << store.error().message;
  }
  std::ifstream still_there(dir.File("notes.txt"));
  std::string first_word;
  still_there >> first_word;
  EXPECT_EQ(first_word, "these") << "a file that is not a database is left as it was";
}

}  // namespace
}  // namespace dlbench::store::sqlite

#include "orchestrator/run_folder.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace dlbench::orchestrator {
namespace {

TEST(RunFolderTest, NamesTheStoreByItsFileAndAHashOfItsPlace) {
  const std::string a = StoreFolderName("/home/u/a/results.db");
  const std::string b = StoreFolderName("/home/u/b/results.db");
  EXPECT_EQ(a.rfind("results-", 0), 0u) << a;
  EXPECT_EQ(a.size(), std::string("results-").size() + 8) << a;
  EXPECT_NE(a, b) << "two databases of one name in two folders get two log folders";
  EXPECT_EQ(a, StoreFolderName("/home/u/a/results.db")) << "stable";
  // Odd characters and long names are kept safe for a folder name.
  EXPECT_EQ(StoreFolderName("/x/we ird$.db").rfind("we_ird_-", 0), 0u);
  EXPECT_EQ(StoreFolderName("/x/" + std::string(100, 'n') + ".db").rfind(std::string(40, 'n') + "-", 0), 0u);
  EXPECT_EQ(StoreFolderName("postgresql://bench@db.example:5432/perf?sslmode=require").rfind("perf-", 0), 0u);
  EXPECT_EQ(StoreFolderName("/").rfind("store-", 0), 0u);
  EXPECT_EQ(StoreFolderName("/x/..").rfind("store-", 0), 0u) << "never a folder that means 'up'";
}

TEST(RunFolderTest, IsAbsoluteAndEndsInTheRunId) {
  const std::string folder = RunFolder("out", "/data/r.db", 7);
  const std::filesystem::path p(folder);
  EXPECT_TRUE(p.is_absolute()) << folder;
  EXPECT_EQ(p.filename(), "run-7");
  EXPECT_EQ(p.parent_path().filename(), StoreFolderName("/data/r.db"));
  EXPECT_EQ(p.parent_path().parent_path(), std::filesystem::absolute("out").lexically_normal());
}

TEST(RunFolderTest, AStoredRunLogsWhereItsCellsDid) {
  std::vector<record::CellRecord> cells(2);
  EXPECT_FALSE(StoredRunFolder(cells).has_value()) << "no log path stored";
  cells[1].stderr_path = "/logs/r-0011aabb/run-3/cell-0001.stderr.log";
  EXPECT_EQ(StoredRunFolder(cells), "/logs/r-0011aabb/run-3");
  EXPECT_FALSE(StoredRunFolder({}).has_value());
}

}  // namespace
}  // namespace dlbench::orchestrator

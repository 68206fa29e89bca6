// StoreTest (store_suite_test_util.h), on both backends: runs resolve by id, tag, latest,
// previous and ~N, list newest first with their tags, and a key's history is oldest run first.
#include <gtest/gtest.h>

#include "store/store_suite_test_util.h"
#include "store/store_test_util.h"

namespace dlbench::store::testing {
namespace {

TEST_P(StoreTest, ResolveRunCountsBackWithTildeAndPrevious) {
  const std::int64_t a = Begin(MakeRun("a"));
  const std::int64_t b = Begin(MakeRun("b"));
  const std::int64_t c = Begin(MakeRun("c"));
  ASSERT_TRUE(store_->SetTag(b, "nightly").ok());
  EXPECT_EQ(*store_->ResolveRun("latest~1"), b);
  EXPECT_EQ(*store_->ResolveRun("previous"), b);
  EXPECT_EQ(*store_->ResolveRun("latest~2"), a);
  EXPECT_EQ(*store_->ResolveRun("nightly~1"), a);
  EXPECT_EQ(*store_->ResolveRun(std::to_string(c) + "~2"), a);
  struct Miss {
    std::string ref;
    ErrorKind kind;
    std::string message_part;
  };
  const Miss misses[] = {
      {"latest~3", ErrorKind::kNotFound, "2 runs come before run 3"},
      {"nightly~2", ErrorKind::kNotFound, "1 run comes before run 2"},
      {"latest~0", ErrorKind::kInvalidInput, "expected RUN~N"},
      {"latest~", ErrorKind::kInvalidInput, "expected RUN~N"},
      {"latest~x", ErrorKind::kInvalidInput, "expected RUN~N"},
      {"latest~-1", ErrorKind::kInvalidInput, "expected RUN~N"},
      {"latest~99999999999", ErrorKind::kInvalidInput, "expected RUN~N"},
      {"~1", ErrorKind::kInvalidInput, "expected RUN~N"},
      {"previous~1", ErrorKind::kInvalidInput, "write latest~N"},
      {"ghost~1", ErrorKind::kNotFound, "known tags: nightly"},
  };
  for (const Miss& m : misses) {
    auto r = store_->ResolveRun(m.ref);
    ASSERT_FALSE(r.ok()) << m.ref;
    EXPECT_EQ(r.error().kind, m.kind) << m.ref;
    EXPECT_NE(r.error().message.find(m.message_part), std::string::npos)
        << m.ref << ": " << r.error().message;
  }
}

TEST_P(StoreTest, ResolveRunByIdTagAndLatest) {
  auto none = store_->ResolveRun("latest");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, ErrorKind::kNotFound);

  const std::int64_t a = Begin(MakeRun("a"));
  const std::int64_t b = Begin(MakeRun("b"));
  auto untagged = store_->ResolveRun("baseline");
  ASSERT_FALSE(untagged.ok());
  EXPECT_NE(untagged.error().message.find("no tags yet"), std::string::npos) << untagged.error().message;

  ASSERT_TRUE(store_->SetTag(a, "baseline").ok());
  ASSERT_TRUE(store_->SetTag(a, "v1.0").ok());
  EXPECT_EQ(*store_->ResolveRun("latest"), b);
  EXPECT_EQ(*store_->ResolveRun(std::to_string(a)), a);
  EXPECT_EQ(*store_->ResolveRun("baseline"), a);
  ASSERT_TRUE(store_->SetTag(b, "baseline").ok()) << "setting a tag again moves it";
  EXPECT_EQ(*store_->ResolveRun("baseline"), b);

  struct Miss {
    std::string ref;
    ErrorKind kind;
    std::string message_part;
  };
  const Miss misses[] = {
      {"nightly", ErrorKind::kNotFound, "known tags: baseline, v1.0"},
      {std::to_string(b + 1), ErrorKind::kNotFound, "no run with id"},
      {"99999999999999999999999", ErrorKind::kNotFound, "no run with id"},
      {"", ErrorKind::kInvalidInput, "empty"},
  };
  for (const Miss& m : misses) {
    auto r = store_->ResolveRun(m.ref);
    ASSERT_FALSE(r.ok()) << m.ref;
    EXPECT_EQ(r.error().kind, m.kind) << m.ref;
    EXPECT_NE(r.error().message.find(m.message_part), std::string::npos) << r.error().message;
  }
  for (const char* bad_tag : {"", "42", "latest", "previous", "v1~2", "sweep:nightly"}) {
    Status s = store_->SetTag(a, bad_tag);
    ASSERT_FALSE(s.ok()) << bad_tag;
    EXPECT_EQ(s.error().kind, ErrorKind::kInvalidInput) << bad_tag;
  }
  EXPECT_EQ(store_->SetTag(b + 1, "ghost").error().kind, ErrorKind::kNotFound);
}

TEST_P(StoreTest, ListRunsNewestFirstWithTags) {
  const std::int64_t a = Begin(MakeRun("a"));
  const std::int64_t b = Begin(MakeRun("b"));
  const std::int64_t c = Begin(MakeRun("c"));
  ASSERT_TRUE(store_->SetTag(a, "old").ok());
  ASSERT_TRUE(store_->SetTag(c, "new").ok());
  ASSERT_TRUE(store_->SetTag(c, "candidate").ok());
  auto runs = store_->ListRuns();
  ASSERT_TRUE(runs.ok()) << runs.error().message;
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].id, c);
  EXPECT_EQ((*runs)[1].id, b);
  EXPECT_EQ((*runs)[2].id, a);
  EXPECT_EQ((*runs)[0].tags, (std::vector<std::string>{"candidate", "new"}));
  EXPECT_TRUE((*runs)[1].tags.empty());
  EXPECT_EQ((*runs)[2].tags, (std::vector<std::string>{"old"}));
}

TEST_P(StoreTest, CellHistoryIsOldestRunFirstAndOnlyThatKey) {
  std::vector<std::int64_t> runs;
  for (int i = 0; i < 3; ++i) {
    RunRecord run = MakeRun("run" + std::to_string(i));
    // Wall clocks go backwards here on purpose: history follows creation order, not clocks.
    run.started_wall_ns -= i * 1'000'000'000LL;
    runs.push_back(Begin(run));
    for (int index = 0; index < 2; ++index) {
      CellRecord cell = MakeCell(runs.back(), index);
      cell.metrics = {{"samples_per_s", 1000.0 + i, "1/s"}};
      ASSERT_TRUE(store_->PutCell(cell).ok());
    }
  }
  const std::string key = MakeCell(0, 1).key;
  auto history = store_->CellHistory(key);
  ASSERT_TRUE(history.ok()) << history.error().message;
  ASSERT_EQ(history->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const auto& [run, cell] = (*history)[i];
    EXPECT_EQ(run.id, runs[i]);
    EXPECT_EQ(run.name, "run" + std::to_string(i));
    EXPECT_EQ(cell.run_id, runs[i]);
    EXPECT_EQ(cell.key, key);
    ASSERT_EQ(cell.metrics.size(), 1u);
    EXPECT_EQ(cell.metrics[0].value, 1000.0 + i);
    EXPECT_TRUE(cell.steps.empty());
  }
  EXPECT_TRUE(store_->CellHistory("no/such/key")->empty());
}

}  // namespace
}  // namespace dlbench::store::testing

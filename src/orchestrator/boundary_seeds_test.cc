// FindBoundarySeeds over a real SQLite store (docs/memory.md "Seeds from other caps"): which stored
// searches seed a search, and what their records give it.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "orchestrator/boundary_cell.h"
#include "store/result_store.h"
#include "store/store_test_util.h"

namespace dlbench::orchestrator {
namespace {

constexpr double kGiB = 1 << 30;

plan::Cell CapCell(const std::string& model, const std::string& cap) {
  plan::Cell cell;
  cell.params = {{"model", model},
                 {"batch_size", "max"},
                 {"memory_cap", cap},
                 {"boundary_guide", "peak_memory"},
                 {"boundary_seed", "other_caps"}};
  cell.key = model + "/cap=" + cap;
  cell.id = cell.key + "#r0";
  return cell;
}

// A probe of a stored search: its batch size, whether it fit, and its guide peak (0: null).
struct StoredProbe {
  std::int64_t batch = 0;
  bool fits = false;
  double peak = 0;
};

// A stored cell of `plan_cell` whose search has `probes`; `device_total` > 0 adds the runner's
// memory_cap_applied with 0.5 GiB outside the allocator.
record::CellRecord SearchRecord(const plan::Cell& plan_cell, std::int64_t run_id, int index,
                                const std::vector<StoredProbe>& probes, double device_total = 0) {
  record::CellRecord rec;
  rec.run_id = run_id;
  rec.index = index;
  rec.cell_id = plan_cell.id;
  rec.key = plan_cell.key;
  rec.label = plan_cell.key;
  for (const auto& [name, value] : plan_cell.params) rec.params[name] = value;
  rec.outcome = record::Outcome::kOk;
  nlohmann::json list = nlohmann::json::array();
  for (const StoredProbe& p : probes) {
    list.push_back({{"batch_size", p.batch},
                    {"fits", p.fits},
                    {"guide_peak_bytes", p.peak != 0 ? nlohmann::json(p.peak) : nlohmann::json(nullptr)}});
  }
  rec.extras["boundary_search"] = {{"key", "batch_size"}, {"probes", list}};
  if (device_total > 0) {
    rec.effective["memory_cap_applied"] = {{"mechanism", "cuda_memory_fraction"},
                                           {"fraction", 0.5},
                                           {"device_total_bytes", device_total},
                                           {"outside_allocator_bytes", 0.5 * kGiB}};
  }
  return rec;
}

std::int64_t BeginRun(store::ResultStore& store, const std::string& name, std::int64_t started_s) {
  store::RunRecord run = store::testing::MakeRun(name);
  run.started_wall_ns = started_s * 1'000'000'000;
  auto id = store.BeginRun(run);
  EXPECT_TRUE(id.ok()) << id.error().message;
  return id.ok() ? *id : 0;
}

// A fresh SQLite store in a scratch directory.
class BoundarySeedsFromStore : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir_.ok());
    auto opened = store::OpenSqliteStore(dir_.File("seeds.db"));
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    owned_ = std::move(*opened);
  }
  store::testing::ScratchDir dir_;
  std::unique_ptr<store::ResultStore> owned_;
};

// The 4 GiB search of resnet50, with the same cell under 1 and 2 GiB and another model under 1 GiB
// in the plan. Stored: under 1 GiB a run that started at t=200 (2 fits) and, with a larger id, an
// older run copied in later (started t=100, other peaks); under 2 GiB the t=200 run's search (3 fits,
// on a device of 4.2 GiB) and a newer one (t=300) that fit nowhere. Seeds: the t=200 run's fits under
// both caps (the newest by start, not by id; the newer 2 GiB search without a fit says nothing and
// does not hide it), not the other model's; the device's usable bytes from the 2 GiB record (4.2 GiB
// less 0.5 outside the allocator; the 1 GiB record's device, 2 GiB, is smaller than the cap).
TEST_F(BoundarySeedsFromStore, TheNewestSearchWithALinePerCapByItsRunsStart) {
  store::ResultStore& store = *owned_;
  const plan::Cell one = CapCell("resnet50", "1GiB");
  const plan::Cell two = CapCell("resnet50", "2GiB");
  const plan::Cell four = CapCell("resnet50", "4GiB");
  const plan::Cell other = CapCell("bert_base", "1GiB");
  const std::vector<plan::Cell> plan_cells = {one, two, four, other, CapCell("mobilenet_v2", "1GiB")};

  const std::int64_t first = BeginRun(store, "first", 200);
  ASSERT_TRUE(
      store
          .PutCell(SearchRecord(one, first, 0,
                                {{8, true, 0.3 * kGiB}, {16, true, 0.5 * kGiB}, {40, false, 0}}, 2 * kGiB))
          .ok());
  ASSERT_TRUE(store
                  .PutCell(SearchRecord(
                      two, first, 1,
                      {{8, true, 0.3 * kGiB}, {32, true, 1.1 * kGiB}, {64, true, 1.9 * kGiB}, {70, false, 0}},
                      4.2 * kGiB))
                  .ok());
  ASSERT_TRUE(
      store.PutCell(SearchRecord(other, first, 2, {{8, true, 0.2 * kGiB}, {16, true, 0.4 * kGiB}})).ok());
  const std::int64_t copied = BeginRun(store, "copied", 100);
  ASSERT_GT(copied, first);
  ASSERT_TRUE(
      store.PutCell(SearchRecord(one, copied, 0, {{8, true, 0.25 * kGiB}, {24, true, 0.7 * kGiB}})).ok());
  const std::int64_t newer = BeginRun(store, "newer", 300);
  ASSERT_TRUE(store.PutCell(SearchRecord(two, newer, 0, {{8, false, 0}})).ok());

  std::string note;
  const BoundarySeeds seeds = FindBoundarySeeds(four, plan_cells, store, &note);
  EXPECT_EQ(note, "");
  std::vector<std::int64_t> values;
  for (const stats::GuidePoint& p : seeds.points) values.push_back(p.value);
  EXPECT_EQ(values, (std::vector<std::int64_t>{8, 16, 8, 32, 64}));
  EXPECT_DOUBLE_EQ(seeds.points[1].peak_bytes, 0.5 * kGiB);
  ASSERT_EQ(seeds.sources.size(), 2U);
  EXPECT_EQ(seeds.sources[0].at("memory_cap"), "1GiB");
  EXPECT_EQ(seeds.sources[0].at("run_id"), first);
  EXPECT_EQ(seeds.sources[0].at("points"), 2);
  EXPECT_EQ(seeds.sources[1].at("memory_cap"), "2GiB");
  EXPECT_EQ(seeds.sources[1].at("run_id"), first);
  EXPECT_EQ(seeds.sources[1].at("points"), 3);
  ASSERT_TRUE(seeds.device_usable_bytes.has_value());
  EXPECT_DOUBLE_EQ(*seeds.device_usable_bytes, 3.7 * kGiB);

  // A cell whose other cap has no search stored: no seeds, nothing to note.
  const BoundarySeeds none = FindBoundarySeeds(CapCell("mobilenet_v2", "4GiB"), plan_cells, store, &note);
  EXPECT_TRUE(none.points.empty());
  EXPECT_TRUE(none.sources.empty());
  EXPECT_EQ(note, "");
}

// Stored peaks that are no bytes (negative) and values out of range are left out, as the search's
// own checks would refuse them, and so are fits without a peak; a search left with none gives no
// seeds.
TEST_F(BoundarySeedsFromStore, StoredProbesTheSearchWouldRefuseAreLeftOut) {
  store::ResultStore& store = *owned_;
  const plan::Cell one = CapCell("resnet50", "1GiB");
  const plan::Cell four = CapCell("resnet50", "4GiB");
  const std::int64_t run = BeginRun(store, "run", 100);
  ASSERT_TRUE(
      store
          .PutCell(SearchRecord(
              one, run, 0, {{8, true, -1.0}, {0, true, 0.5 * kGiB}, {12, true, 0}, {24, false, 0.7 * kGiB}}))
          .ok());
  const BoundarySeeds seeds = FindBoundarySeeds(four, {one, four}, store);
  EXPECT_TRUE(seeds.points.empty());
  EXPECT_TRUE(seeds.sources.empty());
}

}  // namespace
}  // namespace dlbench::orchestrator

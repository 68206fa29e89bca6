#include "report/precision_view.h"

#include <gtest/gtest.h>

#include "record/metrics.h"

namespace dlbench::report {
namespace {

using nlohmann::json;

record::CellRecord Cell(const std::string& id, const std::string& precision,
                        const json& extra_params = json::object()) {
  record::CellRecord c;
  c.cell_id = id;
  c.label = "bert_base " + precision;
  c.outcome = record::Outcome::kOk;
  c.params = {{"runner", "torch"}, {"model", "bert_base"},   {"batch_size", 1},
              {"hidden_size", 8},  {"precision", precision}, {"scenario", "infer"}};
  c.params.update(extra_params);
  return c;
}

json Eval(const std::vector<double>& values, const std::vector<int>& top1, const std::string& weights = "w1",
          const std::string& inputs = "i1") {
  const std::int64_t rows = static_cast<std::int64_t>(top1.size());
  return {{"weights_hash", weights},
          {"inputs_hash", inputs},
          {"output_shape", {rows, static_cast<std::int64_t>(values.size()) / rows}},
          {"top1", top1},
          {"values", values}};
}

void SetEval(record::CellRecord& c, json eval) { c.extras["info"][kEvalInfoKey] = std::move(eval); }

TEST(CompareEvalOutputs, HandComputedDifferencesAndTopOneAgreement) {
  // Rows (1, 2) (3, 0) against (1.5, 2) (2, 3): |d| = 0.5, 0, 1, 3 -> max 3, mean 4.5 / 4;
  // argmax 1, 0 against 1, 1 -> one of two rows agrees.
  const OutputAgreement a = CompareEvalOutputs(Eval({1, 2, 3, 0}, {1, 0}), Eval({1.5, 2, 2, 3}, {1, 1}));
  ASSERT_TRUE(a.has_figures()) << a.why_none;
  EXPECT_DOUBLE_EQ(a.max_abs_diff, 3.0);
  EXPECT_DOUBLE_EQ(a.mean_abs_diff, 1.125);
  EXPECT_DOUBLE_EQ(a.top1_agreement, 0.5);
  EXPECT_EQ(a.rows, 2);
  EXPECT_EQ(a.values, 4);
}

TEST(CompareEvalOutputs, IdenticalOutputsAgreeFully) {
  const OutputAgreement a = CompareEvalOutputs(Eval({0.25, -1}, {0}), Eval({0.25, -1}, {0}));
  ASSERT_TRUE(a.has_figures());
  EXPECT_EQ(a.max_abs_diff, 0.0);
  EXPECT_EQ(a.mean_abs_diff, 0.0);
  EXPECT_EQ(a.top1_agreement, 1.0);
}

TEST(CompareEvalOutputs, RefusesOtherWeightsOtherInputsAndNonFiniteValues) {
  EXPECT_NE(
      CompareEvalOutputs(Eval({1, 2}, {1}, "w1"), Eval({1, 2}, {1}, "w2")).why_none.find("other weights"),
      std::string::npos);
  EXPECT_NE(CompareEvalOutputs(Eval({1, 2}, {1}, "w1", "i1"), Eval({1, 2}, {1}, "w1", "i2"))
                .why_none.find("other inputs"),
            std::string::npos);
  json bad = Eval({1, 2}, {1});
  bad["values"][0] = nullptr;  // the runner writes a non-finite value as null
  EXPECT_NE(CompareEvalOutputs(bad, Eval({1, 2}, {1})).why_none.find("not finite"), std::string::npos);
  EXPECT_FALSE(CompareEvalOutputs(json::object(), Eval({1, 2}, {1})).has_figures());
  EXPECT_NE(CompareEvalOutputs(Eval({1, 2, 3, 4}, {1, 1}), Eval({1, 2, 3, 4}, {1})).why_none, "");
}

TEST(FindFp32Reference, PicksTheFp32CellWithEveryOtherKeyEqual) {
  std::vector<record::CellRecord> cells = {
      Cell("fp32-other-size", "fp32", {{"hidden_size", 16}}),
      Cell("bf16", "bf16"),
      Cell("fp32-cuda", "fp32", {{"device", "cuda"}}),
      Cell("fp32", "fp32"),
      Cell("int8", "int8"),
  };
  const record::CellRecord* ref = FindFp32Reference(cells[4], cells);
  ASSERT_NE(ref, nullptr);
  EXPECT_EQ(ref->cell_id, "fp32");
  EXPECT_EQ(FindFp32Reference(cells[3], cells), nullptr) << "fp32 has no reference but itself";

  // A failed fp32 cell is no reference.
  cells[3].outcome = record::Outcome::kError;
  EXPECT_EQ(FindFp32Reference(cells[4], cells), nullptr);
}

TEST(FindFp32Reference, PrefersTheSameRepetitionThenTheLowest) {
  std::vector<record::CellRecord> cells = {Cell("fp32#r2", "fp32"), Cell("fp32#r1", "fp32"),
                                           Cell("int8#r1", "int8"), Cell("int8#r3", "int8")};
  cells[0].repetition = 2;
  cells[1].repetition = 1;
  cells[2].repetition = 1;
  cells[3].repetition = 3;
  EXPECT_EQ(FindFp32Reference(cells[2], cells)->cell_id, "fp32#r1");
  EXPECT_EQ(FindFp32Reference(cells[3], cells)->cell_id, "fp32#r1");
}

TEST(CompareWithFp32, SaysNoReferenceRatherThanComparingWithAnything) {
  std::vector<record::CellRecord> cells = {Cell("fp32-other-size", "fp32", {{"hidden_size", 16}}),
                                           Cell("int8", "int8")};
  SetEval(cells[0], Eval({1, 2}, {1}));
  SetEval(cells[1], Eval({1, 2}, {1}));
  const OutputAgreement a = CompareWithFp32(cells[1], cells);
  EXPECT_FALSE(a.has_figures());
  EXPECT_EQ(a.why_none, kNoFp32Reference);
  EXPECT_EQ(a.reference, nullptr);
}

TEST(CompareWithFp32, ComparesWithTheReferenceAndNamesAMissingEvaluation) {
  std::vector<record::CellRecord> cells = {Cell("fp32", "fp32"), Cell("bf16", "bf16")};
  SetEval(cells[0], Eval({1, 2}, {1}));
  OutputAgreement a = CompareWithFp32(cells[1], cells);
  EXPECT_FALSE(a.has_figures());
  EXPECT_EQ(a.reference, &cells[0]);
  EXPECT_NE(a.why_none.find("no evaluation outputs in this cell"), std::string::npos) << a.why_none;

  SetEval(cells[1], Eval({1, 2.5}, {1}));
  a = CompareWithFp32(cells[1], cells);
  ASSERT_TRUE(a.has_figures()) << a.why_none;
  EXPECT_DOUBLE_EQ(a.max_abs_diff, 0.5);
  EXPECT_DOUBLE_EQ(a.mean_abs_diff, 0.25);
}

// Converge cells (trained to a target, no evaluation outputs) form no precision table; infer
// cells beside them still do.
TEST(PrecisionTradeOff, LeavesConvergeCellsOut) {
  std::vector<record::CellRecord> cells = {Cell("c32", "fp32", {{"scenario", "converge"}}),
                                           Cell("c16", "bf16", {{"scenario", "converge"}}),
                                           Cell("i32", "fp32"), Cell("i16", "bf16")};
  const std::vector<PrecisionGroup> groups = PrecisionTradeOff(cells);
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(groups[0].rows.size(), 2u);
  EXPECT_EQ(groups[0].rows[0].cell->cell_id, "i32");
  EXPECT_EQ(groups[0].rows[1].cell->cell_id, "i16");
}

TEST(PrecisionTradeOff, OneRowPerPrecisionWithTheFastestAndTheMostAccurateMarked) {
  std::vector<record::CellRecord> cells = {Cell("fp32", "fp32"), Cell("bf16", "bf16"), Cell("int8", "int8"),
                                           Cell("int8#r1", "int8"),
                                           Cell("alone", "fp32", {{"model", "resnet50"}})};
  cells[3].repetition = 1;
  const double rates[] = {100, 150, 300, 310, 50};
  for (std::size_t i = 0; i < cells.size(); ++i) {
    record::SetMetric(cells[i], record::metric::kSamplesPerS, rates[i]);
  }
  record::SetMetric(cells[2], record::metric::kWeightBytes, 1000);
  SetEval(cells[0], Eval({1, 2, 3, 0}, {1, 0}));
  SetEval(cells[1], Eval({1, 2, 3, 0.5}, {1, 0}));  // top-1 1.0, mean 0.125
  SetEval(cells[2], Eval({1, 2, 0, 3}, {1, 1}));    // top-1 0.5
  const std::vector<PrecisionGroup> groups = PrecisionTradeOff(cells);
  ASSERT_EQ(groups.size(), 1u) << "resnet50 has one precision only";
  const auto& rows = groups[0].rows;
  ASSERT_EQ(rows.size(), 3u) << "the int8 repetition is not a row of its own";
  EXPECT_EQ(rows[0].precision, "fp32");
  EXPECT_EQ(rows[0].agreement.why_none, "the reference");
  EXPECT_EQ(rows[2].cell->cell_id, "int8") << "the lowest repetition";
  EXPECT_EQ(rows[2].weight_bytes, 1000.0);
  EXPECT_TRUE(rows[2].fastest);
  EXPECT_FALSE(rows[1].fastest);
  EXPECT_TRUE(rows[1].most_accurate);
  EXPECT_FALSE(rows[2].most_accurate);
  EXPECT_FALSE(rows[0].most_accurate) << "fp32 is the reference, not a candidate";
  EXPECT_DOUBLE_EQ(rows[2].agreement.top1_agreement, 0.5);
}

// Energy per sample: the GPU's where measured, else the CPU package's; peak memory: the device
// allocator's, else the process's RSS; absent when the cell has neither.
TEST(PrecisionTradeOff, RowsCarryEnergyPerSampleAndPeakMemory) {
  std::vector<record::CellRecord> cells = {Cell("fp32", "fp32"), Cell("bf16", "bf16"), Cell("int8", "int8")};
  record::SetMetric(cells[0], record::metric::kEnergyPerSampleJ, 0.5);
  record::SetMetric(cells[0], record::metric::kCpuPackageEnergyPerSampleJ, 9.0);
  record::SetMetric(cells[0], record::memory::kDeviceAllocatedPeakBytes, 4096);
  record::SetMetric(cells[0], record::metric::kProcRssPeakBytes, 1e9);
  record::SetMetric(cells[1], record::metric::kCpuPackageEnergyPerSampleJ, 0.25);
  record::SetMetric(cells[1], record::metric::kProcRssPeakBytes, 2048);
  const std::vector<PrecisionGroup> groups = PrecisionTradeOff(cells);
  ASSERT_EQ(groups.size(), 1u);
  const auto& rows = groups[0].rows;
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].energy_per_sample_j, 0.5);
  EXPECT_EQ(rows[0].energy_source, "gpu");
  EXPECT_EQ(rows[0].peak_memory_bytes, 4096.0);
  EXPECT_EQ(rows[1].energy_per_sample_j, 0.25);
  EXPECT_EQ(rows[1].energy_source, "cpu_package");
  EXPECT_EQ(rows[1].peak_memory_bytes, 2048.0);
  EXPECT_FALSE(rows[2].energy_per_sample_j.has_value());
  EXPECT_EQ(rows[2].energy_source, "");
  EXPECT_FALSE(rows[2].peak_memory_bytes.has_value());
}

// SSD: both evaluations' detections matched by IoU, the reference's boxes first.
TEST(CompareEvalOutputs, DetectionsAreMatchedByIou) {
  json ref = Eval({1, 2}, {1});
  json cand = Eval({1, 2}, {1});
  // Reference: [0,0,2,2] class 1 and [5,5,6,6] class 2; candidate: [0,0,2,1.5] class 1 (IoU 0.75)
  // and [5,5,6,6] class 3 (a class mismatch).
  ref["detections"] = json::parse("[[0, 0, 0, 2, 2, 0.9, 1], [0, 5, 5, 6, 6, 0.8, 2]]");
  cand["detections"] = json::parse("[[0, 0, 0, 2, 1.5, 0.9, 1], [0, 5, 5, 6, 6, 0.8, 3]]");
  const OutputAgreement a = CompareEvalOutputs(cand, ref);
  ASSERT_TRUE(a.has_figures()) << a.why_none;
  ASSERT_TRUE(a.boxes.has_value()) << a.boxes_why_none;
  EXPECT_EQ(a.boxes->reference_boxes, 2);
  EXPECT_EQ(a.boxes->matched, 1);
  EXPECT_DOUBLE_EQ(*a.boxes->match_share, 0.5);
  EXPECT_DOUBLE_EQ(*a.boxes->mean_iou, 0.75);
  // Only one side with detections: no box figures, and why.
  cand.erase("detections");
  const OutputAgreement b = CompareEvalOutputs(cand, ref);
  EXPECT_FALSE(b.boxes.has_value());
  EXPECT_EQ(b.boxes_why_none, "only the reference recorded detections");
  // Classifiers record none: neither figures nor a reason.
  const OutputAgreement c = CompareEvalOutputs(Eval({1, 2}, {1}), Eval({1, 2}, {1}));
  EXPECT_FALSE(c.boxes.has_value());
  EXPECT_EQ(c.boxes_why_none, "");
}

// min_agreement, as the runner recorded it: a figure below it is a warning naming figure and
// tolerance; at or above it, none.
TEST(CompareWithFp32, WarnsWhenAFigureFallsBelowTheCellsTolerance) {
  std::vector<record::CellRecord> cells = {Cell("fp32", "fp32"), Cell("int8", "int8")};
  SetEval(cells[0], Eval({1, 2, 3, 0}, {1, 0}));
  json eval = Eval({1, 2, 3, 0}, {1, 1});  // one of two rows agrees: 0.5
  eval["min_agreement"] = 0.9;
  eval["fault"] = {{"layer", "encoder.0.ffn"}};
  SetEval(cells[1], eval);
  const OutputAgreement a = CompareWithFp32(cells[1], cells);
  ASSERT_TRUE(a.has_figures()) << a.why_none;
  EXPECT_EQ(a.tolerance, 0.9);
  EXPECT_EQ(a.warning, "top-1 agreement 0.5 (2 rows) against fp32 below the tolerance min_agreement 0.9");
  EXPECT_EQ(a.fault, "encoder.0.ffn");
  eval["min_agreement"] = 0.5;  // equal: not below
  SetEval(cells[1], eval);
  EXPECT_EQ(CompareWithFp32(cells[1], cells).warning, "");
  // The fp32 cell without the key (set on the int8 cell only) is still its reference.
  cells[1].params["min_agreement"] = "int8=0.9";
  EXPECT_EQ(FindFp32Reference(cells[1], cells), &cells[0]);
  EXPECT_EQ(PrecisionTradeOff(cells).size(), 1U);
  // No tolerance recorded: no warning, whatever the agreement.
  eval.erase("min_agreement");
  SetEval(cells[1], eval);
  EXPECT_FALSE(CompareWithFp32(cells[1], cells).tolerance.has_value());
  EXPECT_EQ(CompareWithFp32(cells[1], cells).warning, "");
}

TEST(ApplyTolerance, NamesTheBoxShareWhenItFallsBelow) {
  OutputAgreement a;
  a.rows = 4;
  a.top1_agreement = 1.0;
  a.boxes = BoxMatch{};
  a.boxes->reference_boxes = 4;
  a.boxes->matched = 3;
  a.boxes->match_share = 0.75;
  ApplyTolerance(a, json{{"min_agreement", 0.8}}, "the CPU cell");
  EXPECT_EQ(a.warning,
            "boxes matched 0.75 (3 of 4 at IoU >= 0.5) against the CPU cell below the tolerance "
            "min_agreement 0.8");
}

// max_abs_diff and max_mean_abs_diff: a figure above its bound is a warning naming figure and
// bound (at the bound, none); with min_agreement's, "; " between them.
TEST(ApplyTolerance, DiffBoundsWarnAboveTheirBound) {
  OutputAgreement a;
  a.rows = 2;
  a.values = 4;
  a.top1_agreement = 0.5;
  a.max_abs_diff = 0.5;
  a.mean_abs_diff = 0.125;
  ApplyTolerance(a, json{{"max_abs_diff", 0.25}, {"max_mean_abs_diff", 0.125}}, "fp32");
  EXPECT_EQ(a.max_abs_diff_tolerance, 0.25);
  EXPECT_EQ(a.max_mean_abs_diff_tolerance, 0.125);
  EXPECT_FALSE(a.tolerance.has_value());
  EXPECT_EQ(a.warning, "max |diff| 0.5 (4 values) against fp32 above the tolerance max_abs_diff 0.25");
  OutputAgreement all = a;
  all.warning.clear();
  ApplyTolerance(all, json{{"min_agreement", 0.9}, {"max_abs_diff", 0.5}, {"max_mean_abs_diff", 0.1}},
                 "the CPU cell");
  EXPECT_EQ(all.warning,
            "top-1 agreement 0.5 (2 rows) against the CPU cell below the tolerance min_agreement 0.9; mean "
            "|diff| 0.125 (4 values) against the CPU cell above the tolerance max_mean_abs_diff 0.1");
  // Without figures, the tolerances are read but nothing is compared.
  OutputAgreement none;
  none.why_none = "no fp32 reference in this run";
  ApplyTolerance(none, json{{"max_abs_diff", 0.0}}, "fp32");
  EXPECT_EQ(none.max_abs_diff_tolerance, 0.0);
  EXPECT_EQ(none.warning, "");
}

// The bounds pair cells as min_agreement does: a cell that sets them still has the fp32 cell
// without them as its reference, and the stored bound warns in show's table.
TEST(CompareWithFp32, DiffBoundsAreNotPartOfThePairing) {
  std::vector<record::CellRecord> cells = {Cell("fp32", "fp32"), Cell("bf16", "bf16")};
  cells[1].params["max_abs_diff"] = "bf16=0.1";
  cells[1].params["max_mean_abs_diff"] = "bf16=0.1";
  SetEval(cells[0], Eval({1, 2, 3, 0}, {1, 0}));
  json eval = Eval({1, 2, 3.25, 0}, {1, 0});  // |diff| 0, 0, 0.25, 0: max 0.25, mean 0.0625
  eval["max_abs_diff"] = 0.1;
  eval["max_mean_abs_diff"] = 0.1;
  SetEval(cells[1], eval);
  EXPECT_EQ(FindFp32Reference(cells[1], cells), &cells[0]);
  const OutputAgreement a = CompareWithFp32(cells[1], cells);
  ASSERT_TRUE(a.has_figures()) << a.why_none;
  EXPECT_DOUBLE_EQ(a.mean_abs_diff, 0.0625);
  EXPECT_EQ(a.warning, "max |diff| 0.25 (4 values) against fp32 above the tolerance max_abs_diff 0.1");
  EXPECT_EQ(PrecisionTradeOff(cells).size(), 1U);
}

TEST(AgreementNotes, BoxesWarningAndFault) {
  OutputAgreement a;
  a.rows = 2;
  a.top1_agreement = 0.5;
  a.boxes = BoxMatch{};
  a.boxes->reference_boxes = 4;
  a.boxes->candidate_boxes = 5;
  a.boxes->matched = 3;
  a.boxes->match_share = 0.75;
  a.boxes->mean_iou = 0.8125;
  a.fault = "layers.1";
  ApplyTolerance(a, json{{"min_agreement", 0.9}, {"fault", {{"layer", "layers.1"}}}}, "fp32");
  const std::vector<std::string> notes = AgreementNotes(a);
  ASSERT_EQ(notes.size(), 2U);
  EXPECT_EQ(notes[0],
            "boxes matched (same class, IoU >= 0.5): 75.0% of 4 reference boxes (5 here), mean IoU 0.812");
  EXPECT_EQ(notes[1],
            "warning: top-1 agreement 0.5 (2 rows) and boxes matched 0.75 (3 of 4 at IoU >= 0.5) against "
            "fp32 below "
            "the tolerance min_agreement 0.9; layer most likely at fault: layers.1");
  OutputAgreement none;
  none.why_none = "no fp32 reference in this run";
  EXPECT_TRUE(AgreementNotes(none).empty());
}

// CPU-GPU consistency: a CUDA cell against the CPU cell with every other key equal (precision
// included); the mechanism runs on stored records, so it is tested without a GPU.
TEST(CpuGpuConsistency, SetsEachCudaCellAgainstItsCpuCell) {
  std::vector<record::CellRecord> cells = {
      Cell("cpu-bf16", "bf16", {{"device", "cpu"}}),
      Cell("gpu-bf16", "bf16", {{"device", "cuda:0"}}),
      Cell("gpu-fp16", "fp16", {{"device", "cuda"}}),
      Cell("cpu-fp32", "fp32", {{"device", "cpu"}}),
      Cell("gpu-fp32", "fp32", {{"device", "cuda:0"}, {"threads", 2}}),
      Cell("gpu-fp32-64px", "fp32", {{"device", "cuda:0"}, {"image_size", 64}})};
  SetEval(cells[0], Eval({1, 2, 3, 0}, {1, 0}));
  json gpu = Eval({1, 2.5, 3, 0}, {1, 0});
  gpu["min_agreement"] = 1.0;
  SetEval(cells[1], gpu);
  SetEval(cells[2], Eval({1, 2, 3, 0}, {1, 0}));
  SetEval(cells[3], Eval({1, 2, 3, 0}, {1, 0}));
  SetEval(cells[4], Eval({1, 2, 3, 0}, {1, 0}));
  SetEval(cells[5], Eval({1, 2, 3, 0}, {1, 0}));
  const std::vector<ConsistencyRow> rows = CpuGpuConsistency(cells);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].cell->cell_id, "gpu-bf16");
  EXPECT_EQ(rows[0].agreement.reference, &cells[0]);
  ASSERT_TRUE(rows[0].agreement.has_figures());
  EXPECT_DOUBLE_EQ(rows[0].agreement.max_abs_diff, 0.5);
  EXPECT_DOUBLE_EQ(rows[0].agreement.top1_agreement, 1.0);
  EXPECT_EQ(rows[0].agreement.warning, "");  // 1.0 is not below 1.0
  // fp16 has no CPU cell; the fp32 GPU cell with threads is set against the CPU one (threads is
  // the CPU's setting), the one at another image_size is not.
  EXPECT_EQ(rows[1].agreement.why_none, kNoCpuReference);
  EXPECT_EQ(rows[2].agreement.reference, &cells[3]);
  EXPECT_EQ(rows[3].agreement.why_none, kNoCpuReference);
  // A CPU cell has no CPU reference of its own.
  EXPECT_EQ(FindCpuReference(cells[0], cells), nullptr);
  // A top-1 flip on the GPU below its tolerance is a warning against the CPU cell.
  gpu["top1"] = {1, 1};
  SetEval(cells[1], gpu);
  EXPECT_EQ(CpuGpuConsistency(cells)[0].agreement.warning,
            "top-1 agreement 0.5 (2 rows) against the CPU cell below the tolerance min_agreement 1");
  // A bound on |diff| (0.5 here, 2.5 against 2) warns against the CPU cell too.
  gpu["top1"] = {1, 0};
  gpu["max_abs_diff"] = 0.25;
  SetEval(cells[1], gpu);
  EXPECT_EQ(CpuGpuConsistency(cells)[0].agreement.warning,
            "max |diff| 0.5 (4 values) against the CPU cell above the tolerance max_abs_diff 0.25");
}

}  // namespace
}  // namespace dlbench::report

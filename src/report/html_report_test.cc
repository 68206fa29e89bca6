#include "report/html_report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>

#include "record/metrics.h"
#include "report/assets.h"
#include "report/precision_view.h"
#include "report/test_store.h"

namespace dlbench::report {
namespace {

using nlohmann::json;
using testing::MakeCell;

std::size_t Count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

void AddSteps(record::CellRecord& cell, int n, std::int64_t step_ns, std::int64_t warmup) {
  std::int64_t t = 1'000'000'000;
  for (int i = 0; i < n; ++i) {
    const std::int64_t d = i < warmup ? step_ns * 3 : step_ns + (i % 3) * 1000;
    cell.steps.push_back({0, record::StepRecord{t, t + d, 0, 0, 0, 8, 0}});
    t += d + 100;
  }
  cell.window = record::MeasuredWindow{warmup, n - warmup};
  cell.warmup_rule = "mser5";
}

ReportInput SampleInput(const std::string& model) {
  ReportInput input;
  input.run.id = 5;
  input.run.name = "nightly <b>bold</b>";
  input.run.status = record::RunStatus::kCompleted;
  input.run.environment = {{"hostname", "host<1>"},
                           {"warnings", {"CPU frequency scaling is on: <governor>"}}};
  input.run.environment_hash = "e1";
  // Training: throughput rises then flattens (saturation at 32) and drops at 128.
  const std::pair<int, double> curve[] = {{8, 100}, {16, 180}, {32, 250}, {64, 255}, {128, 200}};
  int index = 0;
  for (const auto& [bs, tput] : curve) {
    auto c = MakeCell(5, index++, model, bs, tput);
    AddSteps(c, 40, 2'000'000, 4);
    input.cells.push_back(c);
  }
  // Inference at two batch sizes, with monitor series.
  for (int bs : {1, 4}) {
    auto c = MakeCell(5, index++, model, bs, 50.0 * bs, "infer");
    AddSteps(c, 30, 1'000'000 * bs, 2);
    c.metrics.push_back({"step_time_p50_ns", 1e6 * bs, "ns"});
    c.metrics.push_back({"step_time_p99_ns", 1.2e6 * bs, "ns"});
    c.series = {{1'000'000'000, "gpu0.sm_util_pct", 80},
                {1'100'000'000, "gpu0.sm_util_pct", 85},
                {1'000'000'000, "gpu0.power_w", 200},
                {1'100'000'000, "gpu0.power_w", 210},
                {1'000'000'000, "gpu0.mem_used_bytes", 1 << 30}};
    input.cells.push_back(c);
  }
  auto failed = MakeCell(5, index++, model, 256, 0);
  failed.outcome = record::Outcome::kOom;
  failed.metrics.clear();
  failed.message = "CUDA out of memory </td><script>alert(2)</script>";
  input.cells.push_back(failed);
  return input;
}

TEST(EmpiricalCdf, HandComputedPoints) {
  EXPECT_TRUE(EmpiricalCdf({}, 100).empty());
  const auto one = EmpiricalCdf({5}, 100);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], std::make_pair(5.0, 1.0));
  const auto four = EmpiricalCdf({4, 1, 3, 2}, 100);
  const std::vector<std::pair<double, double>> want = {{1, 0.25}, {2, 0.5}, {3, 0.75}, {4, 1.0}};
  EXPECT_EQ(four, want);
  const auto nan_dropped = EmpiricalCdf({1, std::nan(""), 2}, 100);
  ASSERT_EQ(nan_dropped.size(), 2u);
  EXPECT_EQ(nan_dropped[1].second, 1.0);
}

TEST(EmpiricalCdf, ThinnedKeepsExtremes) {
  std::vector<double> v;
  for (int i = 0; i < 10000; ++i) v.push_back(10000 - i);
  const auto cdf = EmpiricalCdf(v, 100);
  EXPECT_LE(cdf.size(), 101u);
  EXPECT_EQ(cdf.front(), std::make_pair(1.0, 1e-4));
  EXPECT_EQ(cdf.back(), std::make_pair(10000.0, 1.0));
  EXPECT_TRUE(std::is_sorted(cdf.begin(), cdf.end()));
}

TEST(ThinIndices, Bounds) {
  EXPECT_TRUE(ThinIndices(0, 10).empty());
  EXPECT_EQ(ThinIndices(3, 10), (std::vector<std::size_t>{0, 1, 2}));
  const auto thin = ThinIndices(1000, 10);
  EXPECT_LE(thin.size(), 11u);
  EXPECT_EQ(thin.front(), 0u);
  EXPECT_EQ(thin.back(), 999u);
}

TEST(BuildCharts, OneChartPerTrendAndCell) {
  const auto charts = BuildCharts(SampleInput("resnet50"), {});
  std::map<std::string, int> per_section;
  for (const auto& c : charts) {
    ++per_section[c["section"].get<std::string>()];
    EXPECT_FALSE(c["datasets"].empty()) << c.dump();
    for (const auto& d : c["datasets"]) EXPECT_FALSE(d["data"].empty()) << c["title"];
  }
  EXPECT_EQ(per_section["throughput"], 2);  // train over 5 batches, infer over 2
  EXPECT_EQ(per_section["latency"], 1);     // one inference configuration, two cells in it
  EXPECT_EQ(per_section["steps"], 7);       // every cell with steps
  EXPECT_EQ(per_section["monitor"], 6);     // 2 cells x utilisation, power, memory

  const auto& train =
      charts[1]["configuration"].get<std::string>().find("scenario=train") != std::string::npos ? charts[1]
                                                                                                : charts[0];
  bool saturation = false, drop = false;
  for (const auto& d : train["datasets"]) {
    if (d["kind"] == "marker" && d["label"] == "saturation (batch 32)")
      saturation = d["data"][0]["y"] == 250.0;
    if (d["kind"] == "marker" && d["label"] == "drop (batch 128)") drop = true;
  }
  EXPECT_TRUE(saturation) << train.dump();
  EXPECT_TRUE(drop);
  EXPECT_EQ(train["x"]["type"], "logarithmic");

  // The step chart marks the warm-up cut at step 4 with a vertical line.
  bool cut = false;
  for (const auto& c : charts) {
    if (c["section"] != "steps") continue;
    for (const auto& d : c["datasets"]) {
      if (d["kind"] == "vline") cut = d["data"][0]["x"] == 4.0 && d["data"][1]["x"] == 4.0;
    }
    break;
  }
  EXPECT_TRUE(cut);
}

// Titles are the labels (`dlbench show`'s), throughput starts at zero, and a step-time axis is
// scaled to the measured window with the longer warm-up steps clipped to its top and marked.
TEST(BuildCharts, TitlesFromLabelsRateAxesFromZeroStepAxesFromTheMeasuredWindow) {
  ReportInput input = SampleInput("resnet50");
  // A 1 s autotuning step first (train cells: 40 steps of 2 ms, warm-up 4 at 6 ms).
  auto& first = input.cells[0].steps[0].record;
  first.end_ns = first.start_ns + 1'000'000'000;
  const auto charts = BuildCharts(input, {});
  std::vector<std::string> throughput_titles;
  for (const auto& c : charts) {
    if (c["section"] == "throughput") {
      throughput_titles.push_back(c["title"]);
      EXPECT_EQ(c["y"]["min"], 0) << c["title"];
    }
  }
  std::sort(throughput_titles.begin(), throughput_titles.end());
  EXPECT_EQ(throughput_titles, (std::vector<std::string>{"resnet50 infer", "resnet50 train"}));
  const json* steps = nullptr;
  for (const auto& c : charts) {
    if (c["section"] == "steps" && c["title"] == "cell 0: resnet50 train bs=8") steps = &c;
  }
  ASSERT_NE(steps, nullptr);
  // Measured steps are 2 ms + (i % 3) us: the longest 2.002 ms, so the axis ends at 2.2022 ms.
  EXPECT_EQ((*steps)["y"]["min"], 0);
  EXPECT_NEAR((*steps)["y"]["max"].get<double>(), 1.1 * 2.002, 1e-9);
  const json* clipped = nullptr;
  for (const auto& d : (*steps)["datasets"]) {
    if (d["kind"] == "clipped") clipped = &d;
  }
  ASSERT_NE(clipped, nullptr) << steps->dump();
  ASSERT_EQ((*clipped)["data"].size(), 4u);  // the 4 warm-up steps, 1000 ms and three of 6 ms
  EXPECT_EQ((*clipped)["data"][0]["v"], 1000.0);
  EXPECT_EQ((*clipped)["data"][1]["v"], 6.0);
  EXPECT_EQ((*clipped)["data"][0]["y"], (*steps)["y"]["max"]);
  EXPECT_EQ((*clipped)["label"], "4 steps outside the measured window above the axis (up to 1 s)");
  EXPECT_NE((*steps)["note"].get<std::string>().find("40 steps of rank 0; the first 4 are warm-up (mser5)"),
            std::string::npos)
      << (*steps)["note"];
}

// A load cell gets a latency CDF over its measured queries (the first window->steps points of
// load.latency_ns) with its bound drawn; its label is text in the page.
TEST(BuildCharts, ALoadCellGetsItsQueryLatencyDistributionWithTheBound) {
  ReportInput input;
  input.run.id = 5;
  auto c = MakeCell(5, 0, "<i>served</i>", 1, 0, "infer");
  c.extras["load"] = {{"scenario", "server"}, {"latency_bound_ms", 10.0}};
  for (int i = 0; i < 100; ++i)
    c.series.push_back({1'000'000'000 + i * 1'000'000, "load.latency_ns", 1e6 * (i + 1)});
  c.window = record::MeasuredWindow{0, 80};  // 20 queries arrived after STOP: stored, not drawn
  c.verdict = record::Verdict::kOverBound;
  input.cells.push_back(c);
  const auto charts = BuildCharts(input, {});
  std::vector<nlohmann::json> latency;
  for (const auto& chart : charts) {
    if (chart["section"] == "latency") latency.push_back(chart);
  }
  ASSERT_EQ(latency.size(), 1u);
  const auto& datasets = latency[0]["datasets"];
  ASSERT_EQ(datasets.size(), 2u);
  EXPECT_EQ(datasets[0]["data"].back()["x"], 80.0);  // the largest measured latency, in ms
  EXPECT_EQ(datasets[0]["data"].back()["y"], 1.0);
  EXPECT_EQ(datasets[1]["kind"], "vline");
  EXPECT_EQ(datasets[1]["data"][0]["x"], 10.0);
  EXPECT_NE(latency[0]["note"].get<std::string>().find("80 queries"), std::string::npos);
  EXPECT_NE(latency[0]["note"].get<std::string>().find("Verdict: over_bound"), std::string::npos);
  const std::string html = RenderHtmlReport(input);
  EXPECT_EQ(html.find("<i>served</i>"), std::string::npos);
}

TEST(RenderHtmlReport, HostileNamesAreTextEverywhere) {
  const std::string html = RenderHtmlReport(SampleInput("<script>alert(1)</script>"));
  EXPECT_EQ(html.find("<script>alert("), std::string::npos);
  EXPECT_EQ(html.find("<b>bold</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&lt;governor&gt;"), std::string::npos);
  // Exactly the three scripts of the page: data, Chart.js, report.js.
  EXPECT_EQ(Count(html, "<script"), 3u);
  EXPECT_EQ(Count(html, "</script>"), 3u);
}

TEST(RenderHtmlReport, SelfContainedWithEverySection) {
  const std::string html = RenderHtmlReport(SampleInput("resnet50"));
  for (const char* id : {"environment", "cells", "throughput", "latency", "steps", "monitor", "baseline"}) {
    EXPECT_NE(html.find(std::string("<section id=\"") + id + "\">"), std::string::npos) << id;
  }
  EXPECT_NE(html.find(std::string(assets::kChartJs.substr(0, 200))), std::string::npos);
  EXPECT_NE(html.find("Permission is hereby granted"), std::string::npos);  // Chart.js's license
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  // One canvas per chart.
  EXPECT_EQ(Count(html, "<canvas"), BuildCharts(SampleInput("resnet50"), {}).size());
  EXPECT_NE(html.find("No baseline given"), std::string::npos);
}

// The precision section: the trade-off table of cells that differ only in precision (with
// energy and peak memory), and converge cells' accuracy per precision; escaped like the rest.
TEST(RenderHtmlReport, PrecisionSectionHasTheTradeOffAndTheTrainedAccuracies) {
  ReportInput input = SampleInput("resnet50");
  EXPECT_NE(RenderHtmlReport(input).find("No cells differ only in precision"), std::string::npos);
  auto fp32 = MakeCell(5, 10, "bert<i>", 1, 100, "infer");
  auto int8 = MakeCell(5, 11, "bert<i>", 1, 300, "infer");
  int8.params["precision"] = "int8";
  int8.label = "bert<i> int8";
  record::SetMetric(int8, record::metric::kCpuPackageEnergyPerSampleJ, 0.125);
  record::SetMetric(int8, record::metric::kProcRssPeakBytes, 2048);
  auto converge = MakeCell(5, 12, "fashion_cnn", 50, 10);
  record::SetMetric(converge, record::metric::kEvalAccuracyFp32, 0.8206);
  record::SetMetric(converge, record::metric::kEvalAccuracyInt8, 0.8208);
  record::SetMetric(converge, record::metric::kEvalAccuracyDeltaInt8, 0.0002);
  input.cells.push_back(fp32);
  input.cells.push_back(int8);
  input.cells.push_back(converge);
  const std::string html = RenderHtmlReport(input);
  const std::size_t section = html.find("<section id=\"precisions\">");
  ASSERT_NE(section, std::string::npos);
  const std::string body = html.substr(section, html.find("</section>", section) - section);
  EXPECT_EQ(body.find("No cells differ only in precision"), std::string::npos);
  EXPECT_EQ(body.find("<i>"), std::string::npos) << "labels are text";
  EXPECT_NE(body.find("cpu_package"), std::string::npos);
  EXPECT_NE(body.find("data-v=\"0.125\""), std::string::npos) << body;
  EXPECT_NE(body.find("data-v=\"2048\""), std::string::npos) << body;
  EXPECT_NE(body.find("no evaluation outputs in this cell"), std::string::npos) << body;
  EXPECT_NE(body.find("Accuracy of the trained model per precision"), std::string::npos);
  EXPECT_NE(body.find("data-v=\"0.8208\""), std::string::npos) << body;
}

// The CPU-GPU consistency table from stored records (no GPU needed): the CUDA cell's outputs
// against the CPU cell's, the CPU cell named, a bound's warning and the layer at fault in the
// notes; a CUDA cell without a CPU twin says so; every label and note is HTML-escaped.
TEST(RenderHtmlReport, PrecisionSectionHasTheCpuGpuConsistencyTable) {
  ReportInput input = SampleInput("resnet50");
  EXPECT_EQ(RenderHtmlReport(input).find("CPU-GPU consistency"), std::string::npos) << "no CUDA cell";
  auto eval = [](std::vector<double> values, std::vector<int> top1) {
    const auto rows = static_cast<std::int64_t>(top1.size());
    return json{{"weights_hash", "w"},
                {"inputs_hash", "i"},
                {"output_shape", {rows, static_cast<std::int64_t>(values.size()) / rows}},
                {"top1", top1},
                {"values", values}};
  };
  auto cpu = MakeCell(5, 20, "bert<b>", 2, 100, "infer");
  cpu.params["device"] = "cpu";
  cpu.label = "bert<b> cpu";
  cpu.extras["info"]["eval"] = eval({1, 2, 3, 0}, {1, 0});
  auto gpu = MakeCell(5, 21, "bert<b>", 2, 900, "infer");
  gpu.params["device"] = "cuda:0";
  gpu.label = "bert<b> cuda";
  // |diff| 0.5, 0, 0.25, 0: max 0.5, mean 0.1875; the same argmax.
  json gpu_eval = eval({1.5, 2, 3.25, 0}, {1, 0});
  gpu_eval["max_abs_diff"] = 0.25;
  gpu_eval["fault"] = {{"layer", "layers.<1>"}};
  gpu.extras["info"]["eval"] = gpu_eval;
  auto lone = MakeCell(5, 22, "bert<b>", 4, 900, "infer");
  lone.params["device"] = "cuda";
  lone.label = "bert<b> cuda bs4";
  lone.extras["info"]["eval"] = eval({1, 2}, {1});
  input.cells.push_back(cpu);
  input.cells.push_back(gpu);
  input.cells.push_back(lone);
  const std::string html = RenderHtmlReport(input);
  const std::size_t at = html.find("<table class=\"sortable\" id=\"consistency-table\">");
  ASSERT_NE(at, std::string::npos) << html;
  const std::string table = html.substr(at, html.find("</table>", at) - at);
  EXPECT_EQ(table.find("<b>"), std::string::npos) << "labels are text";
  EXPECT_EQ(Count(table, "<tr>"), 3u) << table;  // the header and the two CUDA cells
  EXPECT_NE(
      table.find("<td data-v=\"bert&lt;b&gt; cuda\">bert&lt;b&gt; cuda</td><td data-v=\"fp32\">fp32</td>"
                 "<td data-v=\"bert&lt;b&gt; cpu\">bert&lt;b&gt; cpu</td>"),
      std::string::npos)
      << table;
  EXPECT_NE(table.find("<td class=\"num\" data-v=\"1\">1</td><td class=\"num\" data-v=\"2\">2</td>"
                       "<td class=\"num\" data-v=\"0.5\">0.5</td><td class=\"num\" data-v=\"0.1875\">"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("warning: max |diff| 0.5 (4 values) against the CPU cell above the tolerance "
                       "max_abs_diff 0.25; layer most likely at fault: layers.&lt;1&gt;"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find(kNoCpuReference), std::string::npos) << table;
}

TEST(RenderHtmlReport, EmbeddedAssetsCannotBreakOutOfTheirScript) {
  for (const std::string_view asset : {assets::kChartJs, assets::kReportJs}) {
    std::string lower(asset);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    EXPECT_EQ(lower.find("</script"), std::string::npos);
    EXPECT_EQ(lower.find("<!--"), std::string::npos);
  }
}

TEST(RenderHtmlReport, BaselineRatiosAndEnvironmentDifferences) {
  ReportInput input = SampleInput("resnet50");
  record::RunRecord base;
  base.id = 2;
  base.name = "last week";
  base.environment = {{"hostname", "host<1>"}, {"cudnn", "8.9"}};
  base.environment_hash = "e0";
  input.baseline_run = base;
  input.baseline_cells = {MakeCell(2, 0, "resnet50", 8, 125), MakeCell(2, 1, "resnet50", 16, 180),
                          MakeCell(2, 2, "resnet50", 512, 1)};
  const std::string html = RenderHtmlReport(input);
  EXPECT_NE(html.find("The environments differ"), std::string::npos);
  EXPECT_NE(html.find("<code>cudnn</code>: 8.9 &rarr; (absent)"), std::string::npos);
  // bs=8: 100 / 125 = 0.8 -> slower; bs=16: 180 / 180 = 1 -> same.
  EXPECT_NE(html.find("data-v=\"0.8\">0.8</td><td data-v=\"slower\">slower</td>"), std::string::npos);
  EXPECT_NE(html.find("data-v=\"1\">1</td><td data-v=\"same\">same</td>"), std::string::npos);
  EXPECT_NE(html.find("1 slower beyond the threshold"), std::string::npos);
  EXPECT_NE(html.find("only in the baseline: resnet50 train bs=512"), std::string::npos);
}

TEST(RenderHtmlReport, EmptyRunStillRenders) {
  ReportInput input;
  input.run.id = 1;
  const std::string html = RenderHtmlReport(input);
  EXPECT_NE(html.find("No cell has step records."), std::string::npos);
  EXPECT_EQ(Count(html, "<canvas"), 0u);
}

}  // namespace
}  // namespace dlbench::report

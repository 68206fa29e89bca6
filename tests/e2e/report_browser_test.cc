// The HTML report in a real headless Chromium (Debian's `chromium`): the page loads without a
// console error, every chart draws pixels, hostile names stay text, and a screenshot is saved
// to <build>/test-artifacts/report.png for a human to look at.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "report_e2e_util.h"

namespace dlbench::e2e {
namespace {

// Put first in <head> of a copy of the report, so it sees errors from every later script. It
// reports through the DOM, which --dump-dom prints once the page has loaded.
constexpr char kProbe[] = R"(<script>
window.__dlbenchErrors = [];
window.__dlbenchAlerts = 0;
window.addEventListener('error', function (e) { window.__dlbenchErrors.push(String(e.message)); });
(function () {
  var original = console.error;
  console.error = function () {
    window.__dlbenchErrors.push(Array.prototype.join.call(arguments, ' '));
    original.apply(console, arguments);
  };
})();
window.alert = function () { window.__dlbenchAlerts++; };
window.addEventListener('load', function () {
  var result = { errors: window.__dlbenchErrors, alerts: window.__dlbenchAlerts, charts: [], hostile_cells: 0 };
  document.querySelectorAll('canvas').forEach(function (c) {
    var painted = 0;
    if (c.width > 0 && c.height > 0) {
      var d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      for (var i = 3; i < d.length; i += 4) if (d[i] !== 0) painted++;
    }
    var chart = window.Chart && window.Chart.getChart(c);
    var box = c.closest('.chart');
    var section = c.closest('section');
    var entry = { id: c.id, width: c.width, height: c.height, painted: painted, has_chart: !!chart,
                  title: box ? box.querySelector('h3').textContent : '',
                  section: section ? section.id : '', datasets: [] };
    if (chart) {
      entry.y_min = chart.scales.y.min;
      entry.y_max = chart.scales.y.max;
      chart.data.datasets.forEach(function (ds) {
        var ys = ds.data.map(function (p) { return p.y; });
        var vs = ds.data.map(function (p) { return typeof p.v === 'number' ? p.v : p.y; });
        entry.datasets.push({ label: ds.label, points: ds.data.length,
                              max_y: ys.length ? Math.max.apply(null, ys) : null,
                              max_v: vs.length ? Math.max.apply(null, vs) : null });
      });
    }
    result.charts.push(entry);
  });
  var cells = document.getElementById('cells-table');
  var holder = cells.parentElement;
  result.cells_table = { rows: cells.tBodies[0].rows.length, holder_client_height: holder.clientHeight,
                         holder_scroll_height: holder.scrollHeight,
                         table_height: cells.getBoundingClientRect().height };
  document.querySelectorAll('#cells-table td').forEach(function (td) {
    if (td.textContent === '\x3cscript>alert(1)\x3c/script>') result.hostile_cells++;
  });
  var pre = document.createElement('pre');
  pre.id = 'dlbench-probe';
  pre.textContent = JSON.stringify(result);
  document.body.appendChild(pre);
});
</script>
)";

std::string Unescape(std::string text) {
  const std::pair<std::string, std::string> entities[] = {
      {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}};
  for (const auto& [from, to] : entities) {
    for (auto pos = text.find(from); pos != std::string::npos; pos = text.find(from, pos + to.size())) {
      text.replace(pos, from.size(), to);
    }
  }
  return text;
}

std::vector<std::string> ChromiumArgs(const std::string& chromium, const TempDir& dir) {
  // --no-sandbox: CI runs tests as root, where Chromium refuses its sandbox. The profile lives in
  // the test folder so runs do not share state.
  return {chromium,
          "--headless",
          "--no-sandbox",
          "--disable-gpu",
          "--no-first-run",
          "--hide-scrollbars",
          "--user-data-dir=" + (dir / "chromium-profile"),
          "--virtual-time-budget=15000"};
}

// Loads a copy of dir/report.html with kProbe in headless Chromium and returns what the probe
// saw; sets `dom_err` to Chromium's stderr. A fatal failure (checked with ASSERT_NO_FATAL_FAILURE)
// when any step fails.
void ProbeHtml(const std::string& chromium, const TempDir& dir, nlohmann::json& result,
               std::string& dom_err) {
  auto html = ReadFile(dir / "report.html");
  ASSERT_TRUE(html.ok());
  std::string probed = *html;
  const auto head = probed.find("<head>");
  ASSERT_NE(head, std::string::npos);
  probed.insert(head + 6, kProbe);
  WriteText(dir / "probed.html", probed);

  auto args = ChromiumArgs(chromium, dir);
  args.push_back("--enable-logging=stderr");
  args.push_back("--dump-dom");
  args.push_back("file://" + (dir / "probed.html"));
  auto dom = RunCommand(args, dir);
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  dom_err = dom.err;
  const auto begin = dom.out.find("<pre id=\"dlbench-probe\">");
  ASSERT_NE(begin, std::string::npos) << "the probe did not report; the page did not finish loading\n"
                                      << dom.err;
  const auto content = begin + std::string("<pre id=\"dlbench-probe\">").size();
  const auto end = dom.out.find("</pre>", content);
  result = nlohmann::json::parse(Unescape(dom.out.substr(content, end - content)));
}

// Writes the report of WriteReportDb's second run (against the first) to dir/report.html and
// probes it (ProbeHtml).
void ProbeReport(const std::string& chromium, const TempDir& dir, double first_step_ms,
                 nlohmann::json& result, std::string& dom_err) {
  const std::string db = dir / "r.db";
  const ReportDb ids = WriteReportDb(db, first_step_ms);
  auto r = Dlbench({"report", std::to_string(ids.run), "--baseline", std::to_string(ids.baseline_run), "-o",
                    dir / "report.html"},
                   dir, db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ProbeHtml(chromium, dir, result, dom_err);
}

TEST(ReportBrowser, LoadsWithoutErrorsDrawsEveryChartAndEscapesHostileNames) {
  const std::string chromium = FindInPath("chromium");
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium); browser test skipped";
  TempDir dir("report_browser");
  nlohmann::json result;
  std::string dom_err;
  ASSERT_NO_FATAL_FAILURE(ProbeReport(chromium, dir, /*first_step_ms=*/0, result, dom_err));

  EXPECT_TRUE(result["errors"].empty()) << result["errors"].dump(2);
  EXPECT_EQ(result["alerts"], 0) << "a hostile name ran as script";
  EXPECT_EQ(result["hostile_cells"], 6) << "the hostile model name should show as text in its 6 cells";
  EXPECT_EQ(dom_err.find("Uncaught"), std::string::npos) << dom_err;
  // 2 models x (train + infer) throughput, 2 latency, 12 step-time, 12 cells x 3 monitor charts.
  ASSERT_EQ(result["charts"].size(), 4u + 2u + 12u + 36u);
  for (const auto& c : result["charts"]) {
    EXPECT_TRUE(c["has_chart"].get<bool>()) << c.dump();
    EXPECT_GT(c["width"].get<int>(), 100) << c.dump();
    // Axes alone paint a few thousand pixels; require more than a blank canvas ever has.
    EXPECT_GT(c["painted"].get<int>(), 500) << c.dump();
  }

  const std::string artifacts = std::string(DLBENCH_BIN_DIR) + "/../test-artifacts";
  std::filesystem::create_directories(artifacts);
  const std::string png = artifacts + "/report.png";
  std::filesystem::remove(png);
  auto shot_args = ChromiumArgs(chromium, dir);
  shot_args.push_back("--window-size=1440,2400");
  shot_args.push_back("--screenshot=" + png);
  shot_args.push_back("file://" + (dir / "report.html"));
  auto shot = RunCommand(shot_args, dir);
  ASSERT_EQ(shot.exit_code, 0) << shot.err;
  ASSERT_TRUE(std::filesystem::exists(png));
  EXPECT_GT(std::filesystem::file_size(png), 20'000u);  // a blank 1440x2400 PNG is a few KB
}

// Issue 18's report items, read back from the drawn page: charts are titled by the cells' labels
// (what `dlbench show` prints), not by parameter keys; a 1 s autotuning step in every cell's warm-up
// does not set the step-time axis (it is scaled to the measured steps, the longer warm-up steps
// marked at its top edge); every throughput axis starts at zero; the cells table shows all its
// rows rather than a scroll box of a few.
TEST(ReportBrowser, ChartsAreTitledByLabelsScaledToTheMeasuredStepsAndThroughputStartsAtZero) {
  const std::string chromium = FindInPath("chromium");
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium); browser test skipped";
  TempDir dir("report_browser_items");
  nlohmann::json result;
  std::string dom_err;
  ASSERT_NO_FATAL_FAILURE(ProbeReport(chromium, dir, /*first_step_ms=*/1000, result, dom_err));
  EXPECT_TRUE(result["errors"].empty()) << result["errors"].dump(2);

  std::map<std::string, std::vector<std::string>> titles;
  int step_charts = 0;
  for (const auto& c : result["charts"]) {
    const std::string title = c["title"];
    const std::string section = c["section"];
    titles[section].push_back(title);
    for (const char* key : {"model=", "device=", "precision=", "strategy=", "scenario="})
      EXPECT_EQ(title.find(key), std::string::npos) << section << " chart titled by its key: " << title;
    if (section == "throughput") {
      EXPECT_EQ(c["y_min"], 0) << title << ": a throughput axis starts at zero";
    }
    if (section != "steps") continue;
    ++step_charts;
    EXPECT_EQ(c["y_min"], 0) << title;
    double measured_max = 0;
    const nlohmann::json* clipped = nullptr;
    for (const auto& ds : c["datasets"]) {
      if (ds["label"] == "measured") measured_max = ds["max_y"].get<double>();
      if (ds["label"].get<std::string>().find("above the axis") != std::string::npos) clipped = &ds;
    }
    ASSERT_GT(measured_max, 0) << c.dump();
    // ReportCell: measured steps within 4% of the mean, warm-up steps 2.5x, the first 1000 ms.
    const double y_max = c["y_max"].get<double>();
    EXPECT_GE(y_max, measured_max) << title;
    EXPECT_LE(y_max, 1.1 * measured_max + 1e-9) << title << ": the axis is not scaled to the measured steps";
    ASSERT_NE(clipped, nullptr) << title << ": the clipped warm-up steps are not marked\n" << c.dump();
    EXPECT_EQ((*clipped)["points"], 3) << c.dump();
    EXPECT_DOUBLE_EQ((*clipped)["max_y"].get<double>(), y_max) << "marked on the top edge";
    EXPECT_DOUBLE_EQ((*clipped)["max_v"].get<double>(), 1000.0) << "each mark keeps its own time";
  }
  EXPECT_EQ(step_charts, 12);
  // Throughput per configuration: the labels' shared words (ReportCell's "MODEL SCENARIO bs=N").
  std::vector<std::string> throughput = titles["throughput"];
  std::sort(throughput.begin(), throughput.end());
  EXPECT_EQ(throughput, (std::vector<std::string>{std::string(kHostileModel) + " infer",
                                                  std::string(kHostileModel) + " train", "resnet50 infer",
                                                  "resnet50 train"}));
  for (const auto& t : titles["steps"]) EXPECT_EQ(t.rfind("cell ", 0), 0u) << t;
  EXPECT_NE(std::find(titles["steps"].begin(), titles["steps"].end(), "cell 7: resnet50 train bs=16"),
            titles["steps"].end());

  const auto& table = result["cells_table"];
  EXPECT_EQ(table["rows"], 12);
  EXPECT_LE(table["holder_scroll_height"].get<double>(), table["holder_client_height"].get<double>() + 1)
      << "the cells table scrolls inside a box: " << table.dump();
  EXPECT_GE(table["holder_client_height"].get<double>(), table["table_height"].get<double>() - 1)
      << table.dump();
}

// Load cells of the null runner (virtual time: a query of n samples takes 2 ms + 10 us x n): the
// report draws each one's latency distribution and one stacked bar chart of their latency
// decomposition (compute and the derived queue), without a script error.
TEST(ReportBrowser, LoadCellsDrawTheirLatencyAndItsDecomposition) {
  const std::string chromium = FindInPath("chromium");
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium); browser test skipped";
  TempDir dir("report_browser_load");
  const std::string matrix = dir / "load.yaml", db = dir / "r.db";
  WriteText(matrix, R"(runner: null
measure: {min_time_s: 0.2, max_time_s: 10}
matrix:
  scenario: infer
  service_us: 2000
  service_per_sample_us: 10
  load: single_stream
include:
  - {scenario: infer, service_us: 2000, service_per_sample_us: 10, load: server, target_qps: 200,
     latency_bound_ms: 10}
)");
  auto run = Dlbench({"run", matrix}, dir, db);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto r = Dlbench({"report", "latest", "-o", dir / "report.html"}, dir, db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json result;
  std::string dom_err;
  ASSERT_NO_FATAL_FAILURE(ProbeHtml(chromium, dir, result, dom_err));
  EXPECT_TRUE(result["errors"].empty()) << result["errors"].dump(2);
  const nlohmann::json* bars = nullptr;
  int latency_charts = 0;
  for (const auto& c : result["charts"]) {
    EXPECT_TRUE(c["has_chart"].get<bool>()) << c.dump();
    EXPECT_GT(c["painted"].get<int>(), 500) << c.dump();
    if (c["section"] != "latency") continue;
    ++latency_charts;
    if (c["title"] == "Latency decomposition (2 load cells)") bars = &c;
  }
  EXPECT_EQ(latency_charts, 3) << "two latency distributions and the decomposition";
  ASSERT_NE(bars, nullptr) << result["charts"].dump(2);
  std::vector<std::string> parts;
  for (const auto& ds : (*bars)["datasets"]) {
    parts.push_back(ds["label"]);
    EXPECT_EQ(ds["points"], 2) << "one value per cell: " << ds.dump();
  }
  EXPECT_EQ(parts, (std::vector<std::string>{"queue (latency less the timed parts)", "compute"}));
}

}  // namespace
}  // namespace dlbench::e2e

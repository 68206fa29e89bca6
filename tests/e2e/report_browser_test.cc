// The HTML report in a real headless Chromium (Debian's `chromium`): the page loads without a
// console error, every chart draws pixels, hostile names stay text, and a screenshot is saved
// to <build>/test-artifacts/report.png for a human to look at.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

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
    result.charts.push({ id: c.id, width: c.width, height: c.height, painted: painted,
                         has_chart: !!(window.Chart && window.Chart.getChart(c)) });
  });
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

TEST(ReportBrowser, LoadsWithoutErrorsDrawsEveryChartAndEscapesHostileNames) {
  const std::string chromium = FindInPath("chromium");
  if (chromium.empty())
    GTEST_SKIP() << "chromium is not installed (apt-get install chromium); browser test skipped";
  TempDir dir("report_browser");
  const std::string db = dir / "r.db";
  const ReportDb ids = WriteReportDb(db);
  auto r = Dlbench({"report", std::to_string(ids.run), "--baseline", std::to_string(ids.baseline_run), "-o",
                    dir / "report.html"},
                   dir, db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
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
  const auto begin = dom.out.find("<pre id=\"dlbench-probe\">");
  ASSERT_NE(begin, std::string::npos) << "the probe did not report; the page did not finish loading\n"
                                      << dom.err;
  const auto content = begin + std::string("<pre id=\"dlbench-probe\">").size();
  const auto end = dom.out.find("</pre>", content);
  const auto result = nlohmann::json::parse(Unescape(dom.out.substr(content, end - content)));

  EXPECT_TRUE(result["errors"].empty()) << result["errors"].dump(2);
  EXPECT_EQ(result["alerts"], 0) << "a hostile name ran as script";
  EXPECT_EQ(result["hostile_cells"], 6) << "the hostile model name should show as text in its 6 cells";
  EXPECT_EQ(dom.err.find("Uncaught"), std::string::npos) << dom.err;
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

}  // namespace
}  // namespace dlbench::e2e

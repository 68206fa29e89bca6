// Files embedded into the dlbench binary at build time (src/report/CMakeLists.txt generates their
// definitions), so an HTML report needs no network and no file beside it.
#pragma once

#include <string_view>

namespace dlbench::report::assets {

extern const std::string_view kChartJs;         // Chart.js 3.x UMD build (Debian libjs-chart.js)
extern const std::string_view kChartJsLicense;  // its license text, copied into each report
extern const std::string_view kReportJs;        // assets/report.js: draws the charts from the page's data
extern const std::string_view kReportCss;       // assets/report.css

}  // namespace dlbench::report::assets

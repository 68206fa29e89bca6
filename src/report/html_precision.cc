// The HTML report's precisions section (precision_view.h's figures, as `dlbench show` prints
// them): the trade-off per model, CPU-GPU consistency and converge cells' accuracy per precision.
#include <optional>
#include <string>

#include "record/metrics.h"
#include "report/chart_json.h"
#include "report/escape.h"
#include "report/html_sections.h"
#include "report/precision_view.h"

namespace dlbench::report::internal {
namespace {

using chart::Metric;

// CPU-GPU consistency (precision_view.h's CpuGpuConsistency), the figures `dlbench show` prints:
// each CUDA cell's evaluation outputs against the CPU cell with the same parameters, with the CPU
// cell named, and in the notes why there are no figures, SSD's boxes and a tolerance's warning.
// Empty when the run has no CUDA cell with an evaluation.
std::string ConsistencySection(const ReportInput& input) {
  const std::vector<ConsistencyRow> rows = CpuGpuConsistency(input.cells);
  if (rows.empty()) return "";
  std::string out =
      "<h3>CPU-GPU consistency</h3>\n<p>Each CUDA cell's outputs on the fixed evaluation set against the "
      "CPU cell's with the same parameters (precision included; threads aside).</p>\n"
      "<div class=\"wide\"><table class=\"sortable\" id=\"consistency-table\"><thead><tr><th>cell</th>"
      "<th>precision</th><th>CPU cell</th><th>top-1 agreement</th><th>rows</th><th>max |diff|</th>"
      "<th>mean |diff|</th><th>notes</th></tr></thead><tbody>\n";
  for (const ConsistencyRow& r : rows) {
    const OutputAgreement& a = r.agreement;
    std::string notes = a.has_figures() ? "" : a.why_none;
    for (const std::string& n : AgreementNotes(a)) notes += (notes.empty() ? "" : "; ") + n;
    const auto fig = [&](double v) { return a.has_figures() ? std::optional<double>(v) : std::nullopt; };
    const std::string cpu = a.reference != nullptr ? a.reference->label : "";
    out += "<tr>" + Td(r.cell->label, r.cell->label) + Td(r.precision, r.precision) + Td(cpu, cpu) +
           NumTd(fig(a.top1_agreement)) + NumTd(fig(static_cast<double>(a.rows))) +
           NumTd(fig(a.max_abs_diff)) + NumTd(fig(a.mean_abs_diff)) + Td(notes, notes) + "</tr>\n";
  }
  return out + "</tbody></table></div>\n";
}

}  // namespace

std::string PrecisionSection(const ReportInput& input) {
  std::string out;
  for (const PrecisionGroup& g : PrecisionTradeOff(input.cells)) {
    out += "<h3>" + EscapeHtml(g.label) + "</h3>\n";
    out +=
        "<div class=\"wide\"><table class=\"sortable\"><thead><tr><th>precision</th><th>weights "
        "(bytes)</th><th>step P50 (ms)</th><th>step P99 (ms)</th><th>samples/s</th><th>energy/sample "
        "(J)</th><th>energy source</th><th>peak memory (bytes)</th><th>top-1 agreement</th><th>max "
        "|diff|</th><th>mean |diff|</th><th>marks</th></tr></thead><tbody>\n";
    for (const PrecisionRow& r : g.rows) {
      const OutputAgreement& a = r.agreement;
      std::string marks;
      if (r.fastest) marks = "fastest";
      if (r.most_accurate) marks += marks.empty() ? "most accurate" : ", most accurate";
      if (!a.has_figures() && r.precision != kReferencePrecision)
        marks += (marks.empty() ? "" : "; ") + a.why_none;
      for (const std::string& n : AgreementNotes(a)) marks += (marks.empty() ? "" : "; ") + n;
      const auto fig = [&](double v) { return a.has_figures() ? std::optional<double>(v) : std::nullopt; };
      out += "<tr>" + Td(r.precision, r.precision) + NumTd(r.weight_bytes) + NumTd(r.step_p50_ns, 1e-6) +
             NumTd(r.step_p99_ns, 1e-6) + NumTd(r.samples_per_s) + NumTd(r.energy_per_sample_j) +
             Td(r.energy_source, r.energy_source) + NumTd(r.peak_memory_bytes) +
             NumTd(fig(a.top1_agreement)) + NumTd(fig(a.max_abs_diff)) + NumTd(fig(a.mean_abs_diff)) +
             Td(marks, marks) + "</tr>\n";
    }
    out += "</tbody></table></div>\n";
  }
  out += ConsistencySection(input);
  // Converge cells with eval_precisions.
  static constexpr const char* kPrecisions[] = {"fp32", "tf32", "bf16", "fp16", "int8"};
  std::string rows;
  for (const auto& c : input.cells) {
    if (!Metric(c, record::metric::kEvalAccuracyFp32)) continue;
    rows += "<tr>" + Td(std::to_string(c.index), std::to_string(c.index)) + Td(c.label, c.label);
    for (const char* p : kPrecisions) {
      rows += NumTd(Metric(c, *record::EvalAccuracyMetric(p)));
      if (auto delta = record::EvalAccuracyDeltaMetric(p)) rows += NumTd(Metric(c, *delta));
    }
    rows += "</tr>\n";
  }
  if (!rows.empty()) {
    out +=
        "<h3>Accuracy of the trained model per precision</h3>\n<p>The held-out set after training "
        "(scenario converge, eval_precisions); each delta is that precision's accuracy minus fp32's.</p>\n"
        "<div class=\"wide\"><table class=\"sortable\"><thead><tr><th>#</th><th>cell</th><th>fp32</th>"
        "<th>tf32</th><th>&Delta; tf32</th><th>bf16</th><th>&Delta; bf16</th><th>fp16</th><th>&Delta; "
        "fp16</th><th>int8</th><th>&Delta; int8</th></tr></thead><tbody>\n" +
        rows + "</tbody></table></div>\n";
  }
  if (out.empty()) {
    return "<p class=\"empty\">No cells differ only in precision, no CUDA cell has outputs to set "
           "against a CPU cell's, and no converge cell evaluated its trained model at several "
           "precisions.</p>\n";
  }
  return out;
}

}  // namespace dlbench::report::internal

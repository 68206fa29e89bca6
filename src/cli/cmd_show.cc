// dlbench show RUN: a run's environment, warnings and results table, and why cells failed.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/console.h"
#include "cli/ddp_console.h"
#include "cli/load_console.h"
#include "cli/memory_console.h"
#include "common/clock.h"
#include "common/human_text.h"
#include "common/text.h"
#include "monitor/fingerprint.h"
#include "plan/selection.h"
#include "record/metrics.h"
#include "report/precision_view.h"
#include "stats/descriptive.h"
#include "stats/olympic.h"
#include "store/sweep.h"

namespace dlbench::cli {

namespace {

// The checks that did not run on a cell, each with why (too few steps or samples, virtual time),
// from where the analyses record them: extras.stability.skipped and extras.monitor's entries.
std::vector<std::string> SkippedChecks(const record::CellRecord& c) {
  std::vector<std::string> out;
  const nlohmann::json& x = c.extras;
  if (!x.is_object()) return out;
  if (auto st = x.find("stability"); st != x.end() && st->is_object()) {
    if (auto why = st->find("skipped"); why != st->end() && why->is_string())
      out.push_back("the drift/shift check: " + why->get<std::string>());
  }
  if (auto mon = x.find("monitor"); mon != x.end() && mon->is_object()) {
    for (const auto& [name, entry] : mon->items()) {
      if (name == "analysis" && entry.is_string()) {
        const std::string text = entry.get<std::string>();
        const std::string prefix = "skipped: ";
        out.push_back("the monitor's checks (energy, throttling, leaks): " +
                      (text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text));
      } else if (entry.is_object() && entry.contains("skipped") && entry["skipped"].is_string()) {
        out.push_back("the leak check on " + name + ": " + entry["skipped"].get<std::string>());
      }
    }
  }
  return out;
}

// A cell measured more than once (measure.retry_disturbed, extras.attempts): which attempt is
// stored, then every attempt's verdict, rate and first reason, so no attempt is hidden.
std::vector<std::string> AttemptLines(const record::CellRecord& c) {
  std::vector<std::string> out;
  const auto a = c.extras.is_object() ? c.extras.find(record::kAttemptsExtrasKey) : c.extras.end();
  if (a == c.extras.end() || !a->is_object() || !a->contains("list") || !(*a)["list"].is_array()) return out;
  const nlohmann::json& list = (*a)["list"];
  const int stored = a->value("stored", 0);
  const int allowed = a->value("allowed", 0);
  std::string head = fmt::format("{} at attempt {} of {}", record::Name(c.verdict), stored, allowed);
  if (a->value("every_attempt_disturbed", false)) head += ", disturbed at every attempt";
  out.push_back("measured again (measure.retry_disturbed): " + head);
  for (const auto& t : list) {
    if (!t.is_object()) continue;
    const std::string rate_key(record::metric::kSamplesPerS);
    const std::optional<double> rate = t.contains(rate_key) && t[rate_key].is_number()
                                           ? std::optional<double>(t[rate_key].get<double>())
                                           : std::nullopt;
    std::string line = fmt::format("attempt {}: {} {}, {}", t.value("attempt", 0), t.value("outcome", ""),
                                   t.value("verdict", ""), FormatRate(rate));
    // The reason that names the attempt's verdict (a cell may have several: docs/verdicts.md).
    const std::optional<record::Verdict> verdict = record::ParseVerdict(t.value("verdict", ""));
    if (t.contains("verdict_reasons") && t["verdict_reasons"].is_array()) {
      for (const auto& r : t["verdict_reasons"]) {
        if (!r.is_string() || !verdict || record::VerdictOfReason(r.get<std::string>()) != *verdict) continue;
        line += "; " + r.get<std::string>();
        break;
      }
    }
    if (t.value("stored", false)) line += " (stored)";
    out.push_back(line);
  }
  return out;
}

std::string Field(const nlohmann::json& j, const std::string& pointer) {
  try {
    const auto& v = j.at(nlohmann::json::json_pointer(pointer));
    return v.is_string() ? v.get<std::string>() : v.dump();
  } catch (const nlohmann::json::exception&) {
    return "";
  }
}

// Cells measured more than once (`repetitions`): the spread of their throughput across the
// repetitions, as Google Benchmark's _mean/_stddev/_cv rows. Only cells that ended ok count.
void PrintRepetitions(const std::vector<record::CellRecord>& cells) {
  std::map<std::string, std::vector<const record::CellRecord*>> by_key;
  std::vector<std::string> order;
  for (const auto& c : cells) {
    if (c.outcome != record::Outcome::kOk || !MetricValue(c, record::metric::kSamplesPerS)) continue;
    auto& group = by_key[c.key];
    if (group.empty()) order.push_back(c.key);
    group.push_back(&c);
  }
  Table table({{"cell", false},
               {"repetitions", true},
               {"samples/s mean", true},
               {"stddev", true},
               {"CV", true},
               {"min", true},
               {"max", true}});
  for (const std::string& key : order) {
    const auto& group = by_key[key];
    if (group.size() < 2) continue;
    std::vector<double> rates;
    for (const record::CellRecord* c : group) rates.push_back(*MetricValue(*c, record::metric::kSamplesPerS));
    const stats::Moments m = stats::ComputeMoments(rates);
    const auto [lo, hi] = std::minmax_element(rates.begin(), rates.end());
    table.AddRow({group.front()->label, std::to_string(group.size()), FormatRate(m.mean),
                  FormatRate(m.stddev), m.mean > 0 ? fmt::format("{:.2f}%", 100 * m.stddev / m.mean) : "-",
                  FormatRate(*lo), FormatRate(*hi)});
  }
  if (table.empty()) return;
  std::printf(
      "\nRepetitions (ok cells of one key; 'dlbench noise' sets the spread against each cell's "
      "interval):\n%s",
      table.Render().c_str());
}

// Converge cells (docs/convergence.md) of one key: MLPerf's score of their time to target, the
// olympic mean (stats/olympic.h), with its spread. Every converge cell counts, reached or not; a
// cell that did not end ok counts as not converged.
void PrintConvergence(const std::vector<record::CellRecord>& cells) {
  std::map<std::string, std::vector<const record::CellRecord*>> by_key;
  std::vector<std::string> order;
  for (const auto& c : cells) {
    if (c.params.value("scenario", std::string()) != "converge") continue;
    auto& group = by_key[c.key];
    if (group.empty()) order.push_back(c.key);
    group.push_back(&c);
  }
  Table table({{"cell", false},
               {"runs", true},
               {"reached", true},
               {"olympic mean s", true},
               {"min s", true},
               {"max s", true},
               {"stddev s", true},
               {"steps (mean)", true},
               {"best acc (mean)", true}});
  std::vector<std::string> notes;
  auto seconds = [](double v) { return std::isfinite(v) ? fmt::format("{:.2f}", v) : std::string("-"); };
  for (const std::string& key : order) {
    const auto& group = by_key[key];
    std::vector<std::optional<double>> times;
    std::vector<double> steps, best;
    for (const record::CellRecord* c : group) {
      const bool ok =
          c->outcome == record::Outcome::kOk && MetricValue(*c, record::metric::kTargetReached) == 1.0;
      times.push_back(ok ? MetricValue(*c, record::metric::kTimeToTargetS) : std::nullopt);
      if (ok) steps.push_back(MetricValue(*c, record::metric::kStepsToTarget).value_or(NAN));
      if (auto b = MetricValue(*c, record::metric::kBestEvalAccuracy)) best.push_back(*b);
    }
    const stats::OlympicScore score = stats::OlympicMean(times);
    table.AddRow({group.front()->label, std::to_string(score.runs), std::to_string(score.converged),
                  score.mean ? seconds(*score.mean) : "-", seconds(score.min), seconds(score.max),
                  seconds(score.stddev),
                  steps.empty() ? "-" : fmt::format("{:.0f}", stats::ComputeMoments(steps).mean),
                  best.empty() ? "-" : fmt::format("{:.4f}", stats::ComputeMoments(best).mean)});
    if (!score.mean) notes.push_back(group.front()->label + ": no olympic mean: " + score.no_score);
  }
  if (table.empty()) return;
  std::printf(
      "\nConvergence (time to target over the runs of one cell; MLPerf's olympic mean drops the "
      "fastest and the slowest):\n%s",
      table.Render().c_str());
  for (const auto& n : notes) std::printf("  %s\n", TerminalSafe(n).c_str());
}

// The input-bound verdicts (orchestrator/input_analysis.h): each cell reading host data against
// its control, with the figures behind the conclusion and what would help.
void PrintInputVerdicts(const std::vector<record::CellRecord>& cells) {
  bool header = false;
  for (const auto& c : cells) {
    auto it = c.extras.find(record::kInputVerdictExtrasKey);
    if (it == c.extras.end() || !it->is_object()) continue;
    if (!header) {
      std::printf("\nInput pipeline (each cell against its control, the same cell with data: device):\n");
      header = true;
    }
    const nlohmann::json& v = *it;
    if (!v.value("bound", nlohmann::json()).is_string()) {
      std::printf("  #%d %s: no verdict: %s\n", c.index, TerminalSafe(c.label).c_str(),
                  TerminalSafe(v.value("why_none", std::string("?"))).c_str());
      continue;
    }
    std::printf("  #%d %s: %s (control: %s)\n", c.index, TerminalSafe(c.label).c_str(),
                TerminalSafe(v.value("bound", std::string())).c_str(),
                TerminalSafe(v.value("control_label", std::string())).c_str());
    for (const char* list : {"reasons", "advice"}) {
      if (!v.contains(list) || !v[list].is_array()) continue;
      for (const auto& line : v[list]) {
        if (line.is_string()) {
          std::printf("      %s: %s\n", list[0] == 'r' ? "because" : "try",
                      TerminalSafe(line.get<std::string>()).c_str());
        }
      }
    }
  }
}

// Converge cells with eval_precisions: the trained model's held-out accuracy at each precision, and
// its delta from fp32 (docs/precisions.md, "Accuracy of a trained model per precision").
void PrintAccuracyPerPrecision(const std::vector<record::CellRecord>& cells) {
  static constexpr const char* kPrecisions[] = {"fp32", "tf32", "bf16", "fp16", "int8"};
  std::vector<std::string> present;
  for (const char* p : kPrecisions) {
    const std::string_view metric = *record::EvalAccuracyMetric(p);
    if (std::any_of(cells.begin(), cells.end(),
                    [&](const auto& c) { return MetricValue(c, metric).has_value(); }))
      present.emplace_back(p);
  }
  if (present.empty()) return;
  std::vector<Table::Column> columns = {{"#", true}, {"cell", false}};
  for (const std::string& p : present) columns.push_back({p, true});
  Table table(columns);
  for (const auto& c : cells) {
    if (!MetricValue(c, record::metric::kEvalAccuracyFp32)) continue;
    std::vector<std::string> row = {std::to_string(c.index), TerminalSafe(c.label)};
    for (const std::string& p : present) {
      const auto accuracy = MetricValue(c, *record::EvalAccuracyMetric(p));
      const auto delta_name = record::EvalAccuracyDeltaMetric(p);
      const auto delta = delta_name ? MetricValue(c, *delta_name) : std::nullopt;
      row.push_back(!accuracy ? "-"
                    : delta   ? fmt::format("{:.4f} ({:+.4f})", *accuracy, *delta)
                              : fmt::format("{:.4f}", *accuracy));
    }
    table.AddRow(row);
  }
  std::printf(
      "\nAccuracy of the trained model per precision (the held-out set after training; in brackets "
      "the difference from fp32):\n%s",
      table.Render().c_str());
}

// CPU-GPU consistency (report/precision_view.h): each CUDA cell's evaluation outputs against the
// CPU cell with the same parameters.
void PrintCpuGpuConsistency(const std::vector<record::CellRecord>& cells) {
  const std::vector<report::ConsistencyRow> rows = report::CpuGpuConsistency(cells);
  if (rows.empty()) return;
  Table table({{"cell", false},
               {"precision", false},
               {"top-1 agree", true},
               {"max |diff|", true},
               {"mean |diff|", true}});
  std::vector<std::string> notes;
  for (const report::ConsistencyRow& r : rows) {
    const report::OutputAgreement& a = r.agreement;
    const bool fig = a.has_figures();
    table.AddRow({TerminalSafe(r.cell->label), TerminalSafe(r.precision),
                  fig ? fmt::format("{:.1f}% of {}", 100.0 * a.top1_agreement, a.rows) : "-",
                  fig ? fmt::format("{:.3g}", a.max_abs_diff) : "-",
                  fig ? fmt::format("{:.3g}", a.mean_abs_diff) : "-"});
    if (!fig) notes.push_back(r.cell->label + ": " + a.why_none);
    for (std::string& n : report::AgreementNotes(a)) notes.push_back(r.cell->label + ": " + n);
  }
  std::printf(
      "\nCPU-GPU consistency (each CUDA cell's outputs on the fixed evaluation set against the CPU "
      "cell's):\n%s",
      table.Render().c_str());
  for (const auto& n : notes) std::printf("  %s\n", TerminalSafe(n).c_str());
}

// The precision trade-off (report/precision_view.h): cells that differ only in precision, one row
// each, with the outputs compared with the fp32 cell's on the fixed evaluation set.
void PrintPrecisionTradeOff(const std::vector<record::CellRecord>& cells) {
  for (const report::PrecisionGroup& g : report::PrecisionTradeOff(cells)) {
    Table table({{"precision", false},
                 {"weights", true},
                 {"step p50", true},
                 {"step p99", true},
                 {"samples/s", true},
                 {"energy/sample", true},
                 {"peak mem", true},
                 {"top-1 agree", true},
                 {"max |diff|", true},
                 {"mean |diff|", true},
                 {"", false}});
    std::vector<std::string> notes;
    for (const report::PrecisionRow& r : g.rows) {
      const report::OutputAgreement& a = r.agreement;
      std::string marks;
      if (r.fastest) marks = "fastest";
      if (r.most_accurate) marks += marks.empty() ? "most accurate" : ", most accurate";
      const bool fig = a.has_figures();
      std::string energy = "-";
      if (r.energy_per_sample_j) {
        energy = FormatSignificant(*r.energy_per_sample_j, 4) + " J";
        if (r.energy_source == "cpu_package") energy += " (CPU)";
      }
      table.AddRow({TerminalSafe(r.precision), FormatBytes(r.weight_bytes), FormatDurationNs(r.step_p50_ns),
                    FormatDurationNs(r.step_p99_ns), FormatRate(r.samples_per_s), energy,
                    FormatBytes(r.peak_memory_bytes),
                    fig ? fmt::format("{:.1f}% of {}", 100.0 * a.top1_agreement, a.rows) : "-",
                    fig ? fmt::format("{:.3g}", a.max_abs_diff) : "-",
                    fig ? fmt::format("{:.3g}", a.mean_abs_diff) : "-", marks});
      if (!fig && r.precision != report::kReferencePrecision)
        notes.push_back(r.precision + ": " + a.why_none);
      for (std::string& n : report::AgreementNotes(a)) notes.push_back(r.precision + ": " + n);
    }
    std::printf(
        "\nPrecisions of %s (outputs on the fixed evaluation set against the fp32 cell's; step = "
        "one batch; energy: the GPU's, or the CPU package's marked (CPU); peak mem: the device "
        "allocator's, else the process's RSS):\n%s",
        TerminalSafe(g.label).c_str(), table.Render().c_str());
    for (const auto& n : notes) std::printf("  %s\n", TerminalSafe(n).c_str());
  }
}

// Every string printed here came from the store, so from matrix files and runners: it goes
// through TerminalSafe (an escape sequence in a name must not reach the terminal).
int Show(const std::string& ref, bool verbose, CommandContext& ctx) {
  auto store = OpenStoreForReadingOrReport(ctx);
  if (!store) return ctx.exit_code;
  auto loaded = store::LoadRun(*store, ref, store::CellQuery{});
  if (!loaded.ok()) return ReportError(loaded.error());
  const record::RunRecord* run = &loaded->run;
  const std::vector<record::CellRecord>* cells = &loaded->cells;

  std::string tags;
  for (const auto& t : run->tags) tags += (tags.empty() ? " [" : ", ") + t;
  if (!tags.empty()) tags += "]";
  if (loaded->sweep) {
    const store::Sweep& sweep = *loaded->sweep;
    std::string runs;
    for (const auto& [k, shard] : sweep.shards)
      runs += fmt::format("{}{}", runs.empty() ? "" : ", ", shard.id);
    std::printf("sweep %s%s: %s (%s), %zu of %d shards stored (runs %s)\n", TerminalSafe(sweep.name).c_str(),
                TerminalSafe(tags).c_str(), TerminalSafe(run->name).c_str(),
                TerminalSafe(run->matrix_path).c_str(), sweep.shards.size(), sweep.shard_count, runs.c_str());
  } else {
    std::printf("run %lld%s: %s (%s)\n", static_cast<long long>(run->id), TerminalSafe(tags).c_str(),
                TerminalSafe(run->name).c_str(), TerminalSafe(run->matrix_path).c_str());
    if (!run->sweep.empty())
      std::printf("  shard %s of sweep %s\n", run->selection.shard.c_str(), TerminalSafe(run->sweep).c_str());
  }
  for (const auto& n : loaded->notes) std::printf("  note: %s\n", TerminalSafe(n).c_str());
  // A sweep with a shard missing is not interrupted: part of it never ran.
  const bool incomplete = loaded->sweep && !loaded->sweep->Missing().empty();
  // A sweep's status is its shards' together: one lock does not tell it.
  const bool abandoned = !loaded->sweep && RunAbandoned(*store, run->id, run->status);
  const std::string status =
      incomplete ? "incomplete" : (abandoned ? "abandoned" : std::string(record::Name(run->status)));
  std::printf("  started %s, status %s, %zu of %s stored\n", FormatUtc(run->started_wall_ns).c_str(),
              status.c_str(), cells->size(), CountNoun(run->total_cells, "cell").c_str());
  if (abandoned) {
    std::printf(
        "  (stored as running, but no dlbench runs it: the one that did was killed or its host went "
        "down; 'dlbench run %s --resume %lld' runs the rest)\n",
        TerminalSafe(run->matrix_path).c_str(), static_cast<long long>(run->id));
  }
  if (!run->selection.empty())
    std::printf("  selection: %s\n", TerminalSafe(plan::SelectionArgs(run->selection)).c_str());
  std::printf("  dlbench %s (%s)\n", TerminalSafe(run->tool_version).c_str(),
              TerminalSafe(run->git_commit).c_str());
  const auto& env = run->environment;
  std::printf("  environment %s: %s", TerminalSafe(run->environment_hash.substr(0, 12)).c_str(),
              TerminalSafe(Field(env, "/host/cpu_model")).c_str());
  const std::string gpu = Field(env, "/runner/devices/0/name");
  if (!gpu.empty()) std::printf(", %s", TerminalSafe(gpu).c_str());
  std::printf("\n");
  for (const auto& w : monitor::FingerprintWarnings(env))
    std::printf("  warning: %s\n", TerminalSafe(w).c_str());
  if (verbose)
    std::printf("%s\n",
                TerminalSafe(env.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)).c_str());
  std::printf("\n");

  Table table(ResultColumns());
  for (const auto& c : *cells) table.AddRow(ResultRow(c));
  std::printf("%s", table.Render().c_str());
  std::printf("%s", RenderLoadCells(*cells).c_str());
  std::printf("%s", RenderLatencyDecomposition(*cells).c_str());
  std::printf("%s", RenderPeakSearches(*cells).c_str());
  std::printf("%s", RenderBoundarySearches(*cells).c_str());
  std::printf("%s", RenderMemoryBreakdowns(*cells).c_str());
  PrintRepetitions(*cells);
  PrintConvergence(*cells);
  PrintAccuracyPerPrecision(*cells);
  PrintInputVerdicts(*cells);
  std::printf("%s", RenderScaling(*cells).c_str());
  std::printf("%s", RenderHosts(*cells).c_str());
  PrintPrecisionTradeOff(*cells);
  PrintCpuGpuConsistency(*cells);

  bool header = false;
  for (const auto& c : *cells) {
    const bool failed = c.outcome != record::Outcome::kOk;
    const std::vector<std::string> skipped = failed ? std::vector<std::string>{} : SkippedChecks(c);
    const std::vector<std::string> attempts = AttemptLines(c);
    if (!failed && c.verdict_reasons.empty() && skipped.empty() && attempts.empty() &&
        !(verbose && c.extras.contains("warnings")))
      continue;
    if (!header) {
      std::printf("\nNotes:\n");
      header = true;
    }
    // A failure's message that already starts with its outcome ("unsupported: ...") is not given
    // the name twice.
    const std::string outcome(record::Name(c.outcome));
    if (failed && c.message.rfind(outcome + ":", 0) == 0) {
      std::printf("  #%d %s: %s\n", c.index, TerminalSafe(c.label).c_str(), TerminalSafe(c.message).c_str());
    } else {
      std::printf("  #%d %s: %s", c.index, TerminalSafe(c.label).c_str(), outcome.c_str());
      if (failed) std::printf(": %s", TerminalSafe(c.message).c_str());
      std::printf("\n");
    }
    // Each reason starts with its verdict's name (docs/verdicts.md).
    for (const auto& r : c.verdict_reasons)
      std::printf("      verdict %s\n",
                  TerminalSafe(r.is_string() ? r.get<std::string>() : r.dump()).c_str());
    if (c.extras.contains("warnings")) {
      for (const auto& w : c.extras["warnings"])
        std::printf("      warning: %s\n",
                    TerminalSafe(w.is_string() ? w.get<std::string>() : w.dump()).c_str());
    }
    for (const std::string& why : skipped) std::printf("      skipped: %s\n", TerminalSafe(why).c_str());
    for (const std::string& line : attempts) std::printf("      %s\n", TerminalSafe(line).c_str());
    if (failed) std::printf("      logs: %s\n", TerminalSafe(c.stderr_path).c_str());
  }
  if (verbose) {
    for (const auto& c : *cells) {
      std::printf("\n#%d %s  warm-up %s (%s), stopped: %s\n", c.index, TerminalSafe(c.label).c_str(),
                  c.warmup_steps() ? CountNoun(*c.warmup_steps(), "step").c_str() : "- steps",
                  TerminalSafe(c.warmup_rule).c_str(), TerminalSafe(c.stop_reason).c_str());
      for (const auto& m : c.metrics)
        std::printf("    %-40s %16.6g %s\n", TerminalSafe(m.name).c_str(), m.value,
                    TerminalSafe(m.unit).c_str());
    }
  }
  return kExitOk;
}

}  // namespace

void RegisterShow(CLI::App& app, CommandContext& ctx) {
  auto ref = std::make_shared<std::string>("latest");
  auto verbose = std::make_shared<bool>(false);
  CLI::App* cmd =
      app.add_subcommand("show", "Show a run: environment, warnings, results, and why cells failed");
  cmd->add_option("run", *ref, "Run id, tag, 'latest', or sweep:NAME (a sweep's shards as one run)")
      ->capture_default_str();
  cmd->add_flag("-v,--verbose", *verbose, "Also print the full environment and every metric of every cell");
  cmd->callback([ref, verbose, &ctx] { ctx.exit_code = Show(*ref, *verbose, ctx); });
}

}  // namespace dlbench::cli

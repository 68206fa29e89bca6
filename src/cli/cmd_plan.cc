// dlbench plan MATRIX.yaml: the cells in run order, their count and a time estimate; for cells
// with `load`, the queries their latency claim needs (docs/load.md "Early stopping"); with
// --runner-reuse, which cells would share a runner process and the start-up that saves.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/console.h"
#include "common/human_text.h"
#include "common/text.h"
#include "config/matrix.h"
#include "load/settings.h"
#include "orchestrator/boundary_cell.h"
#include "orchestrator/cell_runner.h"
#include "orchestrator/cgroup_v2.h"
#include "orchestrator/memory_cap.h"
#include "orchestrator/run.h"
#include "orchestrator/runner_pool.h"
#include "plan/ddp_references.h"
#include "plan/estimate.h"
#include "plan/plan.h"
#include "plan/selection.h"
#include "record/metrics.h"
#include "stats/early_stopping.h"
#include "store/open_store.h"

namespace dlbench::cli {

namespace {

struct PlanArgs {
  std::string matrix_path;
  std::vector<std::string> only;
  std::string shard;
  std::vector<std::string> set;
  bool json = false;
  bool runner_reuse = false;
};

// One line of plan's text for a capped cell (orchestrator::PlannedMemoryCap's answer).
std::string MemoryCapSentence(const nlohmann::json& cap) {
  const std::string mechanism = cap.value("mechanism", "");
  if (mechanism == orchestrator::kCapCgroupV2) {
    std::string out =
        fmt::format("cgroup v2 memory.max, each runner in a cgroup of its own under {} (from {})",
                    cap.value("cgroup_parent", ""), cap.value("cgroup_parent_from", ""));
    if (cap.contains("to_do")) out += "; before the first, " + cap.value("to_do", "");
    return out;
  }
  if (mechanism == orchestrator::kCapRlimitData) {
    return "RLIMIT_DATA on each runner; cgroup v2 " + cap.value("cgroup_v2", "");
  }
  return "applied by the runner (the CUDA caching allocator's per-process fraction; the CUDA context is "
         "outside "
         "it)";
}

// What the store holds of each cell key, when the database exists: durations and the newest
// stored median step time (docs/cli.md "plan"); into `startup_s`, the newest stored
// time_to_hello_s of the key that a process paid (above 0: a cell served by a kept process has 0).
std::map<std::string, plan::KeyHistory> KeyHistories(CommandContext& ctx,
                                                     const std::vector<plan::Cell>& cells,
                                                     std::map<std::string, double>& startup_s) {
  std::map<std::string, plan::KeyHistory> out;
  // Only a store that exists is asked, read-only; none (or one that cannot be opened) means no
  // history.
  store::OpenOptions options;
  options.mode = store::OpenMode::kRead;
  auto store = store::OpenStore(ctx.db_path, options);
  if (!store.ok()) return out;
  for (const auto& c : cells) {
    if (out.count(c.key)) continue;
    auto history = (*store)->CellHistory(c.key);
    if (!history.ok() || history->empty()) continue;
    plan::KeyHistory h;
    double sum = 0;
    for (const auto& [run, cell] : *history) {  // oldest first
      if (cell.finished_wall_ns > cell.started_wall_ns) {
        const double s = static_cast<double>(cell.finished_wall_ns - cell.started_wall_ns) * 1e-9;
        h.min_s = h.cells == 0 ? s : std::min(h.min_s, s);
        h.max_s = std::max(h.max_s, s);
        sum += s;
        ++h.cells;
      }
      if (auto median = record::MetricValue(cell, record::metric::kStepTimeMedianNs); median && *median > 0)
        h.step_s = *median * 1e-9;
      if (auto hello = record::MetricValue(cell, record::metric::kTimeToHelloS); hello && *hello > 0)
        startup_s[c.key] = *hello;
    }
    if (h.cells == 0) continue;
    h.mean_s = sum / h.cells;
    out[c.key] = h;
  }
  return out;
}

// The least number of queries a load cell measures: the early-stopping minimum of its percentile
// claim (h(0) with a latency bound, h(1) + 1 for an estimate) or its min_queries, whichever is
// larger. Absent for a cell without `load`, and for offline, which claims no latency percentile.
std::optional<std::int64_t> MinQueries(const plan::Cell& cell) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : cell.params) params[k] = v;
  if (!load::LoadRequested(params)) return std::nullopt;
  // plan::Expand checked the load rules, so the settings resolve.
  auto settings = load::ResolveLoadSettings(params, cell.seed);
  if (!settings.ok() || settings->scenario == load::Scenario::kOffline) return std::nullopt;
  stats::EarlyStoppingParams es;
  es.percentile = settings->latency_percentile;
  es.confidence = settings->confidence;
  return std::max(stats::MinQueriesForClaim(es, settings->latency_bound_ns.has_value()),
                  settings->min_queries.value_or(1));
}

// plan --runner-reuse's lines: the processes the cells would run in, and the start-up saved by the
// `sharing` cells that would not start one (`known` of them with a stored time_to_hello_s, summing
// to `saved_s`).
void PrintRunnerReuse(const std::vector<plan::Cell>& cells,
                      const std::vector<orchestrator::PlannedProcess>& processes, std::int64_t sharing,
                      std::int64_t known, double saved_s) {
  std::map<int, std::vector<int>> members;  // process -> the indices of its cells
  std::string alone;                        // the cells that never share, with why
  int started = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const orchestrator::PlannedProcess& p = processes[i];
    if (p.process >= 0) members[p.process].push_back(cells[i].index);
    if (p.process >= 0 && p.cell_of_process == 1) ++started;
    if (p.refusal) alone += fmt::format("\n  #{}: {}", cells[i].index, *p.refusal);
  }
  std::string groups;
  for (const auto& [process, indices] : members) {
    const bool consecutive = indices.back() - indices.front() + 1 == static_cast<int>(indices.size());
    std::string group;
    if (indices.size() > 1 && consecutive) {
      group = fmt::format("#{}-#{}", indices.front(), indices.back());
    } else {
      for (const int index : indices) group += fmt::format("{}#{}", group.empty() ? "" : "+", index);
    }
    groups += (groups.empty() ? "" : ", ") + group;
  }
  std::printf("--runner-reuse: %s in %d runner process%s: %s\n",
              CountNoun(static_cast<std::int64_t>(cells.size()), "cell").c_str(), started,
              started == 1 ? "" : "es", groups.c_str());
  if (!alone.empty()) std::printf("never sharing a process:%s\n", TerminalSafe(alone).c_str());
  if (sharing == 0) return;
  std::string saved =
      known == 0 ? std::string("no stored time_to_hello_s for them yet (a run stores it)")
                 : fmt::format("about {} of start-up saved, from the stored time_to_hello_s of {}",
                               HumanDurationNs(saved_s * 1e9),
                               known == sharing ? std::string("each") : fmt::format("{} of them", known));
  std::printf(
      "%s would take the process the cell before it leaves (when that cell ends with DONE and the runner's "
      "HELLO says multi_cell): %s\n",
      CountNoun(sharing, "cell").c_str(), saved.c_str());
}

int ShowPlan(const PlanArgs& args, CommandContext& ctx) {
  auto shard = ResolveShard(args.shard, nullptr);
  if (!shard.ok()) return ReportError(shard.error());
  auto selected = plan::SelectPlan(args.matrix_path, plan::Selection{args.only, *shard, args.set});
  if (!selected.ok()) return ReportSelectionError(selected.error(), args.matrix_path);
  orchestrator::AddHostGpuWarnings(*selected);
  const config::Matrix* matrix = &selected->matrix;
  const std::vector<plan::Cell>* cells = &selected->cells;
  // Compiler-style, on stderr, before the table (also with --json: stdout stays the JSON).
  for (const std::string& w : selected->warnings) std::fprintf(stderr, "%s\n", TerminalSafe(w).c_str());
  std::map<std::string, double> startup_s;
  const auto history = KeyHistories(ctx, *cells, startup_s);
  // --runner-reuse: where each cell would run (the rule run applies; the runner's argv is the same
  // for every cell of a matrix, so a runner that cannot be found here changes no comparison).
  std::vector<orchestrator::PlannedProcess> processes;
  if (args.runner_reuse) {
    auto runner = orchestrator::ResolveRunner(matrix->runner, ExecutableDir());
    processes = orchestrator::PlanRunnerReuse(*cells, runner.ok() ? *runner : orchestrator::RunnerCommand{});
  }
  double total = 0, total_low = 0, total_high = 0;
  int from_history = 0;
  // Cells whose max_time_s cannot hold the measured steps an interval needs, at a known step time.
  std::vector<std::string> short_cells;
  // A matrix with load cells gets a "min queries" column; others print as they always did.
  bool any_load = false;
  for (const auto& c : *cells) any_load = any_load || c.params.count("load") > 0;
  std::vector<Table::Column> columns = {{"#", true},        {"cell", false},  {"rep", true}, {"seed", true},
                                        {"estimate", true}, {"bounds", true}, {"key", false}};
  if (any_load) columns.insert(columns.begin() + 6, {"min queries", true});
  Table table(columns);
  // Which mechanism each capped cell's memory_cap will use (docs/memory.md "Memory cap"): cgroup v2
  // is looked for once, writing nothing, and only when a cpu cell has a cap.
  std::optional<orchestrator::CgroupParent> cpu_parent;
  for (const auto& c : *cells) {
    if (!cpu_parent && orchestrator::CellCapsOnCpu(c)) {
      cpu_parent = orchestrator::FindCgroupParent(orchestrator::SystemCgroupSources(),
                                                  orchestrator::CgroupCheck::kReadOnly);
    }
  }
  std::map<std::string, std::vector<int>> cap_lines;      // the sentence, and the cells it is about
  std::map<std::string, std::vector<int>> retry_refused;  // why not measured again, and the cells
  nlohmann::json js = nlohmann::json::array();
  double saved_s = 0;
  std::int64_t sharing = 0, saved_known = 0;
  for (std::size_t i = 0; i < cells->size(); ++i) {
    const plan::Cell& c = (*cells)[i];
    const auto est = plan::EstimateCell(c, *matrix, history);
    total += est.seconds;
    total_low += est.low_s;
    total_high += est.high_s;
    from_history += est.from_history ? 1 : 0;
    const std::optional<double> reachable = plan::ReachableSteps(est, matrix->measure);
    const double needed = plan::StepsNeeded(matrix->measure);
    if (reachable && *reachable < needed) {
      // Fewer than min_steps ends the cell invalid (too little data); fewer than an interval's
      // steps leaves it too_short.
      const std::string ends =
          *reachable < static_cast<double>(matrix->measure.min_steps)
              ? fmt::format(", fewer than min_steps {} (it ends invalid: too little data)",
                            matrix->measure.min_steps)
              : "";
      short_cells.push_back(fmt::format(
          "  #{} {}: {} per step ({}), so max_time_s {} holds about {}{}; an interval needs {} (warm-up cut "
          "included): raise max_time_s to about {:.0f} s",
          c.index, c.label, HumanDurationNs(*est.step_s * 1e9), est.step_from_history ? "stored" : "declared",
          FormatSignificant(matrix->measure.max_time_s, 4),
          CountNoun(static_cast<std::int64_t>(*reachable), "step"), ends, std::ceil(needed),
          std::ceil(needed * *est.step_s + 1)));
    }
    const std::optional<std::int64_t> min_queries = MinQueries(c);
    std::vector<std::string> row = {std::to_string(c.index),
                                    c.added_as_control ? c.label + " (control)" : c.label,
                                    std::to_string(c.repetition),
                                    std::to_string(c.seed),
                                    FormatSeconds(est.seconds) + (est.from_history ? "" : "*"),
                                    FormatSeconds(est.low_s) + " - " + FormatSeconds(est.high_s),
                                    c.key};
    if (any_load) row.insert(row.begin() + 6, min_queries ? std::to_string(*min_queries) : "-");
    table.AddRow(row);
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [k, v] : c.params) params[k] = v;
    nlohmann::json entry = {{"index", c.index},
                            {"id", c.id},
                            {"key", c.key},
                            {"label", c.label},
                            {"repetition", c.repetition},
                            {"seed", c.seed},
                            {"params", params},
                            {"estimate_s", est.seconds},
                            {"estimate_from_history", est.from_history},
                            {"estimate_low_s", est.low_s},
                            {"estimate_high_s", est.high_s}};
    if (est.step_s) entry["step_s"] = *est.step_s;
    if (reachable) entry["reachable_steps"] = *reachable;
    if (min_queries) entry["min_queries"] = *min_queries;
    if (orchestrator::IsBoundarySearch(c)) {
      entry["boundary_max_probes"] = stats::MaxBoundaryProbes(orchestrator::BoundarySettings(c));
      entry["boundary_probe_process"] = orchestrator::SharesProbeProcess(c) ? "shared" : "fresh";
    }
    if (auto cap = orchestrator::PlannedMemoryCap(c, cpu_parent.value_or(orchestrator::CgroupParent{}))) {
      cap_lines[MemoryCapSentence(*cap)].push_back(c.index);
      entry["memory_cap"] = std::move(*cap);
    }
    if (const int retries = matrix->measure.retry_disturbed; retries > 0) {
      // measure.retry_disturbed: how many times the cell may run (docs/measurement.md "Measuring again").
      const std::optional<std::string> refused = plan::RetryRefusal(c);
      entry["attempts_allowed"] = refused ? 1 : retries + 1;
      if (refused) {
        entry["retry_refused"] = *refused;
        retry_refused[*refused].push_back(c.index);
      }
    }
    if (!c.input_control_id.empty()) entry["input_control_id"] = c.input_control_id;
    if (!c.input_pipeline_id.empty()) entry["input_pipeline_id"] = c.input_pipeline_id;
    if (c.added_as_control) entry["added_as_control"] = true;
    if (plan::IsDdpCell(c.params)) {
      const auto world = c.params.find("world_size");
      entry["ranks"] = world != c.params.end() && world->second.is_number_integer()
                           ? world->second.get<std::int64_t>()
                           : 1;
    }
    if (!c.ddp_scaling_control_id.empty()) entry["ddp_scaling_control_id"] = c.ddp_scaling_control_id;
    if (!c.ddp_compute_only_id.empty()) entry["ddp_compute_only_id"] = c.ddp_compute_only_id;
    if (!c.ddp_serial_id.empty()) entry["ddp_serial_id"] = c.ddp_serial_id;
    if (!processes.empty()) {
      const orchestrator::PlannedProcess& p = processes[i];
      nlohmann::json reuse = {{"process", p.process},
                              {"cell_of_process", p.cell_of_process},
                              {"shares_previous", p.shares_previous}};
      if (p.refusal) reuse["not_shared"] = *p.refusal;
      if (p.shares_previous) {
        ++sharing;
        if (const auto known = startup_s.find(c.key); known != startup_s.end()) {
          reuse["startup_saved_s"] = known->second;
          saved_s += known->second;
          ++saved_known;
        }
      }
      entry["runner_process"] = std::move(reuse);
    }
    js.push_back(std::move(entry));
  }
  if (args.json) {
    // JSON escapes control characters itself; invalid UTF-8 from a matrix is replaced, not fatal.
    std::printf("%s\n", js.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return kExitOk;
  }
  // The table escapes its cells (TerminalSafe); so is every other string printed here.
  std::printf("%s", table.Render().c_str());
  std::printf("\n%s%s (runner %s, %s order); estimated %s, between %s and %s\n",
              CountNoun(static_cast<std::int64_t>(cells->size()), "cell").c_str(),
              TerminalSafe(plan::ShardSummary(*selected)).c_str(), TerminalSafe(matrix->runner.name).c_str(),
              matrix->ordering == config::Ordering::kGrouped ? "grouped" : "interleaved",
              FormatSeconds(total).c_str(), FormatSeconds(total_low).c_str(),
              FormatSeconds(total_high).c_str());
  if (from_history < static_cast<int>(cells->size())) {
    std::printf(
        "* no history for %s: the estimate is the least the measure settings take, without the runner's "
        "start-up; the upper bound is the idle baseline plus timeout_s, where a cell is stopped. Once a "
        "cell is stored, plan reads its times from the store.\n",
        CountNoun(static_cast<std::int64_t>(cells->size()) - from_history, "cell").c_str());
  }
  if (!short_cells.empty()) {
    std::printf("%s cannot reach the measured steps a confidence interval needs within max_time_s:\n",
                CountNoun(static_cast<std::int64_t>(short_cells.size()), "cell").c_str());
    for (const std::string& line : short_cells) std::printf("%s\n", TerminalSafe(line).c_str());
  }
  for (const auto& c : *cells) {
    if (!orchestrator::IsBoundarySearch(c)) continue;
    const bool shared = orchestrator::SharesProbeProcess(c);
    std::printf(
        "#%d %s: %s: max runs at most %zu probes (%s), then "
        "measures the value found; the estimate is the measured run's\n",
        c.index, TerminalSafe(c.label).c_str(), orchestrator::BoundarySearchKey(c).c_str(),
        stats::MaxBoundaryProbes(orchestrator::BoundarySettings(c)),
        shared ? "sharing runner processes: a new one only at the start and after an oom that ends one"
               : "each a fresh runner process");
  }
  if (!processes.empty()) PrintRunnerReuse(*cells, processes, sharing, saved_known, saved_s);
  if (const int retries = matrix->measure.retry_disturbed; retries > 0) {
    std::printf(
        "measure.retry_disturbed %d: a cell whose verdict says the machine disturbed it (contended, shifted, "
        "drifting) runs again, at most %s; the first attempt not disturbed is stored, else the last, and "
        "the upper bounds count every attempt\n",
        retries, CountNoun(retries, "more time").c_str());
    for (const auto& [why, indices] : retry_refused) {
      std::string which;
      for (const int i : indices) which += fmt::format("{}#{}", which.empty() ? "" : ", ", i);
      std::printf("  not measured again: %s: %s\n", which.c_str(), why.c_str());
    }
  }
  for (const auto& [sentence, indices] : cap_lines) {
    std::string which;
    for (const int i : indices) which += fmt::format("{}#{}", which.empty() ? "" : ", ", i);
    std::printf("memory_cap of %s: %s\n", which.c_str(), TerminalSafe(sentence).c_str());
  }
  const auto added =
      std::count_if(cells->begin(), cells->end(), [](const plan::Cell& c) { return c.added_as_control; });
  if (added > 0) {
    std::printf(
        "%lld of them (control) added: the same cell with data: device, which the input-bound verdict "
        "compares a cell reading host data with (docs/input-pipeline.md)\n",
        static_cast<long long>(added));
  }
  // The ddp cells of several ranks: how many processes each starts, and those without their
  // world_size 1 cell, which get no scaling efficiency (the plan does not add one:
  // plan/ddp_references.h); said here, before anything runs.
  std::string ranked, uncontrolled;
  std::int64_t ranked_cells = 0, uncontrolled_cells = 0;
  for (const auto& c : *cells) {
    const auto world = c.params.find("world_size");
    if (!plan::IsDdpCell(c.params) || world == c.params.end() || !world->second.is_number_integer() ||
        world->second.get<std::int64_t>() <= 1)
      continue;
    ranked +=
        fmt::format("{}#{} {} ranks", ranked.empty() ? "" : ", ", c.index, world->second.get<std::int64_t>());
    ++ranked_cells;
    const auto model = c.params.find("model");
    if (!c.ddp_scaling_control_id.empty() ||
        (model != c.params.end() && model->second == config::Value("allreduce")))
      continue;
    uncontrolled += fmt::format("{}#{}", uncontrolled.empty() ? "" : ", ", c.index);
    ++uncontrolled_cells;
  }
  if (ranked_cells > 0) {
    std::printf("%s of several ranks, one process per rank on this host: %s\n",
                CountNoun(ranked_cells, "ddp cell").c_str(), ranked.c_str());
  }
  if (uncontrolled_cells > 0) {
    std::printf(
        "%s without a world_size 1 cell of the same parameters in the matrix (%s): no scaling efficiency "
        "for them; add 1 to world_size to measure it in the same run (docs/distributed.md)\n",
        CountNoun(uncontrolled_cells, "ddp cell").c_str(), uncontrolled.c_str());
  }
  if (selected->shard && cells->empty()) {
    std::printf("%s; `run` refuses an empty shard\n",
                TerminalSafe(plan::EmptySelectionMessage(*selected, args.matrix_path)).c_str());
  }
  return kExitOk;
}

}  // namespace

void RegisterPlan(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd =
      app.add_subcommand("plan", "Show the cells a matrix expands to, in run order, with a time estimate");
  cmd->add_option("matrix", args->matrix_path, "The matrix file (YAML)")->required();
  cmd->add_option("--only", args->only, "Keep matching cells (same syntax as run --only)");
  cmd->add_option("--set", args->set,
                  "Override a measurement setting, as run --set does (its estimates use it)")
      ->type_name("measure.KEY=VALUE");
  cmd->add_option("--shard", args->shard,
                  "Keep part K of N (K/N) of the cells --only keeps, exactly those run --shard K/N runs; "
                  "auto: K/N from the launcher, as run --shard auto")
      ->type_name("K/N|auto");
  cmd->add_flag("--json", args->json, "Print the cells as JSON");
  cmd->add_flag("--runner-reuse", args->runner_reuse,
                "Show which consecutive cells run --runner-reuse would run in one runner process, and the "
                "start-up that saves by the stored time_to_hello_s");
  cmd->callback([args, &ctx] { ctx.exit_code = ShowPlan(*args, ctx); });
}

}  // namespace dlbench::cli

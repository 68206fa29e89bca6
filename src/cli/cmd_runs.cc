// dlbench runs: the stored runs, newest first; `runs --delete RUN...` and `prune --keep N` remove
// runs (never one a live process is running: its lock is taken first).
#include <fmt/core.h>

#include <algorithm>
#include <set>
#include <vector>

#include "cli/commands.h"
#include "cli/console.h"
#include "common/clock.h"
#include "common/human_text.h"
#include "common/text.h"
#include "store/sweep.h"

namespace dlbench::cli {
namespace {

// Deletes one run under its lock: refused while another live process holds it.
Status DeleteLockedRun(store::ResultStore& store, std::int64_t run_id) {
  auto held = store.TryLockRun(run_id, store::ThisProcessAsOwner());
  if (!held.ok()) return held.error();
  if (held->has_value()) {
    return MakeError(ErrorKind::kInvalidInput,
                     fmt::format("run {} is being run by {}: stop it first (Ctrl-C), then delete it", run_id,
                                 store::DescribeHolder(**held)));
  }
  Status deleted = store.DeleteRun(run_id);
  Status unlocked = store.UnlockRun(run_id);
  if (!deleted.ok()) return deleted;
  return unlocked;
}

void PrintDeleted(const store::RunRecord& r) {
  std::string tags;
  for (const auto& t : r.tags) tags += (tags.empty() ? ", tags " : ",") + t;
  std::printf("deleted run %lld (%s, %s, %s%s)\n", static_cast<long long>(r.id), r.name.c_str(),
              FormatUtc(r.started_wall_ns).c_str(), CountNoun(r.total_cells, "cell").c_str(), tags.c_str());
}

int DeleteRuns(const std::vector<std::string>& refs, CommandContext& ctx) {
  auto store = OpenExistingStoreOrReport(ctx);
  if (!store) return ctx.exit_code;
  // Resolve every reference before deleting any: "latest" must not move under the loop, and a
  // typo deletes nothing.
  std::vector<std::int64_t> ids;
  for (const std::string& ref : refs) {
    auto id = store->ResolveRun(ref);
    if (!id.ok()) return ReportError(id.error());
    if (std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
  }
  for (std::int64_t id : ids) {
    auto run = store->GetRun(id);
    if (!run.ok()) return ReportError(run.error());
    const Status deleted = DeleteLockedRun(*store, id);
    if (!deleted.ok()) return ReportError(deleted.error());
    PrintDeleted(*run);
  }
  std::printf("the runs' log folders are left as they were\n");
  return kExitOk;
}

struct PruneArgs {
  int keep = -1;
  bool dry_run = false;
  bool keep_tagged = true;
};

int Prune(const PruneArgs& args, CommandContext& ctx) {
  auto store = OpenExistingStoreOrReport(ctx);
  if (!store) return ctx.exit_code;
  auto runs = store->ListRuns();  // newest first
  if (!runs.ok()) return ReportError(runs.error());
  std::vector<store::RunRecord> doomed;
  int kept = 0;
  for (const auto& r : *runs) {
    if (kept < args.keep) {
      ++kept;
      continue;
    }
    if (args.keep_tagged && !r.tags.empty()) continue;
    doomed.push_back(r);
  }
  if (doomed.empty()) {
    std::printf("nothing to prune: %zu run%s in %s, keeping the newest %d%s\n", runs->size(),
                runs->size() == 1 ? "" : "s", store->Describe().c_str(), args.keep,
                args.keep_tagged ? " and every tagged one" : "");
    return kExitOk;
  }
  for (const auto& r : doomed) {
    if (args.dry_run) {
      std::printf("would delete run %lld (%s, %s, %s)\n", static_cast<long long>(r.id), r.name.c_str(),
                  FormatUtc(r.started_wall_ns).c_str(), CountNoun(r.total_cells, "cell").c_str());
      continue;
    }
    const Status deleted = DeleteLockedRun(*store, r.id);
    if (!deleted.ok()) return ReportError(deleted.error());
    PrintDeleted(r);
  }
  std::printf("%s %zu of %zu run%s; kept the newest %d%s\n", args.dry_run ? "would delete" : "deleted",
              doomed.size(), runs->size(), runs->size() == 1 ? "" : "s", args.keep,
              args.keep_tagged ? " and every tagged one" : "");
  return kExitOk;
}

// `runs --sweeps`: one line per sweep, the one with the newest run first.
int ListSweepLines(int limit, CommandContext& ctx) {
  auto store = OpenStoreForReadingOrReport(ctx);
  if (!store) return ctx.exit_code;
  auto sweeps = store::ListSweeps(*store);
  if (!sweeps.ok()) return ReportError(sweeps.error());
  if (sweeps->empty()) {
    std::printf(
        "no sweeps in %s (shards started with --shard K/N --sweep NAME, or under srun or torchrun, "
        "form one)\n",
        store->Describe().c_str());
    return kExitOk;
  }
  Table table({{"sweep", false},
               {"name", false},
               {"started (UTC)", false},
               {"shards", true},
               {"cells", true},
               {"complete", false},
               {"runs", false}});
  int shown = 0;
  for (const store::Sweep& s : *sweeps) {
    if (shown++ >= limit) break;
    std::set<std::string> stored;
    std::string runs;
    std::int64_t started = 0;
    std::string name;
    for (const auto& [k, run] : s.shards) {
      auto done = store->FinishedCellIds(run.id);
      if (!done.ok()) return ReportError(done.error());
      stored.insert(done->begin(), done->end());
      runs += fmt::format("{}{}", runs.empty() ? "" : ",", run.id);
      started = started == 0 ? run.started_wall_ns : std::min(started, run.started_wall_ns);
      if (name.empty()) name = run.name;
    }
    std::string complete = !s.conflict.empty() ? "conflict: " + s.conflict : s.Complete() ? "yes" : "no";
    if (const std::vector<int> missing = s.Missing(); !missing.empty()) {
      std::string list;
      for (int k : missing) list += fmt::format("{}{}", list.empty() ? "" : ",", k);
      complete += fmt::format(" (missing {} of {})", list, s.shard_count);
    }
    table.AddRow({TerminalSafe(s.name), TerminalSafe(name), FormatUtc(started),
                  fmt::format("{}/{}", s.shards.size(), s.shard_count),
                  fmt::format("{}/{}", stored.size(), s.planned_cells), complete, runs});
  }
  std::printf("%s", table.Render().c_str());
  return kExitOk;
}

}  // namespace

void RegisterPrune(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<PruneArgs>();
  CLI::App* cmd = app.add_subcommand(
      "prune",
      "Delete old runs: keep the newest N (--keep N, required) and every tagged run (unless "
      "--include-tagged).\n"
      "A run a live process is running is never deleted; log folders are left as they were.\n"
      "Try it first: dlbench prune --keep 20 --dry-run");
  cmd->add_option("--keep", args->keep, "How many of the newest runs to keep (0 keeps only tagged ones)")
      ->required()
      ->check(CLI::Range(0, 1000000000));
  cmd->add_flag("--dry-run", args->dry_run, "Print what would be deleted and delete nothing");
  cmd->add_flag("!--include-tagged", args->keep_tagged, "Delete tagged runs past the newest N too");
  cmd->callback([args, &ctx] { ctx.exit_code = Prune(*args, ctx); });
}

void RegisterRuns(CLI::App& app, CommandContext& ctx) {
  auto limit = std::make_shared<int>(50);
  auto remove = std::make_shared<std::vector<std::string>>();
  auto sweeps = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("runs",
                                     "List stored runs, newest first; --delete RUN... removes runs with all "
                                     "their cells (prune removes old ones)");
  cmd->add_option("-n,--limit", *limit, "Show at most this many runs")->capture_default_str();
  cmd->add_option("--delete", *remove,
                  "Delete these runs (ids, tags, latest, previous, ~N) with their cells, metrics, steps, "
                  "series and tags")
      ->expected(1, 1000);
  cmd->add_flag("--sweeps", *sweeps,
                "One line per sweep (shards of one plan, run with --sweep NAME or under srun/torchrun): its "
                "shards stored of N, its cells stored of the whole plan's, whether every shard completed");
  cmd->callback([limit, remove, sweeps, &ctx] {
    if (!remove->empty()) {
      ctx.exit_code = DeleteRuns(*remove, ctx);
      return;
    }
    if (*sweeps) {
      ctx.exit_code = ListSweepLines(*limit, ctx);
      return;
    }
    auto store = OpenStoreForReadingOrReport(ctx);
    if (!store) return;
    auto runs = store->ListRuns();
    if (!runs.ok()) {
      ctx.exit_code = ReportError(runs.error());
      return;
    }
    if (runs->empty()) {
      std::printf("no runs in %s yet (start one: dlbench run examples/quickstart.yaml)\n",
                  store->Describe().c_str());
      return;
    }
    Table table({{"run", true},
                 {"name", false},
                 {"started (UTC)", false},
                 {"duration", true},
                 {"status", false},
                 {"cells", true},
                 {"env", false},
                 {"sweep", false},
                 {"tags", false}});
    int shown = 0;
    for (const auto& r : *runs) {
      if (shown++ >= *limit) break;
      std::string tags;
      for (const auto& t : r.tags) tags += (tags.empty() ? "" : ",") + t;
      const std::string duration =
          r.finished_wall_ns
              ? FormatSeconds(static_cast<double>(*r.finished_wall_ns - r.started_wall_ns) * 1e-9)
              : "-";
      table.AddRow({std::to_string(r.id), r.name, FormatUtc(r.started_wall_ns), duration,
                    RunStatusWord(*store, r.id, r.status), std::to_string(r.total_cells),
                    r.environment_hash.substr(0, 8),
                    r.sweep.empty() ? "" : TerminalSafe(r.sweep) + " " + r.selection.shard, tags});
    }
    std::printf("%s", table.Render().c_str());
  });
}

}  // namespace dlbench::cli

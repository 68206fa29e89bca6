// `dlbench tag RUN NAME`: name a run so that any command taking a run accepts the name;
// `tag --list` shows every tag, `tag --delete NAME` removes one (the run stays).
#include <fmt/core.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/console.h"
#include "common/clock.h"

namespace dlbench::cli {
namespace {

struct TagArgs {
  std::string run;
  std::string name;
  bool list = false;
  std::string remove;
};

int ListTags(store::ResultStore& store) {
  auto runs = store.ListRuns();
  if (!runs.ok()) return ReportError(runs.error());
  Table table({{"tag", false}, {"run", true}, {"name", false}, {"started (UTC)", false}, {"status", false}});
  int tags = 0;
  for (const auto& r : *runs) {
    for (const auto& t : r.tags) {
      table.AddRow({t, std::to_string(r.id), r.name, FormatUtc(r.started_wall_ns),
                    std::string(record::Name(r.status))});
      ++tags;
    }
  }
  if (tags == 0) {
    std::printf("no tags in %s (name a run: dlbench tag RUN NAME)\n", store.Describe().c_str());
    return kExitOk;
  }
  std::printf("%s", table.Render().c_str());
  return kExitOk;
}

int RunTag(const TagArgs& args, CommandContext& ctx) {
  const int modes = (args.list ? 1 : 0) + (args.remove.empty() ? 0 : 1) + (args.run.empty() ? 0 : 1);
  if (modes != 1 || (!args.run.empty() && args.name.empty())) {
    return ReportError(
        MakeError(ErrorKind::kInvalidInput,
                  "expected one of: RUN NAME (tag a run), --list, --delete NAME; see dlbench tag --help"));
  }
  std::unique_ptr<store::ResultStore> store =
      args.list ? OpenStoreForReadingOrReport(ctx) : OpenExistingStoreOrReport(ctx);
  if (!store) return ctx.exit_code;
  if (args.list) return ListTags(*store);
  if (!args.remove.empty()) {
    auto run = store->ResolveRunName(args.remove);
    const Status removed = store->DeleteTag(args.remove);
    if (!removed.ok()) return ReportError(removed.error());
    std::printf("removed tag '%s' (run %lld stays)\n", args.remove.c_str(),
                run.ok() ? static_cast<long long>(*run) : 0LL);
    return kExitOk;
  }
  auto id = store->ResolveRun(args.run);
  if (!id.ok()) return ReportError(id.error());
  // The store decides what a tag may be (not empty, not all digits, not "latest").
  const Status set = store->SetTag(*id, args.name);
  if (!set.ok()) return ReportError(set.error());
  std::printf("tagged run %lld as '%s'\n", static_cast<long long>(*id), args.name.c_str());
  return kExitOk;
}

}  // namespace

void RegisterTag(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<TagArgs>();
  CLI::App* sub = app.add_subcommand(
      "tag",
      "Name a run (\"dlbench tag 12 baseline\"); a tag names one run and setting it again moves it.\n"
      "Tags are accepted wherever a run is taken: dlbench compare baseline latest.\n"
      "dlbench tag --list shows every tag; dlbench tag --delete baseline removes one (the run stays)");
  sub->add_option("run", args->run, "The run: an id, an existing tag, 'latest' or 'previous' (with ~N)");
  sub->add_option("name", args->name, "The tag: not empty, not all digits, not 'latest'");
  sub->add_flag("--list", args->list, "List every tag with its run");
  sub->add_option("--delete", args->remove, "Remove this tag (the run it names is kept)");
  sub->callback([args, &ctx] { ctx.exit_code = RunTag(*args, ctx); });
}

}  // namespace dlbench::cli

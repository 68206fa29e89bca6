// `dlbench tag RUN NAME`: name a run so that any command taking a run accepts the name.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"

namespace dlbench::cli {
namespace {

struct TagArgs {
  std::string run;
  std::string name;
};

int RunTag(const TagArgs& args, CommandContext& ctx) {
  std::unique_ptr<store::ResultStore> store = OpenExistingStoreOrReport(ctx);
  if (!store) return ctx.exit_code;
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
      "Tags are accepted wherever a run is taken: dlbench compare baseline latest");
  sub->add_option("run", args->run, "The run: an id, an existing tag, or 'latest'")->required();
  sub->add_option("name", args->name, "The tag: not empty, not all digits, not 'latest'")->required();
  sub->callback([args, &ctx] { ctx.exit_code = RunTag(*args, ctx); });
}

}  // namespace dlbench::cli

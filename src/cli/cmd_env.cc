// dlbench env: this machine's environment fingerprint, as it would be stored with a run.
#include <fmt/core.h>

#include <algorithm>

#include "cli/commands.h"
#include "common/clock.h"
#include "common/subprocess.h"
#include "config/matrix.h"
#include "monitor/analysis.h"
#include "monitor/fingerprint.h"
#include "monitor/procfs_sampler.h"
#include "monitor/sampler.h"
#include "orchestrator/cell_runner.h"

namespace dlbench::cli {

void RegisterEnv(CLI::App& app, CommandContext& ctx) {
  auto runner_name = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "env", "Print this machine's environment fingerprint (JSON) and the hash that decides comparability");
  cmd->add_option("--runner", *runner_name,
                  "Also ask this runner (null, torch) for its framework and device facts");
  cmd->callback([runner_name, &ctx] {
    nlohmann::json hello = nlohmann::json::object();
    if (!runner_name->empty()) {
      auto runner = orchestrator::ResolveRunner(config::RunnerSpec{*runner_name, {}}, ExecutableDir());
      if (!runner.ok()) {
        ctx.exit_code = ReportError(runner.error());
        return;
      }
      auto h = orchestrator::ProbeRunner(*runner, 120);
      if (!h.ok()) {
        ctx.exit_code = ReportError(h.error());
        return;
      }
      hello = *h;
      hello.erase("pid");  // differs every run and decides nothing
    }
    MonotonicClock clock;
    monitor::Monitor probe(monitor::DefaultSamplers(), clock, 1000);
    nlohmann::json fp = monitor::CollectFingerprint(hello, probe.Describe());
    std::vector<std::string> warnings = monitor::FingerprintWarnings(fp);
    // A busy host makes every cell measured now contended (docs/verdicts.md): say so up front.
    const auto busy = monitor::SampleHostBusyCores(monitor::RealProcFs(), 500);
    const bool said = std::any_of(warnings.begin(), warnings.end(),
                                  [](const std::string& w) { return w.rfind("the host is busy", 0) == 0; });
    if (busy && *busy >= monitor::kContendedCores && !said) {
      warnings.push_back(fmt::format(
          "the host is busy: {:.1f} CPU cores in use while dlbench itself is idle; cells measured now will "
          "likely be contended",
          *busy));
    }
    nlohmann::json out = {{"comparability_hash", monitor::ComparabilityHash(fp)},
                          {"warnings", warnings},
                          {"host_busy_cores", busy ? nlohmann::json(*busy) : nlohmann::json()},
                          {"fingerprint", fp}};
    std::printf("%s\n", out.dump(2).c_str());
  });
}

}  // namespace dlbench::cli

// dlbench serve: /metrics in the Prometheus text format (R17), loopback by default.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "report/metrics_server.h"

namespace dlbench::cli {
namespace {

struct ServeArgs {
  std::string listen = "127.0.0.1:9464";
  std::string db;
  double threshold_pct = 5.0;
};

int Serve(const ServeArgs& args, CommandContext& ctx) {
  if (!args.db.empty()) ctx.db_path = args.db;
  auto listen = report::ParseListenAddress(args.listen);
  if (!listen.ok()) return ReportError(listen.error());
  auto store = OpenStoreForReadingOrReport(ctx);
  if (!store) return ctx.exit_code;

  report::ServeOptions options;
  options.listen = *listen;
  options.db_path = ctx.db_path;
  options.regression_threshold = args.threshold_pct / 100.0;
  report::MetricsServer server(*store, options);
  Status bound = server.Bind();
  if (!bound.ok()) return ReportError(bound.error());

  // SIGINT/SIGTERM are blocked in every thread and taken by one waiter with sigwait, so the
  // server is stopped from an ordinary thread rather than from a signal handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::atomic<int> received{0};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    received = sig;
    server.Stop();
  });

  std::printf("dlbench serve: http://%s:%d/metrics (store %s)\n", options.listen.host.c_str(), server.port(),
              store->Describe().c_str());
  std::fflush(stdout);
  Status served = server.Run();
  if (received == 0) pthread_kill(waiter.native_handle(), SIGTERM);  // the server ended by itself
  waiter.join();
  if (!served.ok()) return ReportError(served.error());
  return received == SIGINT ? kExitInterrupted : kExitOk;
}

}  // namespace

void RegisterServe(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd =
      app.add_subcommand("serve", "Serve the latest result of each cell as Prometheus metrics on /metrics");
  cmd->add_option("--listen", args->listen, "HOST:PORT to listen on; loopback by default")
      ->capture_default_str();
  cmd->add_option("--db", args->db, "SQLite database (overrides the global --db)");
  cmd->add_option("--threshold", args->threshold_pct,
                  "dlbench_cell_regression is 1 when throughput fell by more than this many percent against "
                  "the previous run")
      ->check(CLI::Range(0.0, 99.0))
      ->capture_default_str();
  RetireOption(cmd, "--regression-threshold", "write --threshold in percent (0.05 is --threshold 5)");
  cmd->callback([args, &ctx] { ctx.exit_code = Serve(*args, ctx); });
}

}  // namespace dlbench::cli

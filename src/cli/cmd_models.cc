// dlbench models: the LibTorch runner's model zoo at standard sizes, as the runner builds it
// (`dlbench-torch --models`): parameters, FLOPs per sample and input sizes, so a user can pick
// batch sizes and read MFU without opening the source.
#include <fmt/core.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/console.h"
#include "common/subprocess.h"

namespace dlbench::cli {

namespace {

constexpr std::size_t kMaxOutputBytes = 1 << 20;
constexpr int kTimeoutMs = 120'000;  // building BERT-Base and the others on a slow CPU

// The runner's --models output, read through a pipe (bounded in size and time).
Result<std::string> RunnerModels(const std::string& runner) {
  auto pipe = MakePipe();
  if (!pipe.ok()) return pipe.error();
  SpawnOptions options;
  options.argv = {runner, "--models"};
  options.fd_map = {{STDOUT_FILENO, pipe->second}};
  auto child = Subprocess::Spawn(options);
  ::close(pipe->second);
  if (!child.ok()) {
    ::close(pipe->first);
    return child.error();
  }
  std::string out;
  char buf[65536];
  int waited_ms = 0;
  while (out.size() <= kMaxOutputBytes && waited_ms < kTimeoutMs) {
    pollfd p{pipe->first, POLLIN, 0};
    const int ready = ::poll(&p, 1, 1000);
    if (ready == 0) {
      waited_ms += 1000;
      continue;
    }
    if (ready < 0 && errno == EINTR) continue;
    const ssize_t n = ::read(pipe->first, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(pipe->first);
  const ExitStatus st = waited_ms >= kTimeoutMs ? child->Terminate(500) : child->Wait();
  if (waited_ms >= kTimeoutMs)
    return MakeError(ErrorKind::kIo, runner + " --models did not answer within 120 s");
  if (!st.success()) return MakeError(ErrorKind::kIo, runner + " --models ended with " + st.Describe());
  return out;
}

int Models(bool json, CommandContext&) {
  const std::string runner = ExecutableDir() + "/dlbench-torch";
  if (::access(runner.c_str(), X_OK) != 0) {
    return ReportError(
        MakeError(ErrorKind::kNotFound, "this build has no LibTorch runner (" + runner +
                                            "): install libtorch-dev and rebuild, see README.md"));
  }
  auto text = RunnerModels(runner);
  if (!text.ok()) return ReportError(text.error());
  nlohmann::json models = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (!models.is_array())
    return ReportError(MakeError(ErrorKind::kIo, runner + " --models printed no JSON list"));
  if (json) {
    std::printf("%s\n", models.dump(2).c_str());
    return kExitOk;
  }
  Table table({{"model", false},
               {"parameters", true},
               {"GFLOP/sample fwd", true},
               {"GFLOP/sample train", true},
               {"standard sizes", false}});
  for (const auto& m : models) {
    std::string sizes;
    const nlohmann::json facts = m.value("sizes", nlohmann::json::object());
    for (const auto& [key, value] : facts.items()) {
      sizes += (sizes.empty() ? "" : ", ") + key + "=" +
               (value.is_string() ? value.get<std::string>() : value.dump());
    }
    table.AddRow({m.value("model", "?"), fmt::format("{:.2f} M", m.value("parameters", 0.0) / 1e6),
                  fmt::format("{:.3f}", m.value("forward_flops_per_sample", 0.0) / 1e9),
                  fmt::format("{:.3f}", m.value("train_flops_per_sample", 0.0) / 1e9), sizes});
  }
  std::printf("%s", table.Render().c_str());
  std::printf(
      "\nFLOPs count convolutions, linear layers and attention matmuls (a multiply-add is 2 FLOPs); a\n"
      "training step is taken as 3x the forward pass (docs/models.md). The size keys among these\n"
      "(image_size, base_width, width_mult, num_classes, layers, hidden_size, heads, seq_len,\n"
      "vocab_size) are matrix keys: set them per cell to run a smaller variant (image_size: 64).\n");
  return kExitOk;
}

}  // namespace

void RegisterModels(CLI::App& app, CommandContext& ctx) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "models", "The LibTorch runner's models at standard sizes: parameters, FLOPs per sample, input sizes");
  cmd->add_flag("--json", *json, "Print the runner's JSON instead of a table");
  cmd->footer("The null runner takes any model name (it only labels the cell).");
  cmd->callback([json, &ctx] { ctx.exit_code = Models(*json, ctx); });
}

}  // namespace dlbench::cli

// The torch runner through the real `dlbench run`: small variants of the four reference models,
// trained and served on the CPU, end up stored with their metrics; an unsupported combination is
// an outcome, not a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "config/model_rules.h"
#include "e2e_util.h"
#include "record/metrics.h"
#include "store/result_store.h"

namespace dlbench::e2e {
namespace {

// `dlbench models` prints what the runner builds at standard sizes: the parameter counts are
// torchvision's and Hugging Face's exactly (runners/torch/models/zoo_test.cc says why).
TEST(TorchE2E, ModelsListsTheZooWithParametersAndFlops) {
  TempDir dir("models");
  auto json = Dlbench({"models", "--json"}, dir, dir / "r.db");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json models = nlohmann::json::parse(json.out);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& m : models) by_name[m["model"].get<std::string>()] = m;
  ASSERT_EQ(by_name.size(), 6u) << json.out;
  EXPECT_EQ(by_name["resnet50"]["parameters"], 25'557'032);
  EXPECT_EQ(by_name["mobilenet_v2"]["parameters"], 3'504'872);
  EXPECT_EQ(by_name["bert_base"]["parameters"], 109'483'778);
  // conv1 32 x 5 x 5 + 32, conv2 64 x 32 x 5 x 5 + 64, dense 3136 x 1024 + 1024, logits 1024 x 10 + 10;
  // the BN variant adds a weight and a bias per channel (2 x (32 + 64)).
  EXPECT_EQ(by_name["fashion_cnn"]["parameters"], 832 + 51'264 + 3'212'288 + 10'250);
  EXPECT_EQ(by_name["fashion_cnn_bn"]["parameters"], 832 + 51'264 + 3'212'288 + 10'250 + 192);
  EXPECT_NEAR(by_name["resnet50"]["forward_flops_per_sample"].get<double>() / 2e9, 4.089, 0.02 * 4.089);
  EXPECT_DOUBLE_EQ(by_name["resnet50"]["train_flops_per_sample"].get<double>(),
                   3 * by_name["resnet50"]["forward_flops_per_sample"].get<double>());
  EXPECT_EQ(by_name["resnet50"]["sizes"]["image_size"], 224);
  auto table = Dlbench({"models"}, dir, dir / "r.db");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("25.56 M"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("bert_base"), std::string::npos) << table.out;
}

// The plan's model table (config/model_rules.h) is what the runner builds: the same names, and
// for each the registry's size keys among the sizes the runner reports.
TEST(TorchE2E, ThePlansModelTableIsTheRunners) {
  TempDir dir("model_table");
  auto json = Dlbench({"models", "--json"}, dir, dir / "r.db");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  std::map<std::string, std::vector<std::string>> runner;
  for (const auto& m : nlohmann::json::parse(json.out)) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : m["sizes"].items()) {
      const auto& all = config::ModelSizeKeys();
      if (std::binary_search(all.begin(), all.end(), k)) keys.push_back(k);
    }
    std::sort(keys.begin(), keys.end());
    runner[m["model"].get<std::string>()] = keys;
  }
  std::map<std::string, std::vector<std::string>> table;
  for (const auto& m : config::TorchModelTable()) table[m.name] = m.size_keys;
  EXPECT_EQ(table, runner);
}

// A size key the model does not read is left out of its cells with a warning (so bert_base with
// image_size keeps its twin's identity), and an unknown model stops `plan` and `run` at its line.
TEST(TorchE2E, PlanDropsSizeKeysAModelIgnoresAndRefusesUnknownModels) {
  TempDir dir("model_rules");
  const std::string matrix = dir / "m.yaml";
  WriteText(
      matrix,
      "runner: torch\nmatrix:\n  model: [resnet50, bert_base]\n  image_size: [32]\n  batch_size: [1]\n");
  auto plan = Dlbench({"plan", matrix, "--json"}, dir, dir / "r.db");
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_NE(plan.err.find(matrix + ":4:3: warning: image_size does not apply to bert_base (it reads heads, "
                                   "hidden_size, layers, num_classes, seq_len, vocab_size)"),
            std::string::npos)
      << plan.err;
  for (const auto& c : nlohmann::json::parse(plan.out)) {
    const bool bert = c["params"]["model"] == "bert_base";
    EXPECT_EQ(c["params"].contains("image_size"), !bert) << c.dump();
  }
  WriteText(matrix, "runner: torch\nmatrix:\n  model: [resnet50, resnet5O]\n  batch_size: [1]\n");
  for (const char* command : {"plan", "run"}) {
    auto refused = Dlbench({command, matrix}, dir, dir / "r.db");
    EXPECT_EQ(refused.exit_code, 2) << command << refused.out << refused.err;
    EXPECT_NE(refused.err.find(matrix + ":3:3: error: model: unknown model 'resnet5O'"), std::string::npos)
        << command << refused.err;
  }
}

TEST(TorchE2E, FourModelsTrainAndInferThroughDlbenchRun) {
  TempDir dir("torch");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, R"(runner: torch
matrix:
  model: [resnet50, mobilenet_v2, bert_base, ssd_mobilenet]
  scenario: [infer, train]
  batch_size: [2]
  device: cpu
  precision: [fp32]
  threads: 1
include:
  - {model: resnet50, image_size: 64, base_width: 8}
  - {model: mobilenet_v2, image_size: 64, width_mult: 0.25}
  - {model: bert_base, layers: 1, hidden_size: 64, heads: 2, seq_len: 16, vocab_size: 1000}
  - {model: ssd_mobilenet, image_size: 128, width_mult: 0.25, num_classes: 5}
  # Cannot extend a combination without overwriting precision: a cell of its own.
  - {model: resnet50, scenario: train, precision: tf32}
timeout_s: 120
# Bounded by steps, not time: 12 steps whatever the machine's load (a 1 s ceiling left SSD with 4
# steps on a loaded 2-core machine, fewer than min_steps: outcome invalid). Under 20 steps the
# warm-up cut is min_warmup_steps, so at least 5 are measured.
measure:
  min_steps: 5
  max_steps: 12
  min_warmup_steps: 2
  min_time_s: 0
  max_time_s: 60
  target_rel_ci: 0.0001
)");
  auto run = Dlbench({"run", matrix, "--out", dir / "out"}, dir, db);
  auto store = store::OpenSqliteStore(db);
  ASSERT_TRUE(store.ok()) << run.err;
  store::CellQuery q;
  auto cells = (*store)->GetCells(1, q);
  ASSERT_TRUE(cells.ok());
  std::map<std::string, int> ok_by_model;
  bool saw_unsupported = false;
  for (const auto& c : *cells) {
    const std::string model = c.params["model"].get<std::string>();
    if (c.params.value("precision", std::string()) == "tf32") {
      // tf32 is a GPU matrix-unit mode: on the CPU it must be refused clearly.
      EXPECT_EQ(c.outcome, record::Outcome::kUnsupported) << c.message;
      saw_unsupported = true;
      continue;
    }
    EXPECT_EQ(c.outcome, record::Outcome::kOk) << c.label << ": " << c.message;
    if (c.outcome != record::Outcome::kOk) continue;
    ++ok_by_model[model];
    double sps = 0, flops = 0;
    for (const auto& m : c.metrics) {
      if (m.name == record::metric::kSamplesPerS) sps = m.value;
      if (m.name == record::metric::kAchievedFlopsPerS) flops = m.value;
    }
    EXPECT_GT(sps, 0) << c.label;
    EXPECT_FALSE(c.extras.contains("undeclared_metrics")) << c.label << ": " << c.extras.dump();
    EXPECT_GT(flops, 0) << c.label << ": FLOP/s comes from the model's FLOPs per sample";
    EXPECT_EQ(c.hello.value("runner", std::string()), "torch");
    EXPECT_TRUE(c.effective.is_object() && !c.effective.empty()) << c.label;
    // Where the memory goes (docs/memory.md): training holds gradients and optimizer state on top
    // of the weights and the batch; inference the weights and the batch only.
    const auto weights = record::MetricValue(c, record::metric::kWeightBytes);
    const auto expected = record::MetricValue(c, record::metric::kExpectedResidentBytes);
    const auto batch = record::MetricValue(c, record::metric::kInputBatchBytes);
    ASSERT_TRUE(weights && expected && batch) << c.label;
    if (c.params.value("scenario", std::string()) == "train") {
      EXPECT_GT(*expected, *weights + *batch) << c.label;
    } else {
      EXPECT_EQ(*expected, *weights + *batch) << c.label;
    }
    EXPECT_TRUE(record::MetricValue(c, record::metric::kMemoryPeakBytes).has_value()) << c.label;
  }
  EXPECT_TRUE(saw_unsupported);
  auto show = Dlbench({"show", "latest"}, dir, db);
  EXPECT_NE(show.out.find("\nMemory (expected from the model's tensors"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("bert_base"), std::string::npos) << show.out;
  for (const char* m : {"resnet50", "mobilenet_v2", "bert_base", "ssd_mobilenet"}) {
    EXPECT_EQ(ok_by_model[m], 2) << m << " must be stored for infer and train";
  }
  EXPECT_EQ(run.exit_code, 1) << "the unsupported cell makes run exit 1\n" << run.out << run.err;
}

// memory_cap on a cpu cell of the real runner (docs/memory.md "Memory cap"): a 1-layer BERT at
// seq_len 512 trains at batch 2 under 1 GiB; at batch 512 its attention scores alone are 512 x 2
// heads x 512 x 512 fp32 = 1 GiB, which the cap cannot hold. The cell ends `oom` under whichever
// mechanism its record says applied: under RLIMIT_DATA LibTorch's CPU allocator refuses and
// dlbench-torch reports its "tried to allocate N bytes" (runners/torch/failure.h), the
// orchestrator adds what the cap allowed; under cgroup v2 the kernel's OOM killer ends the runner
// and dlbench reads it from the cell's cgroup.
// A server cell far behind its schedule when STOP comes (a one-thread CPU serves about 1,200
// queries/s of this ResNet, asked for 5,000/s): its queue would take longer to serve than the
// orchestrator's grace after STOP. The runner drops what it has not started 2 s after STOP, so
// the cell ends ok and fell_behind (dropped_after_stop), not timeout. Before, it ended `timeout`
// here after 37 s, and on the H200 at 4,000/s from CUDA graphs (2026-12-05). On a machine loaded
// besides (CI's suite with the sanitizer trees building, session 29) the server falls further
// behind and the generator's limit on outstanding queries ends the window first
// (too_many_outstanding): the same verdict, its queries outstanding when the runner ended.
TEST(TorchE2E, AServerFarBehindItsScheduleAtStopEndsFellBehindNotTimeout) {
  TempDir dir("torch_behind");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, R"(runner: torch
matrix:
  model: resnet50
  base_width: 8
  image_size: 64
  device: cpu
  threads: 1
  scenario: infer
  load: server
  target_qps: 5000
  latency_bound_ms: 10
  batch_size: 8
timeout_s: 120
measure: {min_time_s: 2, max_time_s: 3}
)");
  auto run = Dlbench({"run", matrix}, dir, db);
  auto exported = Dlbench({"export", "latest", "--format", "json"}, dir, db);
  ASSERT_EQ(exported.exit_code, 0) << run.out << run.err << exported.err;
  const nlohmann::json cell = nlohmann::json::parse(exported.out).at("cells").at(0);
  EXPECT_EQ(cell.at("outcome"), "ok") << cell.at("message") << run.err;
  EXPECT_EQ(cell.at("verdict"), "fell_behind") << cell.dump();
  const std::string reasons = cell.at("verdict_reasons").dump();
  EXPECT_TRUE(
      reasons.find("still outstanding when the runner ended (dropped_after_stop)") != std::string::npos ||
      reasons.find("still outstanding when the runner ended (too_many_outstanding)") != std::string::npos)
      << reasons;
  EXPECT_GT(cell.at("extras").at("load").value("queries_outstanding_at_end", 0), 0)
      << cell.at("extras").dump();
}

TEST(TorchE2E, ACpuCellBeyondItsCapEndsOomWithTheRequestAndTheCap) {
  TempDir dir("torch_cap");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, R"(runner: torch
matrix:
  model: bert_base
  layers: 1
  hidden_size: 64
  heads: 2
  vocab_size: 1000
  seq_len: 512
  batch_size: [2, 512]
  scenario: train
  device: cpu
  precision: fp32
  threads: 1
  memory_cap: 1GiB
timeout_s: 120
measure: {min_steps: 3, max_steps: 4, min_warmup_steps: 1, min_time_s: 0, max_time_s: 60}
)");
  auto run = Dlbench({"run", matrix}, dir, db);
  auto exported = Dlbench({"export", "latest", "--format", "json"}, dir, db);
  ASSERT_EQ(exported.exit_code, 0) << run.out << run.err << exported.err;
  const nlohmann::json cells = nlohmann::json::parse(exported.out).at("cells");
  std::map<std::int64_t, nlohmann::json> by_batch;
  for (const nlohmann::json& c : cells) by_batch[c.at("params").at("batch_size").get<std::int64_t>()] = c;
  ASSERT_EQ(by_batch.size(), 2u) << run.out << run.err;
  const nlohmann::json& fits = by_batch.at(2);
  EXPECT_EQ(fits.at("outcome"), "ok") << fits.at("message");
  const nlohmann::json& over = by_batch.at(512);
  EXPECT_EQ(over.at("outcome"), "oom") << over.at("message");
  const nlohmann::json& cap = over.at("extras").at("memory_cap");
  EXPECT_EQ(cap.at("bytes"), std::int64_t{1} << 30);
  const std::string mechanism = cap.at("mechanism");
  EXPECT_EQ(fits.at("extras").at("memory_cap").at("mechanism"), mechanism);
  const std::string message = over.at("message");
  EXPECT_NE(message.find("memory_cap allowed 1073741824 bytes (1024 MiB, " + mechanism + ")"),
            std::string::npos)
      << message;
  if (mechanism == "RLIMIT_DATA") {
    EXPECT_NE(message.find("DefaultCPUAllocator"), std::string::npos) << message;
    EXPECT_NE(message.find("tried to allocate 1073741824 bytes"), std::string::npos) << message;
    EXPECT_EQ(over.at("extras").at("oom_requested_bytes"), std::int64_t{1} << 30) << over.at("extras").dump();
  } else {
    EXPECT_EQ(mechanism, "cgroup_v2_memory_max") << cap.dump();
    EXPECT_NE(message.find("the kernel's OOM killer ended"), std::string::npos) << message;
  }
}

// At the edge of a 1 GiB RLIMIT_DATA cap a tiny ResNet-50 (base_width 4, 32 px, training) hit two
// libraries that do not report a refused allocation (found by a boundary search, session 13;
// docs/memory.md "A crash under RLIMIT_DATA"):
// - batch 4492: creating a convolution-backward primitive, Xbyak's code buffer was refused, oneDNN
//   2.6 went on and wrote its first instruction to the null buffer: SIGSEGV (`crashed`);
// - batch 5064: OpenBLAS's first product (the fc layer, after the convolutions' activations) could
//   not get its 128 MiB work buffer and retried without end (`timeout` after timeout_s).
// Each cell ends `oom` now: the crash under the cap is read as one, and the runner makes OpenBLAS's
// buffers before the model. Whichever allocation is refused, LibTorch's allocator reports it or
// dlbench reads the crash.
TEST(TorchE2E, CpuCellsAtTheEdgeOfTheirCapEndOomNotCrashedOrTimeout) {
  TempDir dir("torch_cap_edge");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db";
  WriteText(matrix, R"(runner: torch
matrix:
  model: resnet50
  base_width: 4
  image_size: 32
  batch_size: [4492, 5064]
  scenario: train
  device: cpu
  precision: fp32
  threads: 1
  memory_cap: 1GiB
timeout_s: 30
measure: {min_steps: 1, max_steps: 2, min_warmup_steps: 0, min_time_s: 0, max_time_s: 20}
)");
  auto run = Dlbench({"run", matrix}, dir, db);
  auto exported = Dlbench({"export", "latest", "--format", "json"}, dir, db);
  ASSERT_EQ(exported.exit_code, 0) << run.out << run.err << exported.err;
  const nlohmann::json cells = nlohmann::json::parse(exported.out).at("cells");
  ASSERT_EQ(cells.size(), 2u) << run.out << run.err;
  for (const nlohmann::json& cell : cells) {
    const std::string batch = cell.at("params").at("batch_size").dump();
    EXPECT_EQ(cell.at("outcome"), "oom") << batch << ": " << cell.at("message");
    const std::string message = cell.at("message");
    const nlohmann::json& cap = cell.at("extras").at("memory_cap");
    const std::string mechanism = cap.at("mechanism");
    EXPECT_NE(message.find("memory_cap allowed 1073741824 bytes (1024 MiB, " + mechanism + ")"),
              std::string::npos)
        << batch << ": " << message;
    if (cap.contains("crash_taken_as_oom")) {
      EXPECT_EQ(mechanism, "RLIMIT_DATA") << cap.dump();
      EXPECT_NE(message.find("the runner died by " + cap.at("crash_taken_as_oom").get<std::string>() +
                             " under a 1024 MiB memory_cap (RLIMIT_DATA): taken as out of memory"),
                std::string::npos)
          << batch << ": " << message;
    }
  }
}

// DLBENCH_TORCH_PROFILE (runners/torch/step_profile.h): each step-loop cell writes its profile
// summary into the folder and its extras; its measured figures come from the loop before it. A
// value that is not a folder is stated in the cell's extras and the cell stands.
TEST(TorchE2E, AStepProfileIsWrittenAfterTheMeasuredLoopWhenTheEnvironmentAsks) {
  TempDir dir("torch_profile");
  const std::string matrix = dir / "m.yaml", db = dir / "r.db", folder = dir / "profiles";
  std::filesystem::create_directories(folder);
  WriteText(matrix, R"(runner: torch
matrix:
  model: bert_base
  layers: 1
  hidden_size: 32
  heads: 2
  seq_len: 16
  device: cpu
  threads: 1
  batch_size: 2
  scenario: [infer, train]
measure: {min_steps: 3, min_time_s: 0, max_time_s: 4}
)");
  auto run = RunCommand({Bin("dlbench"), "--db", db, "run", matrix}, dir,
                        {{"DLBENCH_TORCH_PROFILE", folder}, {"DLBENCH_TORCH_PROFILE_STEPS", "2"}});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  auto exported = Dlbench({"export", "latest", "--format", "json"}, dir, db);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const nlohmann::json cells = nlohmann::json::parse(exported.out).at("cells");
  ASSERT_EQ(cells.size(), 2u);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().filename().string().rfind("profile-", 0) == 0 && entry.path().extension() == ".json")
      ++files;
  }
  EXPECT_EQ(files, 2);
  for (const nlohmann::json& cell : cells) {
    ASSERT_EQ(cell.at("outcome"), "ok") << cell.dump();
    const nlohmann::json& profile = cell.at("extras").at("info").at("step_profile");
    EXPECT_EQ(profile.at("steps"), 2);
    EXPECT_GT(profile.at("wall_us_per_step").get<double>(), 0.0);
    // The host's operators are there on any LibTorch: at most 40 names, the longest first (which
    // ones make the cut depends on their timings, so no name is asserted but ATen's prefix).
    const nlohmann::json& ops = profile.at("host_ops");
    ASSERT_FALSE(ops.empty()) << profile.dump();
    EXPECT_LE(ops.size(), 40u);
    EXPECT_NE(ops.dump().find("\"aten::"), std::string::npos) << ops.dump();
    for (std::size_t i = 1; i < ops.size(); ++i) {
      EXPECT_GE(ops[i - 1].at("us_per_step").get<double>(), ops[i].at("us_per_step").get<double>())
          << ops.dump();
      EXPECT_GT(ops[i].at("calls_per_step").get<double>(), 0.0) << ops.dump();
    }
    const nlohmann::json written = nlohmann::json::parse(*ReadFile(profile.at("file").get<std::string>()));
    EXPECT_EQ(written.at("host_ops"), profile.at("host_ops"));
  }

  auto bad = RunCommand({Bin("dlbench"), "--db", db, "run", matrix, "--only", "scenario=infer"}, dir,
                        {{"DLBENCH_TORCH_PROFILE", matrix}});
  ASSERT_EQ(bad.exit_code, 0) << bad.out << bad.err;
  auto bad_export = Dlbench({"export", "latest", "--format", "json"}, dir, db);
  const nlohmann::json cell = nlohmann::json::parse(bad_export.out).at("cells").at(0);
  EXPECT_EQ(cell.at("outcome"), "ok") << cell.dump();
  EXPECT_NE(cell.at("extras").at("info").value("step_profile_error", "").find("not a directory"),
            std::string::npos)
      << cell.at("extras").dump();
}

}  // namespace
}  // namespace dlbench::e2e

// The registry and the runners agree: every bound, allowed value and format of every cell
// parameter a runner's scope holds is sent to the real runner binary through the protocol, and
// the runner must accept what the registry accepts (READY, or an ERROR that is not `invalid`: a
// support rule such as "no CUDA in this build") and answer ERROR `invalid` to what the registry
// rejects. The cases are generated from the registry, so a new parameter or a changed bound is
// covered without touching this file.
//
// The harness sends CONFIGURE and STOP in one write and closes its command pipe; a runner that
// accepts the cell finds STOP before building anything (the torch runner checks before it builds
// a model) or sends READY, so a case costs one process start.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/error.h"
#include "common/files.h"
#include "common/subprocess.h"
#include "config/load_rules.h"
#include "config/matrix.h"
#include "config/registry.h"
#include "orchestrator/process_tree.h"
#include "plan/plan.h"
#include "protocol/runner_session.h"
#include "protocol/wire.h"
#include "record/outcome.h"

#ifdef DLBENCH_HAVE_TORCH_RUNNER
#include "cell_options.h"  // runners/torch: the torch runner's CONFIGURE parser (no LibTorch)
#endif

namespace dlbench {
namespace {

using config::ParamSpec;
using config::ParamType;
using config::StringFormat;
using nlohmann::json;

// How a runner answered one CONFIGURE.
struct Answer {
  bool ready = false;
  std::optional<std::string> error_kind;  // ERROR's kind, when it sent one
  std::string error_message;
  ExitStatus exit;
  bool Accepted() const {
    return !error_kind || *error_kind != record::Name(record::RunnerErrorKind::kInvalid);
  }
  std::string Describe() const {
    if (ready) return "READY";
    if (error_kind) return "ERROR " + *error_kind + ": " + error_message;
    return "no answer, then " + exit.Describe();
  }
};

Result<Answer> Configure(const std::string& binary, const json& params) {
  constexpr int kRunnerReadsFd = 4;
  constexpr int kRunnerWritesFd = 3;
  signal(SIGPIPE, SIG_IGN);  // a runner that exits early shows up as a failed write
  // A runner's setsid child becomes this process's child when the runner exits, so it is found.
  if (Status st = orchestrator::BecomeSubreaper(); !st.ok()) return st.error();
  auto commands = MakePipe();
  if (!commands.ok()) return commands.error();
  auto messages = MakePipe();
  if (!messages.ok()) return messages.error();
  SpawnOptions options;
  options.argv = {binary};
  options.extra_env = {{protocol::kFdInEnv, std::to_string(kRunnerReadsFd)},
                       {protocol::kFdOutEnv, std::to_string(kRunnerWritesFd)}};
  options.fd_map = {{kRunnerReadsFd, commands->first}, {kRunnerWritesFd, messages->second}};
  auto child = Subprocess::Spawn(options);
  close(commands->first);
  close(messages->second);
  int to_runner = commands->second;
  const int from_runner = messages->first;
  if (!child.ok()) {
    close(to_runner);
    close(from_runner);
    return child.error();
  }
  Answer answer;
  protocol::FrameReader reader;
  const std::int64_t deadline = MonotonicNowNs() + SecondsToNs(120.0);
  bool answered = false;
  std::string failure;
  while (!answered && failure.empty()) {
    auto frame = reader.Next();
    if (!frame.ok()) {
      failure = "protocol: " + frame.error().message;
      break;
    }
    if (frame->has_value()) {
      auto body = protocol::DecodeJson(**frame);
      if (!body.ok()) {
        failure = "protocol: " + body.error().message;
        break;
      }
      switch ((*frame)->type) {
        case protocol::MessageType::kHello: {
          protocol::CellConfig config;
          config.params = params;
          config.limits.max_steps = 100;
          config.limits.max_time_s = 5.0;
          std::string out;
          protocol::AppendJsonFrame(out, protocol::MessageType::kConfigure,
                                    protocol::ConfigureToJson(config));
          // STOP in the same write (one pipe write below PIPE_BUF is read whole), so the runner
          // finds it beside CONFIGURE: an accepted cell stops before anything is built, whatever
          // the scheduling, instead of racing the close below.
          protocol::AppendJsonFrame(out, protocol::MessageType::kStop, {{"reason", "validation only"}});
          (void)protocol::WriteAll(to_runner, out);
          close(to_runner);
          to_runner = -1;
          break;
        }
        case protocol::MessageType::kReady:
          answer.ready = true;
          answered = true;
          break;
        case protocol::MessageType::kError:
          answer.error_kind = body->value("kind", std::string("?"));
          answer.error_message = body->value("message", std::string());
          answered = true;
          break;
        default:
          failure = std::string("unexpected ") + protocol::MessageTypeName((*frame)->type) + " before READY";
      }
      continue;
    }
    const std::int64_t left_ms = (deadline - MonotonicNowNs()) / 1'000'000;
    if (left_ms <= 0) {
      failure = "no READY, ERROR or end of file within 120 s";
      break;
    }
    pollfd p{from_runner, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left_ms, 1000))) <= 0) continue;
    auto n = protocol::ReadInto(from_runner, reader);
    if (!n.ok()) {
      failure = n.error().message;
      break;
    }
    if (*n == 0) break;  // the runner closed its end: it stopped without answering
  }
  if (to_runner >= 0) close(to_runner);
  close(from_runner);
  // A runner that answered has nothing more to say here; one that stopped by itself is reaped.
  answer.exit = answered || !failure.empty() ? child->Terminate(500) : child->Wait();
  // What the runner left behind (inject: child_holds_pipe, setsid_child) is ended as the driver
  // ends it: a lingering child holds this test's stdout, and CTest waits for that to close.
  (void)orchestrator::KillLeftovers(child->pid(), 2000);
  if (!failure.empty())
    return MakeError(ErrorKind::kProtocol, failure + " (runner " + answer.exit.Describe() + ")");
  return answer;
}

struct Case {
  json value;
  bool valid;
};

// One integral value as JSON: an integer when the bound is whole, so kInt specs get integers.
json IntValue(double v) { return json(static_cast<std::int64_t>(v)); }

// Just inside and just outside each bound of a number or integer, the allowed values of an
// enum, the documented shapes of a string format, and a value of the wrong type.
std::vector<Case> CasesFor(const ParamSpec& spec) {
  std::vector<Case> cases;
  const double inf = std::numeric_limits<double>::infinity();
  switch (spec.type) {
    case ParamType::kInt: {
      if (spec.min) {
        const double inside = spec.min->inclusive ? spec.min->value : spec.min->value + 1;
        cases.push_back({IntValue(inside), true});
        cases.push_back({IntValue(inside - 1), false});
      }
      if (spec.max) {
        const double inside = spec.max->inclusive ? spec.max->value : spec.max->value - 1;
        cases.push_back({IntValue(inside), true});
        cases.push_back({IntValue(inside + 1), false});
      }
      if (!spec.min && !spec.max) cases.push_back({json(0), true});
      cases.push_back({json(spec.min ? spec.min->value + 0.5 : 0.5), false});  // a fraction
      cases.push_back({json("1"), false});
      break;
    }
    case ParamType::kNumber: {
      if (spec.min) {
        const double at = spec.min->value;
        cases.push_back({json(spec.min->inclusive ? at : std::nextafter(at, inf)), true});
        cases.push_back({json(spec.min->inclusive ? std::nextafter(at, -inf) : at), false});
        if (spec.min->inclusive && std::floor(at) == at) cases.push_back({IntValue(at), true});  // an integer
      }
      if (spec.max) {
        const double at = spec.max->value;
        cases.push_back({json(spec.max->inclusive ? at : std::nextafter(at, -inf)), true});
        cases.push_back({json(spec.max->inclusive ? std::nextafter(at, inf) : at), false});
      }
      if (!spec.min && !spec.max) cases.push_back({json(0.5), true});
      cases.push_back({json("1.5"), false});
      break;
    }
    case ParamType::kEnum:
      for (const std::string& value : spec.allowed) cases.push_back({json(value), true});
      cases.push_back({json("no-such-" + spec.name), false});
      cases.push_back({json(1), false});
      break;
    case ParamType::kBool:
      cases.push_back({json(true), true});
      cases.push_back({json(false), true});
      cases.push_back({json("true"), false});
      cases.push_back({json(1), false});
      break;
    case ParamType::kString:
      switch (spec.format) {
        case StringFormat::kAny:
          cases.push_back({json("any text"), true});
          break;
        case StringFormat::kDevice:
          for (const std::string ok : {"cpu", "cuda", "cuda:0"}) cases.push_back({json(ok), true});
          cases.push_back({json("cuda:" + std::to_string(config::kMaxCudaIndex)), true});
          cases.push_back({json("cuda:" + std::to_string(config::kMaxCudaIndex + 1)), false});
          for (const std::string bad : {"gpu", "cuda:", "cuda:-1", "cuda:x", "CPU"})
            cases.push_back({json(bad), false});
          break;
        case StringFormat::kShapes:
          cases.push_back({json("B,3,224,224;B,16"), true});
          cases.push_back({json("B"), true});
          cases.push_back({json(" B , 4 ; 2 "), true});
          cases.push_back({json("B," + std::to_string(config::kMaxShapeDim)), true});
          cases.push_back({json("B," + std::to_string(config::kMaxShapeDim + 1)), false});
          for (const std::string bad : {"", "B,0", "B,-3", "B,x", "B,3;", "b,3"})
            cases.push_back({json(bad), false});
          break;
        case StringFormat::kDtypes:
          for (const std::string& dtype : config::KnownDtypes()) cases.push_back({json(dtype), true});
          cases.push_back({json(config::KnownDtypes().front() + " ; " + config::KnownDtypes().back()), true});
          for (const std::string bad : {"", "float", "float32;", "complex64"})
            cases.push_back({json(bad), false});
          break;
        case StringFormat::kBytes:
          for (const std::string ok : {"16GiB", "512 MiB", "1", "1TiB", "1099511627776", "4GB"})
            cases.push_back({json(ok), true});
          for (const std::string bad :
               {"", "0", "0GiB", "-1GiB", "1.5GiB", "1099511627777", "2TiB", "16gib", "GiB"})
            cases.push_back({json(bad), false});
          break;
        case StringFormat::kCudaAllocConf:
          for (const std::string ok :
               {"expandable_segments:True", "max_split_size_mb:128,garbage_collection_threshold:0.6"})
            cases.push_back({json(ok), true});
          for (const std::string bad : {"expandable_segments", "no_such_option:1", "max_split_size_mb:x"})
            cases.push_back({json(bad), false});
          break;
        case StringFormat::kPrecisions:
          for (const std::string ok : {"fp32", "fp32;bf16;int8"}) cases.push_back({json(ok), true});
          for (const std::string bad : {"", "fp33", "fp32;fp32"}) cases.push_back({json(bad), false});
          break;
        case StringFormat::kPrecisionTolerances:
          for (const std::string ok : {"bf16=0.99", "bf16=1;int8=0"}) cases.push_back({json(ok), true});
          for (const std::string bad : {"", "bf16", "bf16=1.5", "bf16=0.9;bf16=0.8", "fp33=0.9"})
            cases.push_back({json(bad), false});
          break;
        case StringFormat::kPrecisionDiffTolerances:
          for (const std::string ok : {"bf16=0.05", "bf16=0;int8=0.5"}) cases.push_back({json(ok), true});
          for (const std::string bad : {"", "bf16", "bf16=-1", "bf16=0.1;bf16=0.2", "fp33=0.1"})
            cases.push_back({json(bad), false});
          break;
      }
      cases.push_back({json(1), false});
      break;
    case ParamType::kMapping:
    case ParamType::kMappingList:
    case ParamType::kRunner:
      break;
  }
  cases.push_back({json(nullptr), false});
  return cases;
}

std::string RunnerBinary(const std::string& runner) {
  return std::string(DLBENCH_BIN_DIR) + "/dlbench-" + runner;
}

// The smallest cell a runner accepts: its required parameters, with values from the registry's
// own cases.
json BaseCell(const std::string& runner) {
  json base = json::object();
  for (const ParamSpec* spec : config::CellParamsForRunner(runner)) {
    if (spec->required_with == runner) base[spec->name] = CasesFor(*spec).front().value;
  }
  return base;
}

struct Key {
  std::string runner;
  const ParamSpec* spec;
};

// gtest prints the parameter of a failing case; the struct's bytes say nothing.
void PrintTo(const Key& key, std::ostream* os) { *os << key.runner << "/" << key.spec->name; }

std::vector<Key> Keys() {
  std::vector<std::string> runners = {"null"};
#ifdef DLBENCH_HAVE_TORCH_RUNNER
  runners.push_back("torch");
#endif
  std::vector<Key> keys;
  for (const std::string& runner : runners) {
    for (const ParamSpec* spec : config::CellParamsForRunner(runner)) keys.push_back({runner, spec});
  }
  return keys;
}

// The runner's answer to one case. dlbench-null starts in milliseconds, so it answers every case
// through the protocol. dlbench-torch takes a second or more to start (LibTorch's libraries), so
// its parser (ParseTorchCell, the function the binary runs on CONFIGURE before anything else)
// answers every case in this process, and the binary answers the first invalid case of each key
// through the protocol: that proves the binary reports the parser's verdict as ERROR `invalid`
// naming the parameter, at a process start per key instead of per case.
Result<Answer> Ask(const std::string& runner, const json& params, bool valid, bool first_invalid) {
#ifdef DLBENCH_HAVE_TORCH_RUNNER
  if (runner == "torch" && (valid || !first_invalid)) {
    Answer answer;
    Result<torchrunner::TorchCell> cell = torchrunner::ParseTorchCell(params);
    if (!cell.ok()) {
      answer.error_kind = cell.error().kind == ErrorKind::kInvalidInput
                              ? record::Name(record::RunnerErrorKind::kInvalid)
                              : record::Name(record::RunnerErrorKind::kUnsupported);
      answer.error_message = cell.error().message;
    } else {
      answer.ready = true;  // the parser accepted it: the binary would go on to build the cell
    }
    return answer;
  }
#else
  (void)valid;
  (void)first_invalid;
#endif
  return Configure(RunnerBinary(runner), params);
}

// dlbench-null serves a cell with `load` (runners/null/virtual_load.h), and a load key applies only
// with a load whose scenario it belongs to (a rule across keys, config::CheckLoadCell): a load key's
// case is sent in the first scenario that rule accepts it in, with the server's target_qps and,
// for target_qps (whose `max` needs it), a latency bound.
void AddLoadContext(const std::string& key, const json& first_valid, json& params) {
  params["scenario"] = "infer";
  if (key == "load") {
    if (first_valid == "server") params["target_qps"] = 100;
    return;
  }
  for (const char* load : {"single_stream", "multi_stream", "server", "offline"}) {
    config::Combination cell = {{"scenario", "infer"}, {"load", load}, {key, first_valid}};
    if (std::string(load) == "server" && key != "target_qps") cell["target_qps"] = 100;
    if (key == "target_qps") cell["latency_bound_ms"] = 10;
    if (!config::CheckLoadCell(cell).empty()) continue;
    for (const auto& [name, value] : cell) {
      if (name != key) params[name] = value;
    }
    return;
  }
}

class RunnerAgreesWithRegistry : public ::testing::TestWithParam<Key> {};

TEST_P(RunnerAgreesWithRegistry, OnEveryBoundValueAndType) {
  const Key& key = GetParam();
  const std::vector<Case> cases = CasesFor(*key.spec);
  ASSERT_FALSE(cases.empty());
  bool first_invalid = true;
  for (const Case& c : cases) {
    json params = BaseCell(key.runner);
    params[key.spec->name] = c.value;
    // world_size other than 1 and the ddp keys need strategy ddp (a rule across keys, kept in the
    // runner); a validation-only CONFIGURE is stopped before the rank would join its group.
    if (key.runner == "torch" && (key.spec->name == "world_size" || key.spec->name == "ddp_mode" ||
                                  key.spec->name == "backend" || key.spec->name == "bucket_cap_bytes"))
      params["strategy"] = "ddp";
    // allreduce_bytes is model allreduce's, which is a ddp cell.
    if (key.runner == "torch" && key.spec->name == "allreduce_bytes") {
      params["model"] = "allreduce";
      params["strategy"] = "ddp";
    }
    // data: jpeg_dir and tfrecord read data_path (a rule across keys; the path is opened later).
    if (key.runner == "torch" && key.spec->name == "data") params["data_path"] = "/nonexistent/data";
    // The precision tolerances check an infer cell's evaluation outputs; eval_precisions is a
    // converge cell's (rules across keys, kept in the runner).
    if (key.runner == "torch" && (key.spec->name == "min_agreement" || key.spec->name == "max_abs_diff" ||
                                  key.spec->name == "max_mean_abs_diff"))
      params["scenario"] = "infer";
    if (key.runner == "torch" && key.spec->name == "eval_precisions") {
      params["scenario"] = "converge";
      params["model"] = "fashion_cnn";
    }
    // pipeline_only needs a pipeline: a host-fed data source.
    if (key.runner == "torch" && key.spec->name == "pipeline_only") params["data"] = "host";
    if (key.runner == "null" && config::CheckLoadCell({{key.spec->name, cases.front().value}}).size() == 1 &&
        config::CheckLoadCell({{key.spec->name, cases.front().value}})[0].key == key.spec->name) {
      AddLoadContext(key.spec->name, cases.front().value, params);
      if (key.spec->name == "load" && c.value == "server") params["target_qps"] = 100;
    }
    // inject: wrong_type names the field it sends with the wrong type (another rule across keys).
    if (key.runner == "null" && key.spec->name == "inject" && c.value == "wrong_type")
      params["fault_field"] = "READY.effective";
    // The registry's own verdict first: the cases must mean what they say.
    EXPECT_EQ(config::ValidateParamValue(*key.spec, c.value).ok(), c.valid)
        << key.spec->name << " = " << c.value.dump() << ": the case generator and the registry disagree";
    // The null runner sleeps setup_ms before READY: its largest valid value (an hour) is judged
    // by the registry's verdict above, not by waiting for it.
    if (key.runner == "null" && key.spec->name == "setup_ms" && c.valid && c.value.is_number() &&
        c.value.get<double>() > 1000)
      continue;
    Result<Answer> answer = Ask(key.runner, params, c.valid, first_invalid);
    // Some injected faults break the conversation before READY (no_hello, wrong_protocol, ...):
    // the runner accepted the value and then did what it says. A rejected value still shows as
    // ERROR invalid below.
    if (!answer.ok() && c.valid && key.runner == "null" && key.spec->name == "inject") continue;
    ASSERT_TRUE(answer.ok()) << key.runner << " " << params.dump() << ": " << answer.error().message;
    if (c.valid) {
      EXPECT_TRUE(answer->Accepted()) << "registry accepts " << params.dump() << " but runner " << key.runner
                                      << " answered " << answer->Describe();
      if (!answer->ready && !answer->error_kind) {
        EXPECT_TRUE(answer->exit.success()) << answer->exit.Describe();
      }
    } else {
      first_invalid = false;
      EXPECT_FALSE(answer->Accepted()) << "registry rejects " << params.dump() << " but runner " << key.runner
                                       << " answered " << answer->Describe();
      EXPECT_NE(answer->error_message.find("'" + key.spec->name + "'"), std::string::npos)
          << "the message names the parameter: " << answer->error_message;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, RunnerAgreesWithRegistry, ::testing::ValuesIn(Keys()),
                         [](const ::testing::TestParamInfo<Key>& info) {
                           return info.param.runner + "_" + info.param.spec->name;
                         });

class RunnerCells : public ::testing::TestWithParam<std::string> {};

// What `dlbench run` sends: a planned cell with every default filled in.
TEST_P(RunnerCells, AcceptThePlannedDefaultCell) {
  const std::string& runner = GetParam();
  std::string yaml = "runner: " + runner + "\nmatrix:\n";
  json base = BaseCell(runner);
  // The plan checks the torch runner's model names (config/model_rules.h): a real one.
  if (runner == "torch") base["model"] = "resnet50";
  for (const auto& [name, value] : base.items()) yaml += "  " + name + ": " + value.dump() + "\n";
  if (base.empty()) yaml += "  batch_size: 1\n";
  Result<config::Matrix> matrix = config::ParseMatrix(yaml, "m.yaml");
  ASSERT_TRUE(matrix.ok()) << matrix.error().message;
  Result<plan::Plan> planned = plan::Expand(*matrix);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  json params = json::object();
  for (const auto& [name, value] : planned->cells.at(0).params) params[name] = value;
  Result<Answer> answer = Configure(RunnerBinary(runner), params);
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_TRUE(answer->Accepted()) << params.dump() << ": " << answer->Describe();
}

TEST_P(RunnerCells, RejectAMissingRequiredParameter) {
  const std::string& runner = GetParam();
  for (const ParamSpec* spec : config::CellParamsForRunner(runner)) {
    if (spec->required_with != runner) continue;
    json params = BaseCell(runner);
    params.erase(spec->name);
    Result<Answer> answer = Configure(RunnerBinary(runner), params);
    ASSERT_TRUE(answer.ok()) << answer.error().message;
    EXPECT_FALSE(answer->Accepted()) << spec->name << " missing: " << answer->Describe();
    EXPECT_NE(answer->error_message.find("'" + spec->name + "'"), std::string::npos) << answer->error_message;
  }
}

// A key of another runner's scope, and a key no runner has, are errors, as in the matrix file.
TEST_P(RunnerCells, RejectKeysOutsideTheirScope) {
  const std::string& runner = GetParam();
  std::vector<std::string> foreign = {"no_such_parameter"};
  for (const ParamSpec& spec : config::Registry()) {
    if (spec.section == config::ParamSection::kCell && !config::ScopeValidForRunner(spec.scope, runner)) {
      foreign.push_back(spec.name);
      break;
    }
  }
  ASSERT_EQ(foreign.size(), 2u) << "the registry has a cell parameter outside runner " << runner
                                << "'s scope";
  for (const std::string& name : foreign) {
    json params = BaseCell(runner);
    params[name] = 1;
    Result<Answer> answer = Configure(RunnerBinary(runner), params);
    ASSERT_TRUE(answer.ok()) << answer.error().message;
    EXPECT_FALSE(answer->Accepted()) << name << ": " << answer->Describe();
    EXPECT_NE(answer->error_message.find("'" + name + "'"), std::string::npos) << answer->error_message;
  }
}

// `dlbench run` and `dlbench env` start the runner once to read its HELLO, then close the command
// pipe (docs/protocol.md): the runner must exit 0 and say nothing, since its stderr is the user's
// terminal there. dlbench-torch printed "dlbench: error: dlbench-torch: the orchestrator closed
// the protocol pipe before CONFIGURE" and exited 1 whenever it got there before the probe's SIGTERM.
// Here the probe waits for the runner to exit by itself.
TEST_P(RunnerCells, AHelloProbeEndsTheRunnerWithStatusZeroAndNothingOnStderr) {
  constexpr int kRunnerReadsFd = 4;
  constexpr int kRunnerWritesFd = 3;
  signal(SIGPIPE, SIG_IGN);
  auto commands = MakePipe();
  auto messages = MakePipe();
  ASSERT_TRUE(commands.ok() && messages.ok());
  const std::string err_path = ::testing::TempDir() + "/probe-" + GetParam() + ".stderr";
  SpawnOptions options;
  options.argv = {RunnerBinary(GetParam())};
  options.extra_env = {{protocol::kFdInEnv, std::to_string(kRunnerReadsFd)},
                       {protocol::kFdOutEnv, std::to_string(kRunnerWritesFd)}};
  options.fd_map = {{kRunnerReadsFd, commands->first}, {kRunnerWritesFd, messages->second}};
  options.stderr_path = err_path;
  auto child = Subprocess::Spawn(options);
  close(commands->first);
  close(messages->second);
  ASSERT_TRUE(child.ok()) << child.error().message;
  protocol::FrameReader reader;
  bool hello = false;
  const std::int64_t deadline = MonotonicNowNs() + SecondsToNs(120.0);
  while (!hello && MonotonicNowNs() < deadline) {
    auto frame = reader.Next();
    ASSERT_TRUE(frame.ok()) << frame.error().message;
    if (frame->has_value()) {
      EXPECT_EQ((*frame)->type, protocol::MessageType::kHello);
      hello = true;
      break;
    }
    pollfd p{messages->first, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    auto n = protocol::ReadInto(messages->first, reader);
    ASSERT_TRUE(n.ok()) << n.error().message;
    if (*n == 0) break;
  }
  close(commands->second);  // EOF before CONFIGURE, as the probe does
  // The runner's end of the message pipe closes when it exits; wait for that, bounded.
  bool ended = false;
  while (!ended && MonotonicNowNs() < deadline) {
    pollfd p{messages->first, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    auto n = protocol::ReadInto(messages->first, reader);
    ended = !n.ok() || *n == 0;
  }
  close(messages->first);
  const ExitStatus exit = ended ? child->Wait() : child->Terminate(500);
  (void)orchestrator::KillLeftovers(child->pid(), 2000);
  EXPECT_TRUE(hello);
  EXPECT_TRUE(ended) << "the runner did not exit within 120 s of the end of its command pipe";
  EXPECT_TRUE(exit.success()) << exit.Describe();
  auto err = ReadFile(err_path);
  ASSERT_TRUE(err.ok()) << err.error().message;
  EXPECT_EQ(*err, "") << "the runner's stderr";
  std::remove(err_path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Registry, RunnerCells,
                         ::testing::Values("null"
#ifdef DLBENCH_HAVE_TORCH_RUNNER
                                           ,
                                           "torch"
#endif
                                           ));

}  // namespace
}  // namespace dlbench

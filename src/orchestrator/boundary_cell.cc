#include "orchestrator/boundary_cell.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/registry.h"
#include "orchestrator/memory_cap.h"
#include "orchestrator/probe_journal.h"
#include "orchestrator/runner_pool.h"
#include "record/metrics.h"

namespace dlbench::orchestrator {
namespace {

namespace metric = record::metric;

constexpr const char* kBatchSize = "batch_size";
constexpr const char* kSamplesPerStep = "samples_per_step";
constexpr const char* kMax = "max";

// The found value's measured run runs longer than its probes (boundary_probe_steps steps), and
// memory that grows over steps (the caching allocator's fragmentation, cuDNN's workspaces for the
// algorithms its autotuner picks) can run it out where the probes fit: on an H200 (2026-12-06,
// ResNet-50 bf16 training under memory_cap 16GiB) the probes fit at batch 373 and the measured run
// there ended `oom`. Such a value does not fit; the measured run steps down by 5% at a time, at
// most kMaxMeasuredStepDowns times, and each `oom` it met is listed with the probes.
constexpr double kMeasuredStepDown = 0.95;
constexpr int kMaxMeasuredStepDowns = 3;
// A probe's max_time_s: none that a probe reaches (a week); the cell's timeout_s bounds it.
constexpr double kProbeMaxTimeS = 7 * 24 * 3600.0;

// The metrics of a search over `key`: the largest value that fit and the smallest that did not.
struct KeyMetrics {
  std::string_view found;
  std::string_view first_failing;
  const char* log_tag;  // the probes' log names: cell-0003.probe-bs16.stderr.log
};
KeyMetrics MetricsOf(const std::string& key) {
  if (key == "seq_len") return {metric::kBoundarySeqLen, metric::kBoundaryFirstFailingSeqLen, "seq"};
  if (key == "image_size") return {metric::kBoundaryImageSize, metric::kBoundaryFirstFailingImageSize, "img"};
  return {metric::kBoundaryBatchSize, metric::kBoundaryFirstFailingBatchSize, "bs"};
}

bool IsMax(const plan::Cell& cell, const char* key) {
  const auto it = cell.params.find(key);
  return it != cell.params.end() && it->second.is_string() && it->second.get<std::string>() == kMax;
}

std::int64_t IntParam(const plan::Cell& cell, const char* key, std::int64_t fallback) {
  const auto it = cell.params.find(key);
  return it != cell.params.end() && it->second.is_number_integer() ? it->second.get<std::int64_t>()
                                                                   : fallback;
}

// The cell at one value of the searched key. samples_per_step follows batch_size when it took its
// value from it.
plan::Cell AtValue(const plan::Cell& cell, const std::string& key, std::int64_t value) {
  plan::Cell at = cell;
  at.params[key] = value;
  if (key == kBatchSize && IsMax(cell, kSamplesPerStep)) at.params[kSamplesPerStep] = value;
  return at;
}

// The peak memory a record shows: the device's allocator peak, else the host's peak RSS, else
// (dlbench-null's memory model) the modelled need. Absent when the runner reported none.
nlohmann::json PeakMemory(const record::CellRecord& rec) {
  for (std::string_view name :
       {record::memory::kDeviceAllocatedPeakBytes, record::memory::kHostPeakRssBytes}) {
    if (const std::optional<double> v = record::MetricValue(rec, name); v && *v > 0) {
      return {{"bytes", *v}, {"metric", std::string(name)}};
    }
  }
  if (rec.effective.contains("memory_model_bytes") && rec.effective["memory_model_bytes"].is_number()) {
    return {{"bytes", rec.effective["memory_model_bytes"]}, {"metric", "memory_model_bytes"}};
  }
  if (rec.extras.contains("oom_requested_bytes")) {
    return {{"requested_bytes", rec.extras["oom_requested_bytes"]}};
  }
  return nullptr;
}

// The peak a memory-guided search draws its line through: what the cap bounds. On CUDA that is
// the caching allocator's reserved peak (memory_cap is its fraction of the device, which counts
// reserved blocks, not only allocated ones), else the peak PeakMemory shows.
std::optional<double> GuidePeak(const record::CellRecord& rec) {
  if (const std::optional<double> v = record::MetricValue(rec, record::memory::kDeviceReservedPeakBytes);
      v && *v > 0) {
    return v;
  }
  const nlohmann::json memory = PeakMemory(rec);
  if (memory.is_object() && memory.contains("bytes") && memory["bytes"].is_number()) {
    return memory["bytes"].get<double>();
  }
  return std::nullopt;
}

// extras.boundary_search.guide: the cap the guide aims at; where the guesses aimed below it (a
// probe's process: AppliedCap::Usable), that too, and where the seeds' first guess did (the seeds'
// device less its context), that.
nlohmann::json GuideJson(double cap, std::optional<double> seed_limit,
                         const std::vector<record::CellRecord>& probes) {
  double aimed = cap;
  for (const record::CellRecord& p : probes) {
    if (const std::optional<AppliedCap> applied = AppliedCapOf(p)) aimed = std::min(aimed, applied->Usable());
  }
  nlohmann::json guide = {{"limit_bytes", cap}};
  if (aimed < cap) guide["aimed_bytes"] = aimed;
  if (seed_limit && *seed_limit < cap) guide["seed_aimed_bytes"] = *seed_limit;
  return guide;
}

// Which process ran a probe: its pid and, in a shared process, the how-many-th cell it served.
nlohmann::json ProcessOf(const record::CellRecord& rec) {
  if (rec.extras.contains("runner_process") && rec.extras["runner_process"].contains("pid")) {
    const nlohmann::json& p = rec.extras["runner_process"];
    return {{"pid", p["pid"]},
            {"cell_of_process", p.value("cell_of_process", 1)},
            {"reuse", p.value("reuse", "")}};
  }
  if (rec.hello.is_object() && rec.hello.contains("pid"))
    return {{"pid", rec.hello["pid"]}, {"cell_of_process", 1}};
  return nullptr;
}

// Under boundary_probe_process: shared, the measured run goes on in the process its probes used,
// which may hold what earlier cells left (the caching allocator's segments after their `oom`s): on
// an H100 (session 23) SSD-MobileNet training fit at 929 as a probe and ended `oom` at 929 in the
// same process. Such an `oom` says nothing about a longer run: the same value runs once more in a
// fresh process before any step down (RunBoundarySearch).
bool RanAfterOtherCells(const record::CellRecord& rec) {
  const nlohmann::json process = ProcessOf(rec);
  return process.is_object() && process.value("cell_of_process", 1) > 1;
}

// Where a probe's time went, so a slow search can be told apart (issue 13: searches of 10-150 s):
// its wall time as the orchestrator saw it, the runner's start to HELLO (0 for a kept process)
// and HELLO to the first step (the model, its batch and optimizer built, CellTimeline's setup).
// Each only where known.
nlohmann::json ProbeTimes(const record::CellRecord& rec) {
  nlohmann::json times = nlohmann::json::object();
  if (rec.started_wall_ns > 0 && rec.finished_wall_ns >= rec.started_wall_ns)
    times["wall_s"] = static_cast<double>(rec.finished_wall_ns - rec.started_wall_ns) * 1e-9;
  if (const auto v = record::MetricValue(rec, record::metric::kTimeToHelloS)) times["hello_s"] = *v;
  // The setup figure under the metric's own name (setup_s).
  if (const auto v = record::MetricValue(rec, record::metric::kSetupS))
    times[std::string(record::metric::kSetupS)] = *v;
  return times;
}

bool StringParamIs(const plan::Cell& cell, const char* key, const char* value) {
  const auto it = cell.params.find(key);
  return it != cell.params.end() && it->second.is_string() && it->second.get<std::string>() == value;
}

// The first line of a message: a probe's stderr tail stays in its logs.
std::string FirstLine(const std::string& message) { return message.substr(0, message.find('\n')); }

// A probe that ended ok after fewer steps than boundary_probe_steps answers only for the steps it
// ran (the memory of the steps after was never asked for): the number it ran, else nothing. Only a
// step-loop record that counts its steps is judged; a load or converge cell ends by its own rules.
std::optional<std::int64_t> ShortProbeSteps(const plan::Cell& cell, const record::CellRecord& rec,
                                            std::int64_t probe_steps) {
  if (rec.outcome != record::Outcome::kOk || rec.extras.contains("load")) return std::nullopt;
  const auto scenario = cell.params.find("scenario");
  if (scenario != cell.params.end() && scenario->second == "converge") return std::nullopt;
  const std::optional<double> warmup = record::MetricValue(rec, metric::kWarmupSteps);
  const std::optional<double> measured = record::MetricValue(rec, metric::kMeasuredSteps);
  if (!warmup || !measured) return std::nullopt;
  const auto steps = static_cast<std::int64_t>(*warmup + *measured);
  return steps < probe_steps ? std::optional<std::int64_t>(steps) : std::nullopt;
}

}  // namespace

std::string BoundarySearchKey(const plan::Cell& cell) {
  for (const char* key : config::kBoundarySearchKeys) {
    if (IsMax(cell, key)) return key;
  }
  return "";
}

bool IsBoundarySearch(const plan::Cell& cell) { return !BoundarySearchKey(cell).empty(); }

stats::BoundarySearchSettings BoundarySettings(const plan::Cell& cell) {
  const std::string key = BoundarySearchKey(cell);
  stats::BoundarySearchSettings s;
  s.min_value =
      IntParam(cell, "boundary_min", key == "image_size" ? config::kDefaultBoundaryMinImageSize : 1);
  const config::ParamSpec* spec = config::FindParam(key, config::ParamSection::kCell);
  s.max_value =
      IntParam(cell, "boundary_max",
               spec != nullptr && spec->max ? static_cast<std::int64_t>(spec->max->value) : 1 << 20);
  // The plan refuses boundary_min above boundary_max; a default start above a small boundary_max
  // starts at the maximum instead.
  s.min_value = std::min(s.min_value, s.max_value);
  s.max_probes =
      static_cast<std::size_t>(IntParam(cell, "boundary_max_probes", config::kDefaultBoundaryMaxProbes));
  // The plan checked the range [0, 0.5].
  if (const auto it = cell.params.find("boundary_resolution");
      it != cell.params.end() && it->second.is_number())
    s.resolution = it->second.get<double>();
  // boundary_guide: peak_memory aims at the cap with the fitting probes' peaks; without a cap there
  // is no limit to aim at, and the search doubles and bisects.
  if (StringParamIs(cell, "boundary_guide", "peak_memory")) {
    if (const std::optional<std::int64_t> cap = CellMemoryCap(cell))
      s.memory_limit_bytes = static_cast<double>(*cap);
  }
  // boundary_seed: other_caps needs the guide's limit to aim at, as the guide does.
  s.seeded = s.memory_limit_bytes.has_value() && StringParamIs(cell, "boundary_seed", "other_caps");
  return s;
}

namespace {

// What a journal of this search's probes must have been written for (probe_journal.h): the cell,
// the searched key, the search's settings and seeds, the probes' steps.
nlohmann::json JournalFingerprint(const plan::Cell& cell, const std::string& key,
                                  const stats::BoundarySearchSettings& s, std::int64_t probe_steps) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : cell.params) params[k] = v;
  nlohmann::json seeds = nlohmann::json::array();
  for (const stats::GuidePoint& p : s.seeds) seeds.push_back({p.value, p.peak_bytes});
  auto optional = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  return {{"cell_id", cell.id},
          {"params", std::move(params)},
          {"key", key},
          {"min", s.min_value},
          {"max", s.max_value},
          {"max_probes", s.max_probes},
          {"resolution", s.resolution},
          {"memory_limit_bytes", optional(s.memory_limit_bytes)},
          {"seed_limit_bytes", optional(s.seed_limit_bytes)},
          {"seeded", s.seeded},
          {"seeds", std::move(seeds)},
          {"probe_steps", probe_steps}};
}

}  // namespace

record::CellRecord RunBoundarySearch(const plan::Cell& cell, const CellRunOptions& options,
                                     const RunCellFn& run_cell, const BoundarySeeds& seeds) {
  stats::BoundarySearchSettings settings = BoundarySettings(cell);
  if (settings.seeded) {
    settings.seeds = seeds.points;
    // The seeds' device less its context: what the seeds' own first guess aims at. The guesses
    // after it aim at what this search's probes say their process can hold.
    if (seeds.device_usable_bytes && *seeds.device_usable_bytes < *settings.memory_limit_bytes)
      settings.seed_limit_bytes = *seeds.device_usable_bytes;
  }
  const std::int64_t probe_steps = IntParam(cell, "boundary_probe_steps", config::kDefaultBoundaryProbeSteps);
  // A probe asks one thing: do probe_steps steps run without running out of memory? It is not a
  // measurement, so none of the measure block's minimums apply: with the defaults (min_steps 10,
  // min_warmup_steps 2) a 5-step probe ended `invalid` for too little data and stopped the search
  // at its first probe (seen on the H200, 2026-12-02). Any step after the warm-up cut is enough.
  // Nor may the measure block's max_time_s end a probe before its steps: a probe stopped after
  // its first step answers for one step, and memory that the second step takes (the optimizer's
  // state, the caching allocator's second block) was never asked for. On a loaded CI machine
  // (session 30, MobileNetV2 training on the CPU under a 2 GiB RLIMIT_DATA) a first step over
  // max_time_s (15 s) made batch 995 "fit"; every measured run from 995 down to 852 then ended
  // `oom` in its second step and the search found nothing. Only probe_steps, or the cell's
  // timeout_s, end a probe.
  CellRunOptions probe_options = options;
  probe_options.measure.max_steps = probe_steps;
  probe_options.measure.min_steps = 1;
  probe_options.measure.min_warmup_steps = 0;
  probe_options.measure.min_time_s = 0;
  probe_options.measure.max_time_s = kProbeMaxTimeS;
  // boundary_probe_process: shared: the probes and the measured run take their processes from a
  // pool (the run's under --runner-reuse, else the search's own), so a process serves probe after
  // probe while they fit and, where the runner says its oom left it usable, after an oom too.
  // fresh: a process each, as options.pool is null then.
  RunnerPool own_pool(options.exit_grace_s);
  CellRunOptions measured_options = options;
  const bool shared = SharesProbeProcess(cell);
  if (shared) {
    RunnerPool* pool = options.pool != nullptr ? options.pool : &own_pool;
    probe_options.pool = pool;
    measured_options.pool = pool;
    // A CUDA graph's capture interrupted by an oom is not a state to go on from.
    const auto graph = cell.params.find("cuda_graph");
    probe_options.keep_after_usable_oom =
        !(graph != cell.params.end() && graph->second.is_boolean() && graph->second.get<bool>());
  } else {
    probe_options.pool = nullptr;
    measured_options.pool = nullptr;
  }

  const std::string key = BoundarySearchKey(cell);
  const KeyMetrics names = MetricsOf(key);
  ProbeJournal journal(options.log_dir, cell.index, JournalFingerprint(cell, key, settings, probe_steps));
  std::vector<record::CellRecord> probes;
  std::vector<bool> resumed;             // per probe: its record came from the journal
  std::optional<std::size_t> other_end;  // the probe whose outcome was neither ok nor oom
  auto probe = [&](std::int64_t value) {
    probe_options.log_suffix = fmt::format(".probe-{}{}", names.log_tag, value);
    std::optional<record::CellRecord> kept = journal.Next(value);
    resumed.push_back(kept.has_value());
    if (kept) {
      probes.push_back(std::move(*kept));
    } else {
      probes.push_back(run_cell(AtValue(cell, key, value), probe_options));
      if (const std::optional<std::int64_t> ran = ShortProbeSteps(cell, probes.back(), probe_steps)) {
        probes.back().outcome = record::Outcome::kInvalid;
        probes.back().message = fmt::format(
            "the probe ran {} of its {} steps (it stopped: {}): it answers only for the steps it ran", *ran,
            probe_steps, probes.back().stop_reason.empty() ? "no reason given" : probes.back().stop_reason);
      }
      journal.Add(value, probes.back());
    }
    const record::Outcome outcome = probes.back().outcome;
    stats::ProbeAnswer answer{outcome == record::Outcome::kOk, std::nullopt};
    if (outcome != record::Outcome::kOk && outcome != record::Outcome::kOom) {
      // It says nothing about memory: the search ends on it (probe_failed) without counting it as a
      // failure to fit.
      other_end = probes.size() - 1;
      answer.inconclusive = true;
    }
    if (answer.passed) answer.peak_bytes = GuidePeak(probes.back());
    if (const std::optional<AppliedCap> applied = AppliedCapOf(probes.back()))
      answer.limit_bytes = applied->Usable();
    return answer;
  };
  // Ctrl-C ends the search as `stopped`; any other inconclusive probe as `probe_failed`.
  const stats::BoundarySearchResult result = stats::SearchBoundary(
      settings, std::function<stats::ProbeAnswer(std::int64_t)>(probe),
      [&] { return other_end.has_value() && probes[*other_end].outcome == record::Outcome::kInterrupted; });

  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < probes.size(); ++i) {
    std::optional<double> guide_peak;
    if (settings.memory_limit_bytes && result.probes[i].passed) guide_peak = GuidePeak(probes[i]);
    list.push_back({{key, result.probes[i].value},
                    {"outcome", std::string(record::Name(probes[i].outcome))},
                    {"fits", result.probes[i].inconclusive ? nlohmann::json(nullptr)
                                                           : nlohmann::json(result.probes[i].passed)},
                    {"memory", PeakMemory(probes[i])},
                    {"guided", result.probes[i].guided},
                    {"from_seeds", result.probes[i].from_seeds},
                    {"guide_peak_bytes", guide_peak ? nlohmann::json(*guide_peak) : nlohmann::json(nullptr)},
                    {"resumed", static_cast<bool>(resumed[i])},
                    {"process", ProcessOf(probes[i])},
                    {"times", ProbeTimes(probes[i])},
                    {"message", FirstLine(probes[i].message)}});
  }

  record::CellRecord rec;
  if (other_end) {
    rec = probes[*other_end];
    if (rec.outcome != record::Outcome::kInterrupted) {
      rec.message = fmt::format("{0}: max: the probe at {0} {1} ended {2}: {3}", key,
                                result.probes[*other_end].value, record::Name(rec.outcome), rec.message);
    }
  } else if (!result.largest_passing) {
    // Nothing fits: the smallest value's oom is the cell's outcome (a seeded search probes it last;
    // the search keeps a probe for it, so it ends none_fits).
    std::size_t smallest = 0;
    for (std::size_t i = 0; i < result.probes.size(); ++i) {
      if (result.probes[i].value < result.probes[smallest].value) smallest = i;
    }
    rec = probes[smallest];
    rec.message =
        result.end == stats::BoundarySearchEnd::kNoneFits
            ? fmt::format("{0}: max: even {0} {1} does not fit: {2}", key, settings.min_value, rec.message)
            : fmt::format(
                  "{0}: max: no probe fit before the search ended {1} (the smallest "
                  "probed, {0} {2}: {3})",
                  key, stats::BoundarySearchEndName(result.end), result.probes[smallest].value, rec.message);
  }
  // The measured run of the value found, stepping down while it ends `oom` (kMeasuredStepDown).
  std::optional<std::int64_t> found = result.largest_passing;
  std::optional<std::int64_t> first_failing = result.smallest_failing;
  std::vector<std::int64_t> measured_oom;  // the values whose measured run ended oom, largest first
  std::optional<std::int64_t> shared_oom;  // the value whose measured run ended oom in a shared process
  if (!other_end && result.largest_passing) {
    std::int64_t value = *result.largest_passing;
    for (int down = 0;;) {
      rec = run_cell(AtValue(cell, key, value), measured_options);
      if (rec.outcome != record::Outcome::kOom) break;
      const bool retry_fresh = !shared_oom && measured_options.pool != nullptr && RanAfterOtherCells(rec);
      list.push_back({{key, value},
                      {"outcome", std::string(record::Name(rec.outcome))},
                      {"fits", retry_fresh ? nlohmann::json(nullptr) : nlohmann::json(false)},
                      {"memory", PeakMemory(rec)},
                      {"guided", false},
                      {"from_seeds", false},
                      {"measured", true},
                      {"guide_peak_bytes", nullptr},
                      {"process", ProcessOf(rec)},
                      {"times", ProbeTimes(rec)},
                      {"message", FirstLine(rec.message)}});
      if (retry_fresh) {
        // Not yet a failure to fit: the same value again, in a process of its own.
        shared_oom = value;
        measured_options.pool = nullptr;
        continue;
      }
      measured_oom.push_back(value);
      const auto next = std::min(
          value - 1, static_cast<std::int64_t>(std::floor(kMeasuredStepDown * static_cast<double>(value))));
      if (down++ == kMaxMeasuredStepDowns || next < settings.min_value) break;
      value = next;
    }
    if (shared_oom && rec.outcome == record::Outcome::kOk && measured_oom.empty()) {
      rec.extras["warnings"].push_back(fmt::format(
          "{0}: max: the measured run at {0} {1} ended oom in the process its probes shared and fit in a "
          "fresh process: the shared process held memory from its earlier cells (boundary_probe_process: "
          "shared); measured in the fresh one",
          key, *shared_oom));
    }
    if (!measured_oom.empty()) {
      first_failing = measured_oom.back();
      // Only a measured run that ended ok shows that its value fits.
      found = rec.outcome == record::Outcome::kOk ? std::optional<std::int64_t>(value) : std::nullopt;
      std::string tried;
      for (const std::int64_t v : measured_oom) tried += (tried.empty() ? "" : ", ") + std::to_string(v);
      if (rec.outcome != record::Outcome::kOk) {
        rec.message = fmt::format(
            "{0}: max: the probes ({1} steps) fit up to {0} {2}, but the measured runs at {3} ended oom: "
            "memory grew over the longer run{4}: {5}",
            key, probe_steps, *result.largest_passing, tried,
            rec.outcome == record::Outcome::kOom
                ? std::string()
                : fmt::format("; the one at {} ended {}", value, record::Name(rec.outcome)),
            rec.message);
      } else {
        rec.extras["warnings"].push_back(fmt::format(
            "{0}: max: the probes ({1} steps) fit up to {0} {2}, but the measured run ended oom at {3}: "
            "memory grew over the longer run; measured at {4}, so the largest value that fits a measured "
            "run is between {4} and {5}",
            key, probe_steps, *result.largest_passing, tried, value, measured_oom.back() - 1));
      }
    }
  }
  rec.params[key] = kMax;
  if (key == kBatchSize && IsMax(cell, kSamplesPerStep)) rec.params[kSamplesPerStep] = kMax;
  rec.cell_id = cell.id;

  if (found) record::SetMetric(rec, names.found, static_cast<double>(*found));
  if (first_failing) record::SetMetric(rec, names.first_failing, static_cast<double>(*first_failing));
  record::SetMetric(rec, metric::kBoundaryProbes, static_cast<double>(probes.size()));
  rec.extras["boundary_search"] = {
      {"key", key},
      {"min", settings.min_value},
      {"max", settings.max_value},
      {"end", stats::BoundarySearchEndName(result.end)},
      {"found", found ? nlohmann::json(*found) : nlohmann::json(nullptr)},
      {"first_failing", first_failing ? nlohmann::json(*first_failing) : nlohmann::json(nullptr)},
      {"probes_found",
       result.largest_passing ? nlohmann::json(*result.largest_passing) : nlohmann::json(nullptr)},
      {"measured_oom", measured_oom},
      {"max_probes", settings.max_probes},
      {"resolution", settings.resolution},
      {"probe_steps", probe_steps},
      {"probe_process", shared ? "shared" : "fresh"},
      {"bound", stats::MaxBoundaryProbes(settings)},
      {"guide", settings.memory_limit_bytes
                    ? GuideJson(*settings.memory_limit_bytes, settings.seed_limit_bytes, probes)
                : StringParamIs(cell, "boundary_guide", "peak_memory")
                    ? nlohmann::json("none: no memory_cap to aim at")
                    : nlohmann::json(nullptr)},
      {"seeds", settings.seeded ? nlohmann::json{{"from", seeds.sources}, {"points", seeds.points.size()}}
                : StringParamIs(cell, "boundary_seed", "other_caps")
                    ? nlohmann::json("none: the search is not guided by a memory_cap")
                    : nlohmann::json(nullptr)},
      {"probes", std::move(list)}};
  if (journal.kept_at_start() > 0) {
    std::size_t replayed = 0;
    for (const bool r : resumed) replayed += r ? 1 : 0;
    rec.extras["boundary_search"]["resumed_probes"] = replayed;
  }
  if (!journal.error().empty()) {
    rec.extras["warnings"].push_back(fmt::format(
        "{}: max: the probes could not be kept for a resumed run ({}): an interrupted search starts again",
        key, journal.error()));
  }
  // An interrupted cell is run again by --resume: its probes stay for it.
  if (rec.outcome != record::Outcome::kInterrupted) journal.Remove();
  if (result.end == stats::BoundarySearchEnd::kProbeCap && rec.outcome == record::Outcome::kOk &&
      measured_oom.empty()) {
    rec.extras["warnings"].push_back(fmt::format(
        "{}: max: the search reached boundary_max_probes ({}) before its bracket closed: "
        "the largest value that fits is {}",
        key, settings.max_probes,
        result.smallest_failing
            ? fmt::format("between {} and {}", *result.largest_passing, *result.smallest_failing - 1)
            : fmt::format("at least {}", *result.largest_passing)));
  }
  return rec;
}

}  // namespace dlbench::orchestrator

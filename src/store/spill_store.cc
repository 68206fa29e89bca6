#include "store/spill_store.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "common/credentials.h"
#include "common/files.h"
#include "common/log.h"

namespace dlbench::store {
namespace {

constexpr std::string_view kFormat = "dlbench-spilled-cell";
constexpr int kFormatVersion = 1;
constexpr std::string_view kSuffix = ".cell.json";

nlohmann::json DoubleToJson(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return value;
}

Result<double> DoubleFromJson(const nlohmann::json& value) {
  if (value.is_number()) return value.get<double>();
  if (value == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (value == "Infinity") return std::numeric_limits<double>::infinity();
  if (value == "-Infinity") return -std::numeric_limits<double>::infinity();
  return MakeError(ErrorKind::kStore, "a spilled number is " + value.dump());
}

// A cell's file name: its index and a hash of its cell_id (which may be hundreds of characters:
// a cell key names every parameter), so the same cell spilled again replaces its file and two
// cells of a run never share one. The cell_id itself is inside the file.
std::string FileNameOf(const CellRecord& cell) {
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (unsigned char c : cell.cell_id) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return fmt::format("cell-{:05d}-{:016x}{}", cell.index, hash, kSuffix);
}

std::string Plural(std::size_t n, const char* one, const char* many) { return n == 1 ? one : many; }

}  // namespace

nlohmann::json CellToJson(const CellRecord& cell) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const MetricRecord& m : cell.metrics) metrics.push_back({m.name, DoubleToJson(m.value), m.unit});
  nlohmann::json steps = nlohmann::json::array();
  for (const StepRow& s : cell.steps) {
    const record::StepRecord& r = s.record;
    steps.push_back(
        {s.rank, r.start_ns, r.end_ns, r.samples, r.present, r.data_wait_ns, r.compute_ns, r.comm_ns});
  }
  nlohmann::json series = nlohmann::json::array();
  for (const SeriesPoint& p : cell.series) series.push_back({p.t_ns, p.series, DoubleToJson(p.value)});
  nlohmann::json window = nullptr;
  if (cell.window) window = {{"first_step", cell.window->first_step}, {"steps", cell.window->steps}};
  return {{"run_id", cell.run_id},
          {"index", cell.index},
          {"cell_id", cell.cell_id},
          {"key", cell.key},
          {"label", cell.label},
          {"params", cell.params},
          {"effective", cell.effective},
          {"hello", cell.hello},
          {"repetition", cell.repetition},
          {"seed", cell.seed},
          {"outcome", record::Name(cell.outcome)},
          {"message", cell.message},
          {"verdict", record::Name(cell.verdict)},
          {"verdict_reasons", cell.verdict_reasons},
          {"window", window},
          {"warmup_rule", cell.warmup_rule},
          {"stop_reason", cell.stop_reason},
          {"stdout_path", cell.stdout_path},
          {"stderr_path", cell.stderr_path},
          {"started_wall_ns", cell.started_wall_ns},
          {"finished_wall_ns", cell.finished_wall_ns},
          {"extras", cell.extras},
          {"metrics", metrics},
          {"steps", steps},
          {"series", series}};
}

Result<CellRecord> CellFromJson(const nlohmann::json& json) {
  try {
    CellRecord cell;
    cell.run_id = json.at("run_id").get<std::int64_t>();
    cell.index = json.at("index").get<int>();
    cell.cell_id = json.at("cell_id").get<std::string>();
    cell.key = json.at("key").get<std::string>();
    cell.label = json.at("label").get<std::string>();
    cell.params = json.at("params");
    cell.effective = json.at("effective");
    cell.hello = json.at("hello");
    cell.repetition = json.at("repetition").get<int>();
    cell.seed = json.at("seed").get<std::uint64_t>();
    const std::string outcome = json.at("outcome").get<std::string>();
    auto parsed_outcome = record::ParseOutcome(outcome);
    if (!parsed_outcome) return MakeError(ErrorKind::kStore, "a spilled cell's outcome is '" + outcome + "'");
    cell.outcome = *parsed_outcome;
    cell.message = json.at("message").get<std::string>();
    const std::string verdict = json.at("verdict").get<std::string>();
    auto parsed_verdict = record::ParseVerdict(verdict);
    if (!parsed_verdict) return MakeError(ErrorKind::kStore, "a spilled cell's verdict is '" + verdict + "'");
    cell.verdict = *parsed_verdict;
    cell.verdict_reasons = json.at("verdict_reasons");
    if (const auto& w = json.at("window"); !w.is_null()) {
      cell.window =
          record::MeasuredWindow{w.at("first_step").get<std::int64_t>(), w.at("steps").get<std::int64_t>()};
    }
    cell.warmup_rule = json.at("warmup_rule").get<std::string>();
    cell.stop_reason = json.at("stop_reason").get<std::string>();
    cell.stdout_path = json.at("stdout_path").get<std::string>();
    cell.stderr_path = json.at("stderr_path").get<std::string>();
    cell.started_wall_ns = json.at("started_wall_ns").get<std::int64_t>();
    cell.finished_wall_ns = json.at("finished_wall_ns").get<std::int64_t>();
    cell.extras = json.at("extras");
    for (const auto& m : json.at("metrics")) {
      auto value = DoubleFromJson(m.at(1));
      if (!value.ok()) return value.error();
      cell.metrics.push_back(MetricRecord{m.at(0).get<std::string>(), *value, m.at(2).get<std::string>()});
    }
    cell.steps.reserve(json.at("steps").size());
    for (const auto& s : json.at("steps")) {
      StepRow row;
      row.rank = s.at(0).get<std::uint32_t>();
      row.record.start_ns = s.at(1).get<std::int64_t>();
      row.record.end_ns = s.at(2).get<std::int64_t>();
      row.record.samples = s.at(3).get<std::uint32_t>();
      row.record.present = s.at(4).get<std::uint32_t>();
      row.record.data_wait_ns = s.at(5).get<std::int64_t>();
      row.record.compute_ns = s.at(6).get<std::int64_t>();
      row.record.comm_ns = s.at(7).get<std::int64_t>();
      cell.steps.push_back(row);
    }
    for (const auto& p : json.at("series")) {
      auto value = DoubleFromJson(p.at(2));
      if (!value.ok()) return value.error();
      cell.series.push_back(SeriesPoint{p.at(0).get<std::int64_t>(), p.at(1).get<std::string>(), *value});
    }
    return cell;
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorKind::kStore, std::string("not a spilled cell: ") + e.what());
  }
}

std::string DefaultSpillDir(std::string_view location) { return LocalStateDir(location); }

std::string SpillingStore::RunDir(std::int64_t run_id) const {
  return spill_dir_ + "/run-" + std::to_string(run_id);
}

std::vector<std::string> SpillingStore::SpilledFiles(std::int64_t run_id) const {
  std::vector<std::string> files;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(RunDir(run_id), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_regular_file(ec) && name.size() > kSuffix.size() &&
        name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0) {
      files.push_back(it->path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

Status SpillingStore::Replay(std::int64_t run_id) {
  const std::vector<std::string> files = SpilledFiles(run_id);
  if (files.empty()) return Status::Ok();
  std::vector<std::pair<CellRecord, std::string>> cells;
  for (const std::string& file : files) {
    auto text = ReadFile(file);
    if (!text.ok()) return text.error();
    nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded() || !json.is_object() || json.value("format", "") != kFormat ||
        json.value("version", 0) != kFormatVersion || !json.contains("cell")) {
      return MakeError(ErrorKind::kStore, "spill file '" + file + "' is not a dlbench spilled cell (format " +
                                              std::string(kFormat) + " version " +
                                              std::to_string(kFormatVersion) + "); it was left in place");
    }
    auto cell = CellFromJson(json["cell"]);
    if (!cell.ok()) {
      return MakeError(ErrorKind::kStore,
                       "spill file '" + file + "': " + cell.error().message + "; it was left in place");
    }
    cells.emplace_back(std::move(*cell), file);
  }
  std::stable_sort(cells.begin(), cells.end(),
                   [](const auto& a, const auto& b) { return a.first.index < b.first.index; });
  for (const auto& [cell, file] : cells) {
    Status stored = inner_->PutCell(cell);
    if (!stored.ok()) {
      return MakeError(stored.error().kind, "cannot store the spilled cell in '" + file +
                                                "' (it stays there): " + stored.error().message);
    }
    std::error_code ec;
    std::filesystem::remove(file, ec);
    LogWarning("stored cell '{}' of run {} from its spill file into {}", cell.cell_id, run_id, Describe());
  }
  std::error_code ec;
  std::filesystem::remove(RunDir(run_id), ec);  // only when empty
  return Status::Ok();
}

Status SpillingStore::PutCell(const CellRecord& cell) {
  // Earlier spilled cells first, so a replay never overwrites a newer cell; a server still away
  // leaves them where they are and this cell is tried (and spilled) like them.
  Status replayed = Replay(cell.run_id);
  if (!replayed.ok() && replayed.error().kind != ErrorKind::kUnavailable) return replayed;
  Status stored = replayed.ok() ? inner_->PutCell(cell) : replayed;
  if (stored.ok() || stored.error().kind != ErrorKind::kUnavailable) return stored;

  const std::string dir = RunDir(cell.run_id);
  const std::string file = dir + "/" + FileNameOf(cell);
  nlohmann::json document = {
      {"format", kFormat}, {"version", kFormatVersion}, {"store", Describe()}, {"cell", CellToJson(cell)}};
  std::string text;
  try {
    text = document.dump();
  } catch (const nlohmann::json::exception& e) {
    return MakeError(ErrorKind::kUnavailable,
                     stored.error().message + "; the cell could not be spilled either: " + e.what());
  }
  Status written = MakeDirs(dir);
  if (written.ok()) written = WriteFileAtomic(file, text + "\n");
  if (!written.ok()) {
    return MakeError(ErrorKind::kUnavailable, stored.error().message + "; cell '" + cell.cell_id +
                                                  "' could not be kept in a spill file either (" +
                                                  written.error().message + ")");
  }
  const std::size_t waiting = SpilledFiles(cell.run_id).size();
  return MakeError(
      ErrorKind::kUnavailable,
      fmt::format("{}. Cell '{}' is kept in {} ({} spilled {} of run {} wait{} there); `dlbench run "
                  "MATRIX --resume {}` stores {} once the server is back",
                  stored.error().message, cell.cell_id, file, waiting, Plural(waiting, "cell", "cells"),
                  cell.run_id, waiting == 1 ? "s" : "", cell.run_id, Plural(waiting, "it", "them")));
}

Status SpillingStore::SetRunStatus(std::int64_t run_id, record::RunStatus status,
                                   std::optional<std::int64_t> finished_wall_ns) {
  DLBENCH_RETURN_IF_ERROR(Replay(run_id));
  return inner_->SetRunStatus(run_id, status, finished_wall_ns);
}

Result<std::set<std::string>> SpillingStore::FinishedCellIds(std::int64_t run_id) {
  DLBENCH_RETURN_IF_ERROR(Replay(run_id));
  return inner_->FinishedCellIds(run_id);
}

}  // namespace dlbench::store

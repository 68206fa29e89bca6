// The registry's table, part 3 (registry_entries.h): inference under load (docs/load.md), `load`
// to `input_residency`.
#include <vector>

#include "config/registry.h"
#include "config/registry_entries.h"

namespace dlbench::config::internal {

void AppendLoadEntries(std::vector<ParamSpec>& r) {
  // Inference under load (docs/load.md): LoadGen's scenarios. Every key but `load` applies only
  // with `load`, and some only with one scenario (config/load_rules.h checks each cell). None has
  // a constant default, so cells without `load` keep their keys; the runner reports the values it
  // used in the effective cell. Scope kLoad: the runners that serve queries (dlbench-torch,
  // dlbench-null on its virtual clock, and command runners: the Python client serves them).
  r.push_back(Entry("load", kCell, kLoad, ParamType::kEnum)
                  .Allowed({"single_stream", "multi_stream", "server", "offline"})
                  .DefaultText("none: back-to-back steps")
                  .Label("=")
                  .Help("Inference under load with scenario: infer, as MLPerf LoadGen: `single_stream` (one "
                        "sample per query, the next when it completes), `multi_stream` (samples_per_query "
                        "per query), `server` (Poisson arrivals at target_qps; latency from the scheduled "
                        "arrival), `offline` (offline_samples in one query). Absent: steps back to back.")
                  .Build());
  r.push_back(
      Entry("target_qps", kCell, kLoad, ParamType::kNumber)
          .Unit("1/s")
          .Min(0, false)
          .Max(1e9)
          .Keywords({"max"})
          .DefaultText("required with load: server")
          .Label("qps")
          .Help("load: server: the Poisson arrival rate, or `max` to search for the highest rate whose "
                "latency percentile stays within latency_bound_ms. At most 1e9 queries/s, so that a typo is "
                "caught here.")
          .Build());
  r.push_back(
      Entry("latency_bound_ms", kCell, kLoad, ParamType::kNumber)
          .Unit("ms")
          .Min(0, false)
          .Max(1e7)
          .DefaultText("none (required with target_qps: max)")
          .Label("bound_ms")
          .Help("load: server: the cell is valid only when its latency percentile is within this. At most "
                "10000000 (about 3 hours), so that a wrong unit is caught here.")
          .Build());
  r.push_back(Entry("peak_max_probes", kCell, kLoad, ParamType::kInt)
                  .Unit("probes")
                  .Min(1)
                  .Max(100)
                  .DefaultText("20")
                  .Help("target_qps: max: the peak search runs at most this many probes (bracketing and "
                        "bisection together). At most 100: from 100 queries/s, doubling reaches the "
                        "search's 1e6 cap in 14 probes and bisection to 0.1% takes 12 more.")
                  .Build());
  r.push_back(Entry("peak_resolution", kCell, kLoad, ParamType::kNumber)
                  .Min(0.001)
                  .Max(1)
                  .DefaultText("0.05")
                  .Help("target_qps: max: bisection stops when the lowest failing rate / the peak - 1 is at "
                        "most this, at least 0.001. At most 1: a bracket no wider than a factor of 2.")
                  .Build());
  r.push_back(Entry("peak_max_time_s", kCell, kLoad, ParamType::kNumber)
                  .Unit("s")
                  .Min(0, false)
                  .Max(86400)
                  .DefaultText("the cell's max_time_s")
                  .Help("target_qps: max: the search starts no probe after this many seconds (on the load "
                        "clock: virtual time in dlbench-null) and each probe's runs end at it; the cell's "
                        "max_time_s bounds it too. At most 86400 (a day), so that a wrong unit is caught "
                        "here.")
                  .Build());
  r.push_back(Entry("peak_min_probe_s", kCell, kLoad, ParamType::kNumber)
                  .Unit("s")
                  .Min(0)
                  .Max(3600)
                  .DefaultText("5")
                  .Help("target_qps: max: each probe measures at least this long at its rate (after its "
                        "0.5 s warm-up): max(early-stopping minimum, min_queries, rate x this) queries, "
                        "more while early stopping needs them. 0: the early-stopping minimum alone, which "
                        "lasts milliseconds at thousands of queries/s and can miss a throughput that sinks "
                        "over seconds. LoadGen runs each server run at least 60 s. At most 3600 (an hour a "
                        "probe), so that a wrong unit is caught here.")
                  .Build());
  r.push_back(Entry("peak_confirm_s", kCell, kLoad, ParamType::kNumber)
                  .Unit("s")
                  .Min(0)
                  .Max(3600)
                  .DefaultText("15")
                  .Help("target_qps: max: after the search ends by its own rule, its peak is run again "
                        "for at least this long (and at least peak_min_probe_s) at its rate, after the "
                        "probe warm-up; if that fails, runs as long bisect below it, at most 5 "
                        "confirmations. The cell's peak is the highest confirmed rate. 0: no "
                        "confirmation. 15 s: a 5 s probe's peak failed a 15 s run at it on an H100. At "
                        "most 3600 (an hour), so that a wrong unit is caught here.")
                  .Build());
  r.push_back(
      Entry("latency_percentile", kCell, kLoad, ParamType::kNumber)
          .Min(0, false)
          .Max(1, false)
          .DefaultText("0.9 single_stream; 0.99 multi_stream, server")
          .Help("The latency percentile a load cell claims (early stopping, the bound). At most just below "
                "1: a percentile is a fraction, and early stopping needs about 4.6 / (1 - p) queries.")
          .Build());
  r.push_back(Entry("samples_per_query", kCell, kLoad, ParamType::kInt)
                  .Unit("samples")
                  .Min(1)
                  .Max(65536)
                  .DefaultText("8")
                  .Help("load: multi_stream: samples in each query (LoadGen's default 8). At most 65536, so "
                        "that a typo "
                        "is caught here.")
                  .Build());
  r.push_back(Entry("query_interval_ms", kCell, kLoad, ParamType::kNumber)
                  .Unit("ms")
                  .Min(0, false)
                  .Max(1e7)
                  .DefaultText("none: on completion")
                  .Help("load: multi_stream: issue a query every this many ms (latency then counts from the "
                        "tick); absent: the next query when the previous completes. At most 10000000 (about "
                        "3 hours), so "
                        "that a wrong unit is caught here.")
                  .Build());
  r.push_back(
      Entry("max_batch", kCell, kLoad, ParamType::kInt)
          .Unit("samples")
          .Min(1)
          .Max(65536)
          .DefaultText("= batch_size")
          .Help("load: server: the dynamic batcher's largest batch. At most 65536 samples, so that a typo is "
                "caught here.")
          .Build());
  r.push_back(Entry("batch_timeout_us", kCell, kLoad, ParamType::kInt)
                  .Unit("us")
                  .Min(0)
                  .Max(1'000'000'000)
                  .DefaultText("0")
                  .Help("load: server: the longest the oldest queued query waits for a fuller batch; 0 runs "
                        "what is queued as soon as a stream is free. At most 1000000000 (about 17 minutes), "
                        "so that a wrong "
                        "unit is caught here.")
                  .Build());
  r.push_back(Entry("streams", kCell, kLoad, ParamType::kInt)
                  .Min(1)
                  .Max(64)
                  .DefaultText("1")
                  .Help("load: server: batches in flight at once (CUDA streams on a GPU). At most 64, one "
                        "worker thread "
                        "each.")
                  .Build());
  r.push_back(
      Entry("offline_samples", kCell, kLoad, ParamType::kInt)
          .Unit("samples")
          .Min(1)
          .Max(100'000'000)
          .DefaultText("24576")
          .Help("load: offline: samples in each query, run in batches of batch_size. At most 100000000, so "
                "that a typo is caught here.")
          .Build());
  r.push_back(Entry("min_queries", kCell, kLoad, ParamType::kInt)
                  .Unit("queries")
                  .Min(1)
                  .Max(1'000'000'000)
                  .DefaultText("the early-stopping minimum")
                  .Help("A load cell measures at least this many queries (and at least what early stopping "
                        "needs). At most 1000000000, so that a typo is caught here.")
                  .Build());
  r.push_back(Entry("early_stopping_confidence", kCell, kLoad, ParamType::kNumber)
                  .Min(0.5, false)
                  .Max(1, false)
                  .DefaultText("0.99")
                  .Help("Confidence of LoadGen's early-stopping bound on the latency percentile. At most "
                        "just below 1: a "
                        "confidence is a probability.")
                  .Build());
  r.push_back(Entry("sample_library_size", kCell, kLoad, ParamType::kInt)
                  .Unit("samples")
                  .Min(1)
                  .Max(1 << 20)
                  .DefaultText("64")
                  .Help("Pre-made input samples that load queries draw from (LoadGen's performance sample "
                        "count). At most 1048576 (2^20), so that the library fits in memory.")
                  .Build());
  r.push_back(Entry("input_residency", kCell, kLoad, ParamType::kEnum)
                  .Allowed({"host", "device"})
                  .DefaultText("host")
                  .Help("Where a load query's input starts: `host` (pinned memory, copied to the device per "
                        "query, as in a server) or `device` (pre-made there: pure compute latency).")
                  .Build());
}

}  // namespace dlbench::config::internal

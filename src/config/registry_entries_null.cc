// The registry's table, part 4 (registry_entries.h): the null runner's keys, `step_ms` to
// `warmup_factor` (with defaults) and `fault_field` to `shift_factor` (without).
#include <vector>

#include "config/registry.h"
#include "config/registry_entries.h"

namespace dlbench::config::internal {

void AppendNullEntries(std::vector<ParamSpec>& r) {
  // The null runner's knobs: it busy-waits instead of computing, so the harness can be tested
  // and its overhead measured.
  r.push_back(Entry("step_ms", kCell, kNull, ParamType::kNumber)
                  .Unit("ms")
                  .Default(Num(1.0))
                  .Min(0)
                  .Max(3600000)
                  .Estimate(EstimateHint::kStepMs)
                  .Help("Busy-wait per step. At most 3600000 (an hour), so that a wrong unit is caught here.")
                  .Build());
  r.push_back(Entry("jitter_pct", kCell, kNull, ParamType::kNumber)
                  .Unit("%")
                  .Default(Num(0.0))
                  .Min(0)
                  .Max(1000)
                  .Help("Spread of the step time, as a percentage of step_ms. At most 1000, so that a typo "
                        "is caught here.")
                  .Build());
  r.push_back(Entry("jitter_dist", kCell, kNull, ParamType::kEnum)
                  .Allowed({"normal", "uniform", "lognormal"})
                  .Default(Str("normal"))
                  .Help("Distribution of the jitter.")
                  .Build());
  r.push_back(
      Entry("inject", kCell, kNull, ParamType::kEnum)
          .Allowed({"none",
                    "crash",
                    "hang",
                    "exit",
                    "garbage",
                    "leak",
                    "oom",
                    "sigterm_self",
                    "no_hello",
                    "wrong_protocol",
                    "hello_twice",
                    "steps_before_ready",
                    "ready_twice",
                    "unknown_frame",
                    "oversized_frame",
                    "bad_json",
                    "runner_stop",
                    "wrong_type",
                    "step_backwards",
                    "step_overlap",
                    "steps_after_done",
                    "done_twice",
                    "late_steps_after_done",
                    "late_steps_after_configure",
                    "frame_after_error",
                    "exit_without_done",
                    "close_protocol",
                    "close_protocol_exit",
                    "close_commands",
                    "child_holds_pipe",
                    "setsid_child",
                    "stderr_flood",
                    "stdout_flood",
                    "step_flood",
                    "hang_after_stop",
                    "json_flood",
                    "drop_query",
                    "duplicate_query"})
          .Default(Str("none"))
          .Help("Failure to inject (at step inject_at_step where it happens during the steps): `crash` "
                "(a fatal signal), `hang` (stop stepping and answering), `exit` (exit with "
                "exit_code), `garbage` (bytes that are not protocol frames), `leak` (keep "
                "leak_bytes_per_step more memory every step from then on; a block refused under memory_cap's "
                "RLIMIT_DATA is reported as `oom`), `oom` (fail as "
                "out of memory); and every protocol fault of docs/protocol.md's fault table "
                "(`wrong_type` sends the field fault_field with the wrong JSON type; the faults "
                "of HELLO itself are given as `dlbench-null --inject NAME`); with load, `drop_query` and "
                "`duplicate_query` leave query inject_at_step out of its QUERIES frame or send it twice.")
          .Build());
  r.push_back(Entry("inject_at_step", kCell, kNull, ParamType::kInt)
                  .Unit("steps")
                  .Default(Int(20))
                  .Min(0)
                  .Max(10000000)
                  .Help("The step at which the injected failure happens. At most 10000000, like max_steps.")
                  .Build());
  r.push_back(Entry("leak_bytes_per_step", kCell, kNull, ParamType::kInt)
                  .Unit("bytes")
                  .Default(Int(65536))
                  .Min(0)
                  .Max(1073741824)
                  .Help("Memory kept and touched per step with inject: leak. At most 1073741824 (1 GiB), so "
                        "that a typo does not exhaust the host's memory.")
                  .Build());
  r.push_back(Entry("memory_base_bytes", kCell, kNull, ParamType::kInt)
                  .Unit("bytes")
                  .Min(0)
                  .Max(1099511627776)
                  .DefaultText("none: no memory model")
                  .Help("The null runner's memory model (docs/memory.md): a cell needs this plus "
                        "memory_per_sample_bytes per sample of its batch (and the per-token and per-pixel "
                        "terms), and ends `oom` before its first step when that exceeds memory_cap. Nothing "
                        "is allocated. At most 1099511627776 (1 TiB), like memory_cap.")
                  .Build());
  r.push_back(Entry("memory_per_sample_bytes", kCell, kNull, ParamType::kInt)
                  .Unit("bytes")
                  .Min(0)
                  .Max(1099511627776)
                  .DefaultText("none: no memory model")
                  .Help("The null runner's memory model: the bytes each sample of the batch needs on top of "
                        "memory_base_bytes. At most 1099511627776 (1 TiB), like memory_cap.")
                  .Build());
  r.push_back(Entry("memory_per_token_bytes", kCell, kNull, ParamType::kInt)
                  .Unit("bytes")
                  .Min(0)
                  .Max(1099511627776)
                  .DefaultText("none: no memory model")
                  .Help("The null runner's memory model: the bytes each token needs, times batch_size x "
                        "seq_len (seq_len: max is tested with it). At most 1099511627776 (1 TiB).")
                  .Build());
  r.push_back(Entry("memory_per_pixel_bytes", kCell, kNull, ParamType::kInt)
                  .Unit("bytes")
                  .Min(0)
                  .Max(1099511627776)
                  .DefaultText("none: no memory model")
                  .Help("The null runner's memory model: the bytes each pixel needs, times batch_size x "
                        "image_size^2 (image_size: max is tested with it). At most 1099511627776 (1 TiB).")
                  .Build());
  r.push_back(Entry("inject_rank", kCell, kNull, ParamType::kInt)
                  .Min(0)
                  .Max(1023)
                  .DefaultText("every rank")
                  .Help("With inject and strategy: ddp, only this rank injects the fault; the others run "
                        "normally. At most 1023, the highest rank of world_size 1024.")
                  .Build());
  r.push_back(Entry("exit_code", kCell, kNull, ParamType::kInt)
                  .Default(Int(3))
                  .Min(1)
                  .Max(255)
                  .Help("Exit status with inject: exit.")
                  .Build());
  r.push_back(
      Entry("samples_per_step", kCell, kNull, ParamType::kInt)
          .Unit("samples")
          .Min(1)
          .Max(4294967295)
          .DefaultFrom("batch_size")
          .DefaultText("= batch_size")
          .Help(
              "Samples the runner reports per step. At most 4294967295: the protocol carries it in 32 bits.")
          .Build());
  r.push_back(Entry("setup_ms", kCell, kNull, ParamType::kNumber)
                  .Unit("ms")
                  .Default(Num(0.0))
                  .Min(0)
                  .Max(3600000)
                  .Estimate(EstimateHint::kSetupMs)
                  .Help("Time spent before READY, like building a model. At most 3600000 (an hour), so that "
                        "a wrong unit is caught here.")
                  .Build());
  r.push_back(
      Entry("warmup_steps", kCell, kNull, ParamType::kInt)  // names: a parameter, not the metric
          .Unit("steps")
          .Default(Int(0))
          .Min(0)
          .Max(10000000)
          .Estimate(EstimateHint::kWarmupSteps)
          .Help("That many first steps run slower, by warmup_factor. At most 10000000, like max_steps.")
          .Build());
  r.push_back(
      Entry("warmup_factor", kCell, kNull, ParamType::kNumber)
          .Default(Num(3.0))
          .Min(1)
          .Max(1000)
          .Estimate(EstimateHint::kWarmupFactor)
          .Help("Step time multiplier of the warm-up steps. At most 1000, so that a typo is caught here.")
          .Build());

  // Also the null runner's, with no default, so that cells which do not set them keep their keys.
  r.push_back(
      Entry("fault_field", kCell, kNull, ParamType::kEnum)
          .Allowed(
              {"HELLO.protocol",     "HELLO.pid",       "HELLO.runner",           "HELLO.framework",
               "HELLO.devices",      "READY.effective", "READY.samples_per_step", "READY.device_uuids",
               "READY.virtual_time", "MEMORY.label",    "MEMORY.bytes",           "EXTRAS.metrics",
               "EXTRAS.metric",      "EXTRAS.name",     "EXTRAS.value",           "EXTRAS.unit",
               "EXTRAS.info",        "ERROR.kind",      "ERROR.message",          "ERROR.requested_bytes",
               "DONE.reason",        "DONE.steps",      "HELLO.multi_cell"})
          .DefaultText("none")
          .Help("With inject: wrong_type, the protocol field sent with the wrong JSON type.")
          .Build());
  r.push_back(Entry("flood_bytes", kCell, kNull, ParamType::kInt)
                  .Unit("bytes")
                  .Min(0)
                  .DefaultText("83886080 (80 MiB)")
                  .Max(1073741824)
                  .Help("What inject: stderr_flood or stdout_flood writes. At most 1073741824 (1 GiB), so "
                        "that a typo does not fill the disk.")
                  .Build());
  r.push_back(Entry("service_us", kCell, kNull, ParamType::kNumber)
                  .Unit("us")
                  .Min(0, false)
                  .Max(3.6e9)
                  .DefaultText("1000")
                  .Help("With load: the simulated system's time to serve one batch, on the virtual clock "
                        "(plus service_per_sample_us per sample; at least 1 ns); a load cell always runs in "
                        "virtual time. "
                        "At most 3600000000 (an hour), so that a wrong unit is caught here.")
                  .Build());
  r.push_back(Entry("service_per_sample_us", kCell, kNull, ParamType::kNumber)
                  .Unit("us")
                  .Min(0)
                  .Max(3.6e9)
                  .DefaultText("0")
                  .Help("With load: the simulated system's added service time per sample of a batch. At "
                        "most 3600000000 (an hour), so that a wrong unit is caught here.")
                  .Build());
  r.push_back(Entry("serve_after_stop_us", kCell, kNull, ParamType::kNumber)
                  .Unit("us")
                  .Min(0)
                  .Max(3.6e9)
                  .DefaultText("unlimited")
                  .Help("With load: server: after STOP the simulated server serves its queue for only this "
                        "long on the virtual clock; what is still queued when the load generator's STOP "
                        "drain (2 s) ends is dropped, as dlbench-torch's batcher drops its queue (the run "
                        "ends dropped_after_stop). Unset: the queue is served at once. At most 3600000000 "
                        "(an hour).")
                  .Build());
  r.push_back(Entry("virtual_time", kCell, kNull, ParamType::kBool)
                  .DefaultText("false")
                  .Help("Report the drawn step times on a virtual clock (starting at READY) instead of "
                        "busy-waiting them: exact step times, a long cell simulated in milliseconds.")
                  .Build());
  r.push_back(
      Entry("virtual_speedup", kCell, kNull, ParamType::kNumber)
          .Min(0, false)
          .DefaultText("1000")
          .Max(1e9)
          .Help("With virtual_time, how much faster than real time the virtual clock may run "
                "(the runner sleeps to keep to it; it bounds the steps sent after STOP). At most 1e9.")
          .Build());
  r.push_back(
      Entry("bimodal_fraction", kCell, kNull, ParamType::kNumber)
          .Min(0)
          .Max(1)
          .DefaultText("0")
          .Help("Share of steps drawn from a second mode, bimodal_factor times step_ms. At most 1: a share.")
          .Build());
  r.push_back(Entry("bimodal_factor", kCell, kNull, ParamType::kNumber)
                  .Min(0)
                  .DefaultText("2")
                  .Max(1000)
                  .Help("Step time of the second mode, as a multiple of step_ms. At most 1000, so that a "
                        "typo is caught here.")
                  .Build());
  r.push_back(Entry("drift_pct_per_s", kCell, kNull, ParamType::kNumber)
                  .Unit("%/s")
                  .DefaultText("0")
                  .Min(-1000)
                  .Max(1000)
                  .Help("Linear drift of the step time: % of step_ms per second since the first step. At "
                        "most 1000 (and at least -1000) %/s, so that a typo is caught here.")
                  .Build());
  r.push_back(Entry("shift_at_step", kCell, kNull, ParamType::kInt)
                  .Unit("steps")
                  .Min(0)
                  .DefaultText("none")
                  .Max(10000000)
                  .Help("A level shift: from this step (0-based) on, step times are shift_factor times "
                        "longer. At most 10000000, like max_steps.")
                  .Build());
  r.push_back(
      Entry("shift_factor", kCell, kNull, ParamType::kNumber)
          .Min(0)
          .DefaultText("1")
          .Max(1000)
          .Help("The level shift's step time multiplier. At most 1000, so that a typo is caught here.")
          .Build());
  r.push_back(Entry("shift_attempts", kCell, kNull, ParamType::kInt)
                  .Unit("attempts")
                  .Min(0)
                  .Max(10)
                  .DefaultText("every attempt")
                  .Help("The level shift happens in the cell's first this many attempts only (CONFIGURE's "
                        "attempt; measure.retry_disturbed runs a shifted cell again): a machine that "
                        "disturbed one measurement and not the next. At most 10, like retry_disturbed.")
                  .Build());
}

}  // namespace dlbench::config::internal

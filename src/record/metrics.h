// Every metric dlbench stores, declared once: its name (with the unit in it, STYLE.md rule 4),
// unit, producer, the steps or samples it covers, and its formula. Producers (the orchestrator's
// step summary, the monitor analysis, runners through EXTRAS and MEMORY) and consumers (console,
// compare, trend, report, exports, Prometheus) use these constants; nothing else spells a metric
// name. `dlbench metrics` prints the table and docs/metrics.md is generated from it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dlbench::record {

enum class Producer {
  kOrchestrator,  // computed by dlbench from the step records and the measured window
  kMonitor,       // computed by dlbench from the sampled GPU/host series over the measured window
  kRunner,        // sent by the runner (EXTRAS metrics), checked against this table
  kRunnerMemory,  // a field of the runner's MEMORY snapshots
};
std::string_view Name(Producer producer);

struct MetricDef {
  std::string_view name;
  std::string_view unit;
  Producer producer;
  std::string_view window;   // which steps or samples: "measured window", "whole cell", ...
  std::string_view formula;  // what the number is, precisely enough to recompute it
};

namespace metric {
// The measured window and its step-time summary (measure::StepSummary; docs/measurement.md).
inline constexpr std::string_view kWarmupSteps = "warmup_steps";
inline constexpr std::string_view kMeasuredSteps = "measured_steps";
inline constexpr std::string_view kMeasuredWindowS = "measured_window_s";
inline constexpr std::string_view kSamplesPerS = "samples_per_s";
inline constexpr std::string_view kStepsPerS = "steps_per_s";
inline constexpr std::string_view kStepTimeMeanNs = "step_time_mean_ns";
inline constexpr std::string_view kStepTimeMedianNs = "step_time_median_ns";
inline constexpr std::string_view kStepTimeMinNs = "step_time_min_ns";
inline constexpr std::string_view kStepTimeMaxNs = "step_time_max_ns";
inline constexpr std::string_view kStepTimeP50Ns = "step_time_p50_ns";
inline constexpr std::string_view kStepTimeP90Ns = "step_time_p90_ns";
inline constexpr std::string_view kStepTimeP95Ns = "step_time_p95_ns";
inline constexpr std::string_view kStepTimeP99Ns = "step_time_p99_ns";
inline constexpr std::string_view kStepTimeStddevNs = "step_time_stddev_ns";
inline constexpr std::string_view kStepTimeCv = "step_time_cv";
inline constexpr std::string_view kStepTimeCiLowNs = "step_time_ci_low_ns";
inline constexpr std::string_view kStepTimeCiHighNs = "step_time_ci_high_ns";
inline constexpr std::string_view kStepTimeCiRelHalfwidth = "step_time_ci_rel_halfwidth";

// Model FLOPs and utilisation.
inline constexpr std::string_view kFlopsPerSample = "flops_per_sample";
inline constexpr std::string_view kPeakFlopsPerS = "peak_flops_per_s";
inline constexpr std::string_view kAchievedFlopsPerS = "achieved_flops_per_s";
inline constexpr std::string_view kMfuRatio = "mfu_ratio";

// Where the cell's wall time went (orchestrator::CellTimeline).
inline constexpr std::string_view kTimeToHelloS = "time_to_hello_s";
inline constexpr std::string_view kSetupS = "setup_s";
inline constexpr std::string_view kWarmupS = "warmup_s";
inline constexpr std::string_view kTimeToMeasureS = "time_to_measure_s";
inline constexpr std::string_view kCellWallS = "cell_wall_s";

// Runner-reported facts (EXTRAS).
inline constexpr std::string_view kLossScaleFinal = "loss_scale_final";
inline constexpr std::string_view kSkippedOptimizerSteps = "skipped_optimizer_steps";
inline constexpr std::string_view kCompileTimeS = "compile_time_s";
inline constexpr std::string_view kCompileSecondCallS = "compile_second_call_s";
inline constexpr std::string_view kJaxLowerS = "jax_lower_s";
inline constexpr std::string_view kXlaCompileS = "xla_compile_s";
inline constexpr std::string_view kOpByOpFirstStepS = "op_by_op_first_step_s";
// The model's weights as the cell deploys them (runners/torch: parameters and buffers at their
// dtype; dynamic int8 Linear layers at 1 byte per weight plus their quantization parameters).
inline constexpr std::string_view kWeightBytes = "weight_bytes";
inline constexpr std::string_view kLinearWeightBytes = "linear_weight_bytes";
// Where the memory goes (runners/torch/memory_accounting.h; docs/memory.md): the bytes a cell holds
// whatever its activations, from its tensors and optimizer, against the measured peak.
inline constexpr std::string_view kGradBytes = "grad_bytes";
inline constexpr std::string_view kOptimizerStateBytes = "optimizer_state_bytes";
inline constexpr std::string_view kInputBatchBytes = "input_batch_bytes";
inline constexpr std::string_view kDatasetBytes = "dataset_bytes";
inline constexpr std::string_view kExpectedResidentBytes = "expected_resident_bytes";
inline constexpr std::string_view kMemoryPeakBytes = "memory_peak_bytes";
inline constexpr std::string_view kActivationWorkspaceBytes = "activation_workspace_bytes";
inline constexpr std::string_view kAllocatorFragmentationBytes = "allocator_fragmentation_bytes";
// The Python client's own cost per step (clients/python): time in its loop outside the step.
inline constexpr std::string_view kClientOverheadNsPerStep = "client_overhead_ns_per_step";

// The torch runner's input pipeline (data: jpeg_dir | tfrecord; docs/input-pipeline.md), from
// its decode workers' counters (EXTRAS).
inline constexpr std::string_view kDataWorkerCpuUtilPct = "data_worker_cpu_util_pct";
inline constexpr std::string_view kDataWorkerBusyPct = "data_worker_busy_pct";
inline constexpr std::string_view kDataSamplesPerWorkerS = "data_samples_per_worker_s";
inline constexpr std::string_view kDataReadPct = "data_read_pct";
inline constexpr std::string_view kDataDecodePct = "data_decode_pct";
inline constexpr std::string_view kDataTransformPct = "data_transform_pct";
inline constexpr std::string_view kDataCacheHitPct = "data_cache_hit_pct";
inline constexpr std::string_view kDataCorruptInputs = "data_corrupt_inputs";
inline constexpr std::string_view kDataSkippedSamples = "data_skipped_samples";
// The input-bound verdict (orchestrator/input_analysis.h; docs/input-pipeline.md "The verdict"):
// a cell whose data is not `device` against its control, the same cell with data: device.
inline constexpr std::string_view kInputControlSpeedup = "input_control_speedup";
inline constexpr std::string_view kInputSlowdownPct = "input_slowdown_pct";
inline constexpr std::string_view kInputWaitSharePct = "input_wait_share_pct";
inline constexpr std::string_view kInputCopySharePct = "input_copy_share_pct";
inline constexpr std::string_view kInputComputeSharePct = "input_compute_share_pct";
inline constexpr std::string_view kInputGpuIdleSharePct = "input_gpu_idle_share_pct";
inline constexpr std::string_view kInputWaitingEnergyJ = "input_waiting_energy_j";
inline constexpr std::string_view kInputWaitingEnergySharePct = "input_waiting_energy_share_pct";
// Data-parallel cells (strategy: ddp; orchestrator/ddp_analysis.h, docs/distributed.md): every
// rank's steps over rank 0's measured span, and comparisons with the cell's world_size 1 cell and
// its ddp_mode twins from the same run. model: allreduce cells get nccl-tests' bandwidths.
inline constexpr std::string_view kDdpGlobalSamplesPerS = "ddp_global_samples_per_s";
inline constexpr std::string_view kDdpSlowestRank = "ddp_slowest_rank";
inline constexpr std::string_view kDdpStragglerLagNs = "ddp_straggler_lag_ns";
inline constexpr std::string_view kDdpStragglerLagPct = "ddp_straggler_lag_pct";
inline constexpr std::string_view kDdpAllreduceMeanNs = "ddp_allreduce_mean_ns";
inline constexpr std::string_view kDdpAllreduceSharePct = "ddp_allreduce_share_pct";
inline constexpr std::string_view kDdpSpeedup = "ddp_speedup";
inline constexpr std::string_view kDdpScalingEfficiencyPct = "ddp_scaling_efficiency_pct";
inline constexpr std::string_view kDdpExposedCommNs = "ddp_exposed_comm_ns";
inline constexpr std::string_view kDdpOverlapPct = "ddp_overlap_pct";
inline constexpr std::string_view kAllreduceAlgbwBytesPerS = "allreduce_algbw_bytes_per_s";
inline constexpr std::string_view kAllreduceBusbwBytesPerS = "allreduce_busbw_bytes_per_s";

// scenario: converge (docs/convergence.md), from the torch runner (EXTRAS). "To target" counts up
// to the end of the first evaluation that met the target; absent when the target was not reached.
inline constexpr std::string_view kTimeToTargetS = "time_to_target_s";
inline constexpr std::string_view kTrainTimeToTargetS = "train_time_to_target_s";
inline constexpr std::string_view kStepsToTarget = "steps_to_target";
inline constexpr std::string_view kEpochsToTarget = "epochs_to_target";
inline constexpr std::string_view kSamplesToTarget = "samples_to_target";
inline constexpr std::string_view kTargetReached = "target_reached";
inline constexpr std::string_view kFinalEvalAccuracy = "final_eval_accuracy";
inline constexpr std::string_view kFinalEvalLoss = "final_eval_loss";
inline constexpr std::string_view kBestEvalAccuracy = "best_eval_accuracy";
inline constexpr std::string_view kBestEvalLoss = "best_eval_loss";
inline constexpr std::string_view kEvalTimeS = "eval_time_s";
inline constexpr std::string_view kEvaluations = "evaluations";
inline constexpr std::string_view kTrainEpochs = "train_epochs";
// scenario: converge with eval_precisions (docs/precisions.md): the trained model evaluated on the
// held-out set at each precision after training, and each one's accuracy minus fp32's.
inline constexpr std::string_view kEvalAccuracyFp32 = "eval_accuracy_fp32";
inline constexpr std::string_view kEvalAccuracyTf32 = "eval_accuracy_tf32";
inline constexpr std::string_view kEvalAccuracyBf16 = "eval_accuracy_bf16";
inline constexpr std::string_view kEvalAccuracyFp16 = "eval_accuracy_fp16";
inline constexpr std::string_view kEvalAccuracyInt8 = "eval_accuracy_int8";
inline constexpr std::string_view kEvalAccuracyDeltaTf32 = "eval_accuracy_delta_tf32";
inline constexpr std::string_view kEvalAccuracyDeltaBf16 = "eval_accuracy_delta_bf16";
inline constexpr std::string_view kEvalAccuracyDeltaFp16 = "eval_accuracy_delta_fp16";
inline constexpr std::string_view kEvalAccuracyDeltaInt8 = "eval_accuracy_delta_int8";
// A TorchScript model's file as loaded (the serialized size of the deployment).
inline constexpr std::string_view kModelFileBytes = "model_file_bytes";

// The monitor analysis (monitor/analysis.h).
inline constexpr std::string_view kGpuUtilMeanPct = "gpu_util_mean_pct";
inline constexpr std::string_view kGpuUtilP5Pct = "gpu_util_p5_pct";
inline constexpr std::string_view kGpuMemUtilMeanPct = "gpu_mem_util_mean_pct";
inline constexpr std::string_view kSmClockMeanMhz = "sm_clock_mean_mhz";
inline constexpr std::string_view kTempMaxC = "temp_max_c";
inline constexpr std::string_view kPcieTxMeanBytesPerS = "pcie_tx_mean_bytes_per_s";
inline constexpr std::string_view kPcieRxMeanBytesPerS = "pcie_rx_mean_bytes_per_s";
inline constexpr std::string_view kPowerMeanW = "power_mean_w";
inline constexpr std::string_view kPowerMaxW = "power_max_w";
inline constexpr std::string_view kClocksThrottledFraction = "clocks_throttled_fraction";
inline constexpr std::string_view kEnergyTotalJ = "energy_total_j";
inline constexpr std::string_view kEnergyPerStepJ = "energy_per_step_j";
inline constexpr std::string_view kEnergyPerSampleJ = "energy_per_sample_j";
inline constexpr std::string_view kIdlePowerW = "idle_power_w";
inline constexpr std::string_view kEnergyAboveIdlePerStepJ = "energy_above_idle_per_step_j";
inline constexpr std::string_view kEnergyAboveIdlePerSampleJ = "energy_above_idle_per_sample_j";
inline constexpr std::string_view kCpuPackageEnergyPerStepJ = "cpu_package_energy_per_step_j";
inline constexpr std::string_view kCpuPackageEnergyPerSampleJ = "cpu_package_energy_per_sample_j";
inline constexpr std::string_view kHostCpuUtilPct = "host_cpu_util_pct";
inline constexpr std::string_view kHostCpuOtherCores = "host_cpu_other_cores";
inline constexpr std::string_view kHostCpuStealPct = "host_cpu_steal_pct";
inline constexpr std::string_view kGpuOtherProcsMax = "gpu_other_procs_max";
inline constexpr std::string_view kRunnerCpuWaitRatio = "runner_cpu_wait_ratio";
inline constexpr std::string_view kProcCpuUtilPct = "proc_cpu_util_pct";
inline constexpr std::string_view kHostMemUsedPeakBytes = "host_mem_used_peak_bytes";
inline constexpr std::string_view kProcRssPeakBytes = "proc_rss_peak_bytes";
inline constexpr std::string_view kGpuMemUsedPeakBytes = "gpu_mem_used_peak_bytes";
inline constexpr std::string_view kDeviceProcMemPeakBytes = "device_proc_mem_peak_bytes";
inline constexpr std::string_view kRssGrowthBytesPerStep = "rss_growth_bytes_per_step";
inline constexpr std::string_view kRssGrowthBytesPerStepCiLow = "rss_growth_bytes_per_step_ci_low";
inline constexpr std::string_view kRssGrowthBytesPerStepCiHigh = "rss_growth_bytes_per_step_ci_high";
inline constexpr std::string_view kDeviceMemGrowthBytesPerStep = "device_mem_growth_bytes_per_step";
inline constexpr std::string_view kDeviceMemGrowthBytesPerStepCiLow =
    "device_mem_growth_bytes_per_step_ci_low";
inline constexpr std::string_view kDeviceMemGrowthBytesPerStepCiHigh =
    "device_mem_growth_bytes_per_step_ci_high";

// Inference under load (docs/load.md): from a load cell's query records over its measured queries
// (orchestrator/load_cell.h), with LoadGen's index rule for percentiles and its rates.
inline constexpr std::string_view kLoadQueries = "load_queries";
inline constexpr std::string_view kQueryLatencyMeanNs = "query_latency_mean_ns";
inline constexpr std::string_view kQueryLatencyMinNs = "query_latency_min_ns";
inline constexpr std::string_view kQueryLatencyMaxNs = "query_latency_max_ns";
inline constexpr std::string_view kQueryLatencyP50Ns = "query_latency_p50_ns";
inline constexpr std::string_view kQueryLatencyP90Ns = "query_latency_p90_ns";
inline constexpr std::string_view kQueryLatencyP99Ns = "query_latency_p99_ns";
inline constexpr std::string_view kQueryLatencyP999Ns = "query_latency_p999_ns";
inline constexpr std::string_view kQueryLatencyAtPercentileNs = "query_latency_at_percentile_ns";
inline constexpr std::string_view kQueryLatencyEarlyStoppingNs = "query_latency_early_stopping_ns";
inline constexpr std::string_view kLoadEarlyStoppingMet = "load_early_stopping_met";
inline constexpr std::string_view kLoadEarlyStoppingQueriesNeeded = "load_early_stopping_queries_needed";
inline constexpr std::string_view kLoadLatencyBoundMet = "load_latency_bound_met";
inline constexpr std::string_view kLoadIssueKeptUp = "load_issue_kept_up";
inline constexpr std::string_view kLoadScheduledPerS = "load_scheduled_per_s";
inline constexpr std::string_view kLoadIssuedPerS = "load_issued_per_s";
inline constexpr std::string_view kLoadCompletedSamplesPerS = "load_completed_samples_per_s";
inline constexpr std::string_view kLoadSamplesPerS = "load_samples_per_s";
inline constexpr std::string_view kLoadQpsWithOverhead = "load_qps_with_overhead";
inline constexpr std::string_view kLoadQpsWithoutOverhead = "load_qps_without_overhead";
// The latency decomposition of a load cell's measured queries (orchestrator/load_decomposition.h):
// each part's mean and LoadGen percentile over the queries whose record carries it, and its mean's
// share of the mean latency; the queue part is what the other parts leave of the latency.
inline constexpr std::string_view kQueryQueueMeanNs = "query_queue_mean_ns";
inline constexpr std::string_view kQueryQueueP99Ns = "query_queue_p99_ns";
inline constexpr std::string_view kQueryQueueSharePct = "query_queue_share_pct";
inline constexpr std::string_view kQueryHostPreMeanNs = "query_pre_mean_ns";
inline constexpr std::string_view kQueryHostPreP99Ns = "query_pre_p99_ns";
inline constexpr std::string_view kQueryHostPreSharePct = "query_pre_share_pct";
inline constexpr std::string_view kQueryH2dMeanNs = "query_h2d_mean_ns";
inline constexpr std::string_view kQueryH2dP99Ns = "query_h2d_p99_ns";
inline constexpr std::string_view kQueryH2dSharePct = "query_h2d_share_pct";
inline constexpr std::string_view kQueryComputeMeanNs = "query_compute_mean_ns";
inline constexpr std::string_view kQueryComputeP99Ns = "query_compute_p99_ns";
inline constexpr std::string_view kQueryComputeSharePct = "query_compute_share_pct";
inline constexpr std::string_view kQueryD2hMeanNs = "query_d2h_mean_ns";
inline constexpr std::string_view kQueryD2hP99Ns = "query_d2h_p99_ns";
inline constexpr std::string_view kQueryD2hSharePct = "query_d2h_share_pct";
inline constexpr std::string_view kQueryHostPostMeanNs = "query_post_mean_ns";
inline constexpr std::string_view kQueryHostPostP99Ns = "query_post_p99_ns";
inline constexpr std::string_view kQueryHostPostSharePct = "query_post_share_pct";
// A peak search's cell (target_qps: max; orchestrator/peak_cell.h): the probes, each judged again
// from its query records. The load metrics above are then the peak probe's measured queries.
inline constexpr std::string_view kLoadPeakQps = "load_peak_qps";
inline constexpr std::string_view kLoadPeakLowestFailingQps = "load_peak_lowest_failing_qps";
inline constexpr std::string_view kLoadPeakProbes = "load_peak_probes";
inline constexpr std::string_view kLoadPeakResolution = "load_peak_resolution";
// A boundary search's cell (batch_size, seq_len or image_size: max; orchestrator/boundary_cell.h):
// each probe a fresh
// runner process; the cell's other metrics are the found batch's measured run.
inline constexpr std::string_view kBoundaryBatchSize = "boundary_batch_size";
inline constexpr std::string_view kBoundaryFirstFailingBatchSize = "boundary_first_failing_batch_size";
inline constexpr std::string_view kBoundaryProbes = "boundary_probes";
// seq_len: max and image_size: max: the same search over the input's size.
inline constexpr std::string_view kBoundarySeqLen = "boundary_seq_len";
inline constexpr std::string_view kBoundaryFirstFailingSeqLen = "boundary_first_failing_seq_len";
inline constexpr std::string_view kBoundaryImageSize = "boundary_image_size";
inline constexpr std::string_view kBoundaryFirstFailingImageSize = "boundary_first_failing_image_size";
}  // namespace metric

// The fields of a MEMORY snapshot (docs/protocol.md). The snapshot labelled "end" is stored under
// the plain field names; any other label L under "L_<field>" (after_warmup_device_allocated_peak_bytes).
namespace memory {
inline constexpr std::string_view kLabel = "label";  // the snapshot's label field
inline constexpr std::string_view kEndLabel = "end";
inline constexpr std::string_view kAfterWarmupLabel = "after_warmup";
inline constexpr std::string_view kHostRssBytes = "host_rss_bytes";
inline constexpr std::string_view kHostPeakRssBytes = "host_peak_rss_bytes";
inline constexpr std::string_view kDeviceAllocatedBytes = "device_allocated_bytes";
inline constexpr std::string_view kDeviceAllocatedPeakBytes = "device_allocated_peak_bytes";
inline constexpr std::string_view kDeviceReservedBytes = "device_reserved_bytes";
inline constexpr std::string_view kDeviceReservedPeakBytes = "device_reserved_peak_bytes";
}  // namespace memory

// The eval_accuracy_<precision> and eval_accuracy_delta_<precision> names of a precision ("fp32",
// "bf16", ...); nullopt for a name that is not a precision, and for fp32's delta.
std::optional<std::string_view> EvalAccuracyMetric(std::string_view precision);
std::optional<std::string_view> EvalAccuracyDeltaMetric(std::string_view precision);

// Every declared metric, in documented order (memory fields under their plain names).
const std::vector<MetricDef>& MetricDefinitions();

// The definition of a stored name: an exact declared name, or a memory field prefixed by a
// snapshot label ("after_warmup_device_allocated_peak_bytes"). nullptr for anything else.
const MetricDef* FindMetricDef(std::string_view name);

// The declared unit of `name`; DLBENCH_CHECKs that it is declared.
std::string_view MetricUnit(std::string_view name);

// The stored name of a MEMORY snapshot field: the field itself for the "end" snapshot,
// "<label>_<field>" otherwise.
std::string MemoryMetricName(std::string_view label, std::string_view field);

// The table as Markdown (docs/metrics.md is its output: `dlbench metrics --format markdown`).
std::string RenderMetricsMarkdown();
// The table as aligned plain text for the terminal.
std::string RenderMetricsText();

}  // namespace dlbench::record

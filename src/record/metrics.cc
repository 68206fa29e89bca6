#include "record/metrics.h"

#include <fmt/core.h>

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "common/text.h"

namespace dlbench::record {

std::string_view Name(Producer producer) {
  switch (producer) {
    case Producer::kOrchestrator:
      return "orchestrator";
    case Producer::kMonitor:
      return "monitor";
    case Producer::kRunner:
      return "runner";
    case Producer::kRunnerMemory:
      return "runner MEMORY";
  }
  return "?";
}

namespace {

using namespace metric;  // NOLINT(google-build-using-namespace): the table reads better
constexpr std::string_view kMeasured = "measured window";
constexpr std::string_view kMeasuredQueries = "measured queries (load cells)";
constexpr std::string_view kConverge = "the whole training (scenario: converge)";
constexpr std::string_view kProbes = "every probe of a peak search (target_qps: max)";
constexpr std::string_view kBoundaryProbesWindow =
    "every probe of a boundary search (batch_size, seq_len or image_size: max)";
constexpr std::string_view kMeasuredSamples = "monitor samples inside the measured window";
constexpr std::string_view kCell = "whole cell";
constexpr std::string_view kPrecisionEval = "the held-out set after training (eval_precisions)";
constexpr std::string_view kSnapshot = "the snapshot's moment";
constexpr std::string_view kRunnerLoop = "the runner's loop after its first 3 steps";

const std::vector<MetricDef>& Table() {
  static const std::vector<MetricDef> kTable = {
      // The measured window and its step-time summary.
      {kWarmupSteps, "steps", Producer::kOrchestrator, kCell,
       "rank-0 steps before the measured window (the MSER-5 cut, at least min_warmup_steps)"},
      {kMeasuredSteps, "steps", Producer::kOrchestrator, kMeasured,
       "rank-0 steps in the measured window (steps that arrived after STOP are not measured)"},
      {kMeasuredWindowS, "s", Producer::kOrchestrator, kMeasured,
       "last measured step's end - first measured step's start"},
      {kSamplesPerS, "1/s", Producer::kOrchestrator, kMeasured,
       "sum of the measured steps' samples / measured_window_s"},
      {kStepsPerS, "1/s", Producer::kOrchestrator, kMeasured, "measured_steps / measured_window_s"},
      {kStepTimeMeanNs, "ns", Producer::kOrchestrator, kMeasured, "mean of end_ns - start_ns"},
      {kStepTimeMedianNs, "ns", Producer::kOrchestrator, kMeasured, "median step time (type-7 quantile 0.5)"},
      {kStepTimeMinNs, "ns", Producer::kOrchestrator, kMeasured, "shortest step"},
      {kStepTimeMaxNs, "ns", Producer::kOrchestrator, kMeasured, "longest step"},
      {kStepTimeP50Ns, "ns", Producer::kOrchestrator, kMeasured, "type-7 quantile 0.50 of step time"},
      {kStepTimeP90Ns, "ns", Producer::kOrchestrator, kMeasured, "type-7 quantile 0.90 of step time"},
      {kStepTimeP95Ns, "ns", Producer::kOrchestrator, kMeasured, "type-7 quantile 0.95 of step time"},
      {kStepTimeP99Ns, "ns", Producer::kOrchestrator, kMeasured, "type-7 quantile 0.99 of step time"},
      {kStepTimeStddevNs, "ns", Producer::kOrchestrator, kMeasured,
       "sample standard deviation of step time (n - 1); absent with one step"},
      {kStepTimeCv, "ratio", Producer::kOrchestrator, kMeasured, "step_time_stddev_ns / step_time_mean_ns"},
      {kStepTimeCiLowNs, "ns", Producer::kOrchestrator, kMeasured,
       "lower end of the batch-means confidence interval of the mean step time (ci_level); absent "
       "below 20 steps"},
      {kStepTimeCiHighNs, "ns", Producer::kOrchestrator, kMeasured,
       "upper end of the batch-means confidence interval of the mean step time"},
      {kStepTimeCiRelHalfwidth, "ratio", Producer::kOrchestrator, kMeasured,
       "(step_time_ci_high_ns - step_time_ci_low_ns) / 2 / step_time_mean_ns"},

      // FLOPs.
      {kFlopsPerSample, "FLOP", Producer::kRunner, kCell,
       "model FLOPs per sample counted from the built layers (multiply-add = 2; training = 3 x forward)"},
      {kPeakFlopsPerS, "FLOP/s", Producer::kRunner, kCell,
       "the device's datasheet peak for the cell's precision (dense tensor-core or FP32)"},
      {kAchievedFlopsPerS, "FLOP/s", Producer::kOrchestrator, kMeasured, "flops_per_sample x samples_per_s"},
      {kMfuRatio, "ratio", Producer::kOrchestrator, kMeasured,
       "model FLOPs utilisation: achieved_flops_per_s / peak_flops_per_s"},

      // Timeline.
      {kTimeToHelloS, "s", Producer::kOrchestrator, kCell,
       "runner spawn -> its HELLO (process start, libraries)"},
      {kSetupS, "s", Producer::kOrchestrator, kCell,
       "HELLO -> first step's start (or READY without steps): device initialisation, model build"},
      {kWarmupS, "s", Producer::kOrchestrator, kCell,
       "first step's start -> first measured step's start (warm-up steps, autotuning)"},
      {kTimeToMeasureS, "s", Producer::kOrchestrator, kCell, "runner spawn -> first measured step's start"},
      {kCellWallS, "s", Producer::kOrchestrator, kCell, "runner spawn -> runner exit"},

      // Runner facts.
      {kLossScaleFinal, "", Producer::kRunner, kCell,
       "the dynamic loss scaler's scale after the last step (fp16)"},
      {kSkippedOptimizerSteps, "steps", Producer::kRunner, kCell,
       "optimizer steps the loss scaler skipped for non-finite gradients"},
      {kCompileTimeS, "s", Producer::kRunner, kCell,
       "time the framework spent compiling the model (torch.compile, XLA), outside the measured steps"},
      {kCompileSecondCallS, "s", Producer::kRunner, kCell,
       "the second call of a compiled step (Python torch runner): shows whether compilation finished"},
      {kJaxLowerS, "s", Producer::kRunner, kCell,
       "JAX tracing and lowering of the step, outside the measured steps"},
      {kXlaCompileS, "s", Producer::kRunner, kCell,
       "XLA's compilation of the lowered step (autotuning included), outside the measured steps"},
      {kOpByOpFirstStepS, "s", Producer::kRunner, kCell,
       "JAX op by op (compile: false): the first step, which compiles each primitive once, run before READY "
       "and outside the measured steps"},
      {kWeightBytes, "bytes", Producer::kRunner, kCell,
       "every parameter and buffer of the model as the cell holds it (autocast keeps fp32 weights; int8: "
       "Linear weights packed at 1 byte per element plus a 16-byte scale and zero point, fp32 biases)"},
      {kLinearWeightBytes, "bytes", Producer::kRunner, kCell,
       "the Linear layers' weight matrices as held (no biases): 4 bytes per element in fp32, 1 plus 16 per "
       "layer in int8"},
      {kGradBytes, "bytes", Producer::kRunner, kCell,
       "train: one gradient per trainable parameter at the parameter's dtype (fp32 under autocast)"},
      {kOptimizerStateBytes, "bytes", Producer::kRunner, kCell,
       "train: the optimizer's tensors per trainable parameter at its dtype: SGD with momentum 1, AdamW 2 "
       "(its int64 step counters are on the host, stated in extras.info.memory)"},
      {kInputBatchBytes, "bytes", Producer::kRunner, kCell,
       "the fixed batch every step reads: its inputs and training target"},
      {kDatasetBytes, "bytes", Producer::kRunner, kCell,
       "scenario: converge: the training and held-out sets the cell keeps on its device (images float32, "
       "labels int64), which each step's batch is gathered from"},
      {kExpectedResidentBytes, "bytes", Producer::kRunner, kCell,
       "weight_bytes + grad_bytes + optimizer_state_bytes + input_batch_bytes (+ dataset_bytes for "
       "converge): "
       "what the cell holds whatever its activations"},
      {kMemoryPeakBytes, "bytes", Producer::kRunner, kCell,
       "CUDA: the caching allocator's peak allocated bytes of the end snapshot (after the warm-up snapshot "
       "when the cell ran past it); CPU: the runner's peak RSS - its RSS just before the model was built"},
      {kActivationWorkspaceBytes, "bytes", Producer::kRunner, kCell,
       "memory_peak_bytes - expected_resident_bytes: activations, autocast's weight copies, the optimizer "
       "step's temporaries and library workspaces (CPU: also code pages and thread stacks); absent when "
       "negative"},
      {kAllocatorFragmentationBytes, "bytes", Producer::kRunner, kCell,
       "CUDA: device_reserved_peak_bytes - device_allocated_peak_bytes of the end snapshot: memory the "
       "caching allocator held but no tensor used at the peaks"},
      {kModelFileBytes, "bytes", Producer::kRunner, kCell,
       "size of the model file the runner loaded (model: torchscript or aoti), as stat() reports it"},
      {kClientOverheadNsPerStep, "ns", Producer::kRunner, kMeasured,
       "the Python client's own time per step in its loop, outside the step function (clients/python)"},

      // The torch runner's input pipeline. The runner cannot see the measured window; it counts
      // from its warm-up memory snapshot (after 3 steps) to the end of its loop.
      {kDataWorkerCpuUtilPct, "%", Producer::kRunner, kRunnerLoop,
       "decode workers' CPU time (CLOCK_THREAD_CPUTIME_ID) / (workers x wall time) x 100"},
      {kDataWorkerBusyPct, "%", Producer::kRunner, kRunnerLoop,
       "workers' time reading, decoding and transforming / (workers x wall time) x 100; the rest they "
       "waited for a free buffer or for room ahead of the step"},
      {kDataSamplesPerWorkerS, "1/s", Producer::kRunner, kRunnerLoop,
       "samples the workers produced / seconds they spent producing them: one busy worker's throughput"},
      {kDataReadPct, "%", Producer::kRunner, kRunnerLoop,
       "share of the workers' busy time spent reading encoded bytes (file or record, CRC checks)"},
      {kDataDecodePct, "%", Producer::kRunner, kRunnerLoop,
       "share of the workers' busy time spent in JPEG header and decode (libjpeg-turbo)"},
      {kDataTransformPct, "%", Producer::kRunner, kRunnerLoop,
       "share of the workers' busy time spent cropping, resizing, flipping, normalising into the batch"},
      {kDataCacheHitPct, "%", Producer::kRunner, kRunnerLoop,
       "samples served decoded from the cache / samples produced x 100 (cache: true)"},
      {kDataCorruptInputs, "inputs", Producer::kRunner, kCell,
       "distinct corrupt inputs found (undecodable JPEGs, records with a bad CRC or a missing key, "
       "files whose framing breaks), skip_corrupt: true"},
      {kDataSkippedSamples, "samples", Producer::kRunner, kCell,
       "times a corrupt input was replaced by the next good sample (skip_corrupt: true)"},

      // scenario: converge. Times on the runner's CLOCK_MONOTONIC from the first training step's
      // start; an evaluation runs between steps, never inside one.
      {kTimeToTargetS, "s", Producer::kRunner, kConverge,
       "end of the first evaluation that met the target - start of the first training step (training "
       "steps, evaluations and the loop between them)"},
      {kTrainTimeToTargetS, "s", Producer::kRunner, kConverge,
       "sum of the timed training steps' durations (end_ns - start_ns) up to that evaluation"},
      {kStepsToTarget, "steps", Producer::kRunner, kConverge, "training steps before that evaluation"},
      {kEpochsToTarget, "epochs", Producer::kRunner, kConverge,
       "samples_to_target / training samples (fractional)"},
      {kSamplesToTarget, "samples", Producer::kRunner, kConverge, "steps_to_target x batch_size"},
      {kTargetReached, "ratio", Producer::kRunner, kConverge,
       "1 when an evaluation met the target, 0 when the cell ended at max_epochs, max_train_time_s or "
       "its step ceiling without"},
      {kFinalEvalAccuracy, "ratio", Producer::kRunner, kConverge,
       "the last evaluation's accuracy: correct top-1 predictions / evaluated samples"},
      {kFinalEvalLoss, "nats", Producer::kRunner, kConverge,
       "the last evaluation's mean cross-entropy over the evaluated samples"},
      {kBestEvalAccuracy, "ratio", Producer::kRunner, kConverge, "the highest accuracy of any evaluation"},
      {kBestEvalLoss, "nats", Producer::kRunner, kConverge,
       "the lowest mean cross-entropy of any evaluation"},
      {kEvalTimeS, "s", Producer::kRunner, kConverge,
       "sum of the evaluations' durations (outside the timed steps), the whole training"},
      {kEvaluations, "count", Producer::kRunner, kConverge, "evaluations of the held-out set"},
      {kTrainEpochs, "epochs", Producer::kRunner, kConverge,
       "training samples seen / training samples (fractional), the whole training"},
      {kEvalAccuracyFp32, "ratio", Producer::kRunner, kPrecisionEval,
       "correct top-1 predictions / evaluated samples of the trained model in fp32 (TF32 off)"},
      {kEvalAccuracyTf32, "ratio", Producer::kRunner, kPrecisionEval,
       "the same with TF32 matmuls and convolutions on (CUDA)"},
      {kEvalAccuracyBf16, "ratio", Producer::kRunner, kPrecisionEval, "the same under bf16 autocast"},
      {kEvalAccuracyFp16, "ratio", Producer::kRunner, kPrecisionEval, "the same under fp16 autocast"},
      {kEvalAccuracyInt8, "ratio", Producer::kRunner, kPrecisionEval,
       "the same of the model quantized after training (static int8 convolutions with BatchNorm folded "
       "and activation ranges calibrated on training images, dynamic int8 Linear), on the CPU"},
      {kEvalAccuracyDeltaTf32, "ratio", Producer::kRunner, kPrecisionEval,
       "eval_accuracy_tf32 - eval_accuracy_fp32 (negative: tf32 lost accuracy)"},
      {kEvalAccuracyDeltaBf16, "ratio", Producer::kRunner, kPrecisionEval,
       "eval_accuracy_bf16 - eval_accuracy_fp32"},
      {kEvalAccuracyDeltaFp16, "ratio", Producer::kRunner, kPrecisionEval,
       "eval_accuracy_fp16 - eval_accuracy_fp32"},
      {kEvalAccuracyDeltaInt8, "ratio", Producer::kRunner, kPrecisionEval,
       "eval_accuracy_int8 - eval_accuracy_fp32"},
      // The input-bound verdict: the cell against its control (data: device) from the same run.
      {kInputControlSpeedup, "ratio", Producer::kOrchestrator, kMeasured,
       "the control's samples_per_s / the cell's samples_per_s"},
      {kInputSlowdownPct, "%", Producer::kOrchestrator, kMeasured,
       "(1 - samples_per_s / the control's samples_per_s) x 100; negative when the cell is faster"},
      {kInputWaitSharePct, "%", Producer::kOrchestrator, kMeasured,
       "sum of data_wait / sum of step time x 100, over steps that report data_wait and compute"},
      {kInputCopySharePct, "%", Producer::kOrchestrator, kMeasured,
       "sum of max(0, step - data_wait - compute - comm) / sum of step time x 100 (the copy is the "
       "remainder)"},
      {kInputComputeSharePct, "%", Producer::kOrchestrator, kMeasured,
       "sum of compute (and comm) / sum of step time x 100"},
      {kInputGpuIdleSharePct, "%", Producer::kOrchestrator, kMeasuredSamples, "100 - gpu_util_mean_pct"},
      {kInputWaitingEnergyJ, "J", Producer::kOrchestrator, kMeasured,
       "the GPUs' power series integrated over each measured step's wait [start, start + data_wait)"},
      {kInputWaitingEnergySharePct, "%", Producer::kOrchestrator, kMeasured,
       "input_waiting_energy_j / energy_total_j x 100"},
      // Data-parallel cells: every rank over rank 0's measured span [first measured step's start, last
      // measured step's end]; comparisons with cells of the same run.
      {kDdpGlobalSamplesPerS, "1/s", Producer::kOrchestrator, kMeasured,
       "sum over the ranks of the samples each did within rank 0's measured span (a step partly inside "
       "counts by the part inside) / measured_window_s"},
      {kDdpSlowestRank, "rank", Producer::kOrchestrator, kMeasured,
       "the rank with the longest mean own step time (step time less comm_ns where reported) over its "
       "steps inside rank 0's measured span"},
      {kDdpStragglerLagNs, "ns", Producer::kOrchestrator, kMeasured,
       "the slowest rank's mean own step time - the fastest rank's"},
      {kDdpStragglerLagPct, "%", Producer::kOrchestrator, kMeasured,
       "ddp_straggler_lag_ns / the fastest rank's mean own step time x 100"},
      {kDdpAllreduceMeanNs, "ns", Producer::kOrchestrator, kMeasured,
       "ddp_mode serial: mean comm_ns (the gradient buckets' all-reduce after backward) of rank 0's "
       "measured steps"},
      {kDdpAllreduceSharePct, "%", Producer::kOrchestrator, kMeasured,
       "ddp_mode serial: sum of comm_ns / sum of step time x 100, rank 0's measured steps"},
      {kDdpSpeedup, "ratio", Producer::kOrchestrator, kMeasured,
       "ddp_global_samples_per_s / that of the world_size 1 cell with every other parameter equal, "
       "from the same run"},
      {kDdpScalingEfficiencyPct, "%", Producer::kOrchestrator, kMeasured, "ddp_speedup / world_size x 100"},
      {kDdpExposedCommNs, "ns", Producer::kOrchestrator, kMeasured,
       "step_time_mean_ns - that of the ddp_mode compute_only twin (every other parameter equal, same "
       "run): the communication the step did not hide"},
      {kDdpOverlapPct, "%", Producer::kOrchestrator, kMeasured,
       "ddp_mode overlap: (1 - ddp_exposed_comm_ns / the serial twin's ddp_allreduce_mean_ns) x 100: the "
       "share of the all-reduce hidden behind backward"},
      {kAllreduceAlgbwBytesPerS, "bytes/s", Producer::kOrchestrator, kMeasured,
       "model allreduce: nccl-tests' algorithm bandwidth, allreduce_bytes / step_time_mean_ns (rank 0's "
       "mean time of one all-reduce)"},
      {kAllreduceBusbwBytesPerS, "bytes/s", Producer::kOrchestrator, kMeasured,
       "model allreduce: nccl-tests' bus bandwidth, allreduce_algbw_bytes_per_s x 2 (world_size - 1) / "
       "world_size (0 for one rank)"},

      // Monitor analysis.
      {kGpuUtilMeanPct, "%", Producer::kMonitor, kMeasuredSamples,
       "mean NVML GPU utilisation (share of time a kernel ran), the cell's GPUs pooled"},
      {kGpuUtilP5Pct, "%", Producer::kMonitor, kMeasuredSamples, "5th percentile of GPU utilisation"},
      {kGpuMemUtilMeanPct, "%", Producer::kMonitor, kMeasuredSamples,
       "mean NVML memory-controller utilisation"},
      {kSmClockMeanMhz, "MHz", Producer::kMonitor, kMeasuredSamples, "mean SM clock"},
      {kTempMaxC, "C", Producer::kMonitor, kMeasuredSamples, "highest GPU temperature"},
      {kPcieTxMeanBytesPerS, "bytes/s", Producer::kMonitor, kMeasuredSamples,
       "mean PCIe transmit throughput"},
      {kPcieRxMeanBytesPerS, "bytes/s", Producer::kMonitor, kMeasuredSamples, "mean PCIe receive throughput"},
      {kPowerMeanW, "W", Producer::kMonitor, kMeasuredSamples,
       "mean board power, summed over the cell's GPUs"},
      {kPowerMaxW, "W", Producer::kMonitor, kMeasuredSamples, "highest board power sum"},
      {kClocksThrottledFraction, "ratio", Producer::kMonitor, kMeasuredSamples,
       "share of samples with a throttling clocks-event reason set"},
      {kEnergyTotalJ, "J", Producer::kMonitor, kMeasured,
       "GPU energy over the window: the driver's counter, else integrated power "
       "(extras.monitor.energy_method)"},
      {kEnergyPerStepJ, "J", Producer::kMonitor, kMeasured, "energy_total_j / measured_steps"},
      {kEnergyPerSampleJ, "J", Producer::kMonitor, kMeasured, "energy_total_j / measured samples"},
      {kIdlePowerW, "W", Producer::kMonitor, "idle baseline before the cell",
       "mean GPU power with no runner (measure.idle_baseline_s)"},
      {kEnergyAboveIdlePerStepJ, "J", Producer::kMonitor, kMeasured,
       "(energy_total_j - idle_power_w x measured_window_s) / measured_steps"},
      {kEnergyAboveIdlePerSampleJ, "J", Producer::kMonitor, kMeasured,
       "(energy_total_j - idle_power_w x measured_window_s) / measured samples"},
      {kCpuPackageEnergyPerStepJ, "J", Producer::kMonitor, kMeasured, "RAPL package energy / measured_steps"},
      {kCpuPackageEnergyPerSampleJ, "J", Producer::kMonitor, kMeasured,
       "RAPL package energy / measured samples"},
      {kHostCpuUtilPct, "%", Producer::kMonitor, kMeasuredSamples,
       "mean whole-host CPU utilisation (/proc/stat)"},
      {kHostCpuOtherCores, "cores", Producer::kMonitor, kMeasuredSamples,
       "mean busy CPUs of the whole host less the runner tree's CPU seconds / window: what else ran"},
      {kHostCpuStealPct, "%", Producer::kMonitor, kMeasuredSamples,
       "mean share of all CPUs' time stolen by the hypervisor (/proc/stat steal): a virtual machine's "
       "CPUs waiting while other guests ran"},
      {kRunnerCpuWaitRatio, "ratio", Producer::kMonitor, kMeasuredSamples,
       "seconds the runner's threads were runnable but waiting for a CPU / seconds they ran (schedstat)"},
      {kGpuOtherProcsMax, "processes", Producer::kMonitor, kMeasuredSamples,
       "most compute processes outside the runner's tree seen on the cell's GPUs at once"},
      {kProcCpuUtilPct, "% of one core", Producer::kMonitor, kMeasured,
       "CPU time of the runner's process tree / measured_window_s x 100"},
      {kHostMemUsedPeakBytes, "bytes", Producer::kMonitor, kMeasuredSamples, "highest host memory in use"},
      {kProcRssPeakBytes, "bytes", Producer::kMonitor, kMeasuredSamples,
       "highest resident set of the runner's process tree"},
      {kGpuMemUsedPeakBytes, "bytes", Producer::kMonitor, kMeasuredSamples,
       "highest device memory in use (all processes), summed over the cell's GPUs"},
      {kDeviceProcMemPeakBytes, "bytes", Producer::kMonitor, kMeasuredSamples,
       "highest device memory of the runner's process tree"},
      {kRssGrowthBytesPerStep, "bytes/step", Producer::kMonitor, kMeasuredSamples,
       "Theil-Sen slope of the process tree's RSS against step position (the leak test)"},
      {kRssGrowthBytesPerStepCiLow, "bytes/step", Producer::kMonitor, kMeasuredSamples,
       "lower end of the slope's confidence interval"},
      {kRssGrowthBytesPerStepCiHigh, "bytes/step", Producer::kMonitor, kMeasuredSamples,
       "upper end of the slope's confidence interval"},
      {kDeviceMemGrowthBytesPerStep, "bytes/step", Producer::kMonitor, kMeasuredSamples,
       "Theil-Sen slope of the process tree's device memory against step position"},
      {kDeviceMemGrowthBytesPerStepCiLow, "bytes/step", Producer::kMonitor, kMeasuredSamples,
       "lower end of the slope's confidence interval"},
      {kDeviceMemGrowthBytesPerStepCiHigh, "bytes/step", Producer::kMonitor, kMeasuredSamples,
       "upper end of the slope's confidence interval"},

      // Inference under load (orchestrator/load_cell.h): latency = completed - scheduled.
      {kLoadQueries, "queries", Producer::kOrchestrator, kMeasuredQueries,
       "queries in the measured window: query ids [0, n), up to the query at which the load policy's "
       "stopping rule held"},
      {kQueryLatencyMeanNs, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "mean of completed_ns - scheduled_ns"},
      {kQueryLatencyMinNs, "ns", Producer::kOrchestrator, kMeasuredQueries, "smallest query latency"},
      {kQueryLatencyMaxNs, "ns", Producer::kOrchestrator, kMeasuredQueries, "largest query latency"},
      {kQueryLatencyP50Ns, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "LoadGen's percentile: sorted latencies[floor(n x 0.5)]"},
      {kQueryLatencyP90Ns, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "sorted latencies[floor(n x 0.9)]"},
      {kQueryLatencyP99Ns, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "sorted latencies[floor(n x 0.99)]"},
      {kQueryLatencyP999Ns, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "sorted latencies[floor(n x 0.999)]"},
      {kQueryLatencyAtPercentileNs, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "sorted latencies[floor(n x latency_percentile)]: the figure a server's bound is checked against"},
      {kQueryLatencyEarlyStoppingNs, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "single and multi stream: the t-th largest latency for the largest t with h(t) + t <= n, an upper "
       "bound of the latency_percentile at early_stopping_confidence (LoadGen's early-stopping estimate; "
       "absent below h(1) + 1 queries)"},
      {kLoadEarlyStoppingMet, "bool", Producer::kOrchestrator, kMeasuredQueries,
       "1 when early stopping supports the claim: the server's n >= h(t) + t with t queries over the bound; "
       "an estimate exists for single and multi stream"},
      {kLoadEarlyStoppingQueriesNeeded, "queries", Producer::kOrchestrator, kMeasuredQueries,
       "server: h(t) + t for the t queries over the bound; single and multi stream: h(1) + 1"},
      {kLoadLatencyBoundMet, "bool", Producer::kOrchestrator, kMeasuredQueries,
       "server: 1 when query_latency_at_percentile_ns <= latency_bound_ms"},
      {kLoadIssueKeptUp, "bool", Producer::kOrchestrator, kMeasuredQueries,
       "server: 1 when load_issued_per_s >= 0.99 x load_scheduled_per_s and the runner did not end with "
       "too many outstanding queries"},
      {kLoadScheduledPerS, "1/s", Producer::kOrchestrator, kMeasuredQueries,
       "(n - 1) / (last scheduled_ns - first scheduled_ns)"},
      {kLoadIssuedPerS, "1/s", Producer::kOrchestrator, kMeasuredQueries,
       "(n - 1) / (last issued_ns - first issued_ns)"},
      {kLoadCompletedSamplesPerS, "1/s", Producer::kOrchestrator, kMeasuredQueries,
       "LoadGen's server figure: (samples - 1) / (last completed_ns - first scheduled_ns)"},
      {kLoadSamplesPerS, "1/s", Producer::kOrchestrator, kMeasuredQueries,
       "LoadGen's offline figure: samples / (last completed_ns - first scheduled_ns)"},
      {kLoadQpsWithOverhead, "1/s", Producer::kOrchestrator, kMeasuredQueries,
       "LoadGen's single-stream 'QPS w/ loadgen overhead': (n - 1) / (last issued_ns - first scheduled_ns)"},
      {kLoadQpsWithoutOverhead, "1/s", Producer::kOrchestrator, kMeasuredQueries,
       "LoadGen's 'QPS w/o loadgen overhead': 1 / query_latency_mean_ns"},
      // The latency decomposition (orchestrator/load_decomposition.h), over the measured queries whose
      // record carries the part; queue over every measured query.
      {kQueryQueueMeanNs, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "mean of the rest of the latency: latency - the sum of the parts the record carries (issue delay, "
       "waiting in the batcher's queue and for a stream, host time no part covers)"},
      {kQueryQueueP99Ns, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "LoadGen's p99 of the queue part: sorted[floor(n x 0.99)]"},
      {kQueryQueueSharePct, "%", Producer::kOrchestrator, kMeasuredQueries,
       "query_queue_mean_ns / query_latency_mean_ns x 100"},
      {kQueryHostPreMeanNs, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "mean of host pre-processing (load.pre_ns)"},
      {kQueryHostPreP99Ns, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "LoadGen's p99 of the pre part: sorted[floor(n x 0.99)]"},
      {kQueryHostPreSharePct, "%", Producer::kOrchestrator, kMeasuredQueries,
       "query_pre_mean_ns / query_latency_mean_ns x 100"},
      {kQueryH2dMeanNs, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "mean of the host-to-device copy of the input (load.h2d_ns)"},
      {kQueryH2dP99Ns, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "LoadGen's p99 of the h2d part: sorted[floor(n x 0.99)]"},
      {kQueryH2dSharePct, "%", Producer::kOrchestrator, kMeasuredQueries,
       "query_h2d_mean_ns / query_latency_mean_ns x 100"},
      {kQueryComputeMeanNs, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "mean of compute (load.compute_ns)"},
      {kQueryComputeP99Ns, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "LoadGen's p99 of the compute part: sorted[floor(n x 0.99)]"},
      {kQueryComputeSharePct, "%", Producer::kOrchestrator, kMeasuredQueries,
       "query_compute_mean_ns / query_latency_mean_ns x 100"},
      {kQueryD2hMeanNs, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "mean of the device-to-host copy of the output (load.d2h_ns)"},
      {kQueryD2hP99Ns, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "LoadGen's p99 of the d2h part: sorted[floor(n x 0.99)]"},
      {kQueryD2hSharePct, "%", Producer::kOrchestrator, kMeasuredQueries,
       "query_d2h_mean_ns / query_latency_mean_ns x 100"},
      {kQueryHostPostMeanNs, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "mean of host post-processing (load.post_ns)"},
      {kQueryHostPostP99Ns, "ns", Producer::kOrchestrator, kMeasuredQueries,
       "LoadGen's p99 of the post part: sorted[floor(n x 0.99)]"},
      {kQueryHostPostSharePct, "%", Producer::kOrchestrator, kMeasuredQueries,
       "query_post_mean_ns / query_latency_mean_ns x 100"},
      {kLoadPeakQps, "1/s", Producer::kOrchestrator, kProbes,
       "the highest target_qps of a valid probe below every invalid probe's (LoadGen's 'maximum Poisson "
       "throughput parameter supported'); each probe judged from its measured queries as a server cell is"},
      {kLoadPeakLowestFailingQps, "1/s", Producer::kOrchestrator, kProbes,
       "the lowest target_qps of an invalid probe: the bracket's upper end"},
      {kLoadPeakProbes, "probes", Producer::kOrchestrator, kProbes, "probes the search ran"},
      {kLoadPeakResolution, "ratio", Producer::kOrchestrator, kProbes,
       "the cell's peak_resolution: a converged search has load_peak_lowest_failing_qps / load_peak_qps - 1 "
       "<= this"},

      {kBoundaryBatchSize, "samples", Producer::kOrchestrator, kBoundaryProbesWindow,
       "the largest batch_size whose probe ended ok below every probe that ran out of memory; the cell is "
       "then measured at it"},
      {kBoundaryFirstFailingBatchSize, "samples", Producer::kOrchestrator, kBoundaryProbesWindow,
       "the smallest batch_size whose probe ended oom: the bracket's upper end (boundary_batch_size + 1 "
       "when the search converged)"},
      {kBoundaryProbes, "probes", Producer::kOrchestrator, kBoundaryProbesWindow,
       "probes the search ran (each a fresh runner process unless boundary_probe_process: shared), not "
       "counting the measured run"},
      {kBoundarySeqLen, "tokens", Producer::kOrchestrator, kBoundaryProbesWindow,
       "seq_len: max: the largest seq_len whose probe ended ok below every probe that ran out of memory"},
      {kBoundaryFirstFailingSeqLen, "tokens", Producer::kOrchestrator, kBoundaryProbesWindow,
       "seq_len: max: the smallest seq_len whose probe ended oom"},
      {kBoundaryImageSize, "px", Producer::kOrchestrator, kBoundaryProbesWindow,
       "image_size: max: the largest image_size whose probe ended ok below every probe that ran out of "
       "memory"},
      {kBoundaryFirstFailingImageSize, "px", Producer::kOrchestrator, kBoundaryProbesWindow,
       "image_size: max: the smallest image_size whose probe ended oom"},

      // MEMORY snapshot fields ("end" snapshot; other labels are prefixed).
      {memory::kHostRssBytes, "bytes", Producer::kRunnerMemory, kSnapshot, "the runner's resident set"},
      {memory::kHostPeakRssBytes, "bytes", Producer::kRunnerMemory, kSnapshot,
       "the runner's peak resident set so far (VmHWM)"},
      {memory::kDeviceAllocatedBytes, "bytes", Producer::kRunnerMemory, kSnapshot,
       "device memory held by live tensors (caching allocator)"},
      {memory::kDeviceAllocatedPeakBytes, "bytes", Producer::kRunnerMemory, kSnapshot,
       "peak of device_allocated_bytes since the last reset (after warm-up for the end snapshot)"},
      {memory::kDeviceReservedBytes, "bytes", Producer::kRunnerMemory, kSnapshot,
       "device memory the caching allocator holds from the driver"},
      {memory::kDeviceReservedPeakBytes, "bytes", Producer::kRunnerMemory, kSnapshot,
       "peak of device_reserved_bytes since the last reset"},
  };
  return kTable;
}

}  // namespace

const std::vector<MetricDef>& MetricDefinitions() { return Table(); }

const MetricDef* FindMetricDef(std::string_view name) {
  const auto& table = Table();
  for (const auto& def : table) {
    if (def.name == name) return &def;
  }
  // "<label>_<memory field>": a snapshot other than "end".
  for (const auto& def : table) {
    if (def.producer != Producer::kRunnerMemory) continue;
    if (name.size() > def.name.size() + 1 && name.substr(name.size() - def.name.size()) == def.name &&
        name[name.size() - def.name.size() - 1] == '_') {
      return &def;
    }
  }
  return nullptr;
}

std::string_view MetricUnit(std::string_view name) {
  const MetricDef* def = FindMetricDef(name);
  DLBENCH_CHECK(def != nullptr, "metric '" + std::string(name) + "' is not declared in record/metrics.h");
  return def->unit;
}

std::string MemoryMetricName(std::string_view label, std::string_view field) {
  if (label == memory::kEndLabel) return std::string(field);
  return std::string(label) + "_" + std::string(field);
}

std::string RenderMetricsMarkdown() {
  std::string out =
      "# Metrics\n\n"
      "Every metric dlbench stores, one entry each (generated from `src/record/metrics.cc` by\n"
      "`dlbench metrics --format markdown`; do not edit by hand). A metric a cell cannot give is\n"
      "absent, never 0. MEMORY fields are stored under their plain names for the snapshot labelled\n"
      "`end` and as `<label>_<field>` for any other label (`after_warmup_device_allocated_peak_bytes`).\n\n"
      "| name | unit | producer | over | definition |\n|---|---|---|---|---|\n";
  for (const auto& d : Table()) {
    out += fmt::format("| `{}` | {} | {} | {} | {} |\n", d.name,
                       d.unit.empty() ? "-" : EscapeMarkdownCell(d.unit), Name(d.producer), d.window,
                       EscapeMarkdownCell(d.formula));
  }
  return out;
}

std::string RenderMetricsText() {
  std::size_t name_w = 4, unit_w = 4, prod_w = 8;
  for (const auto& d : Table()) {
    name_w = std::max(name_w, d.name.size());
    unit_w = std::max(unit_w, d.unit.size());
    prod_w = std::max(prod_w, Name(d.producer).size());
  }
  std::string out = fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", "name", name_w, "unit", unit_w, "producer",
                                prod_w, "definition (over which steps or samples)");
  for (const auto& d : Table()) {
    out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {} ({})\n", d.name, name_w, d.unit.empty() ? "-" : d.unit,
                       unit_w, Name(d.producer), prod_w, d.formula, d.window);
  }
  return out;
}

std::optional<std::string_view> EvalAccuracyMetric(std::string_view precision) {
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {{"fp32", kEvalAccuracyFp32},
                                                                             {"tf32", kEvalAccuracyTf32},
                                                                             {"bf16", kEvalAccuracyBf16},
                                                                             {"fp16", kEvalAccuracyFp16},
                                                                             {"int8", kEvalAccuracyInt8}};
  for (const auto& [p, name] : kNames) {
    if (p == precision) return name;
  }
  return std::nullopt;
}

std::optional<std::string_view> EvalAccuracyDeltaMetric(std::string_view precision) {
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"tf32", kEvalAccuracyDeltaTf32},
      {"bf16", kEvalAccuracyDeltaBf16},
      {"fp16", kEvalAccuracyDeltaFp16},
      {"int8", kEvalAccuracyDeltaInt8}};
  for (const auto& [p, name] : kNames) {
    if (p == precision) return name;
  }
  return std::nullopt;
}

}  // namespace dlbench::record

// One step as a runner recorded it: the unit every measurement is made of. The protocol carries
// it byte for byte (docs/protocol.md "Step record"), the store keeps it, and the policy, the
// monitor analysis, compare and the report read it.
#pragma once

#include <cstdint>

namespace dlbench::record {

// Which optional phase fields of a StepRecord carry a value.
enum StepFieldBits : std::uint32_t {
  kHasDataWait = 1u << 0,
  kHasCompute = 1u << 1,
  kHasComm = 1u << 2,
};

// Times are CLOCK_MONOTONIC nanoseconds. The phase durations are meaningful only when their bit
// is set in `present` (absent is not zero).
struct StepRecord {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t data_wait_ns = 0;  // time the step waited for its input
  std::int64_t compute_ns = 0;    // time in forward/backward/optimizer
  std::int64_t comm_ns = 0;       // exposed communication (e.g. gradient all-reduce)
  std::uint32_t samples = 0;      // samples processed by this step (the batch size, usually)
  std::uint32_t present = 0;      // StepFieldBits
};
static_assert(sizeof(StepRecord) == 48, "StepRecord is part of the wire format");

}  // namespace dlbench::record

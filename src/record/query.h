// One query as the load generator recorded it (docs/load.md): the unit inference under load is
// measured in, as a StepRecord is for back-to-back steps. The protocol carries it byte for byte
// (docs/protocol.md "Query record"); percentiles, early stopping and validity are computed from
// these.
#pragma once

#include <cstdint>

namespace dlbench::record {

// Which optional decomposition fields of a QueryRecord carry a value.
enum QueryFieldBits : std::uint32_t {
  kQueryHasHostPre = 1u << 0,   // host pre-processing (gathering the query's samples into its input)
  kQueryHasH2d = 1u << 1,       // host-to-device copy of the input
  kQueryHasCompute = 1u << 2,   // the model's forward on the device (or the CPU)
  kQueryHasD2h = 1u << 3,       // device-to-host copy of the output
  kQueryHasHostPost = 1u << 4,  // host post-processing (SSD's decoding and NMS)
};
inline constexpr std::uint32_t kQueryFieldMask = 0x1f;  // every bit a version-1 record may set

// Times are CLOCK_MONOTONIC nanoseconds. Latency is completed_ns - scheduled_ns: from the time the
// load generator was scheduled to issue the query (its Poisson arrival in the server scenario) to
// the time the system under test reported it complete, so queueing and issue lateness count
// (LoadGen's definition). The decomposition fields are durations of the work that served this
// query: in a batch of several queries, the batch's; for a query served in several parts (offline),
// the sum over its parts. They are meaningful only when their bit is set in `present` (absent is
// not zero).
struct QueryRecord {
  std::uint64_t query_id = 0;     // 0, 1, 2, ... in schedule order within one rank's run
  std::int64_t scheduled_ns = 0;  // when the query was due
  std::int64_t issued_ns = 0;     // when the load generator handed it to the system under test
  std::int64_t completed_ns = 0;  // when the system under test reported its last sample done
  std::int64_t host_pre_ns = 0;
  std::int64_t h2d_ns = 0;
  std::int64_t compute_ns = 0;
  std::int64_t d2h_ns = 0;
  std::int64_t host_post_ns = 0;
  std::uint32_t samples = 0;        // samples in the query (1 single_stream/server, N multi_stream)
  std::uint32_t batch_samples = 0;  // samples of the batch that served it; 0 when not known
  std::uint32_t present = 0;        // QueryFieldBits
  std::uint32_t reserved = 0;       // 0
};
static_assert(sizeof(QueryRecord) == 88, "QueryRecord is part of the wire format");

}  // namespace dlbench::record

// Everything in dlbench::stats, for callers that use several parts.
#pragma once

#include "stats/descriptive.h"     // IWYU pragma: export
#include "stats/distributions.h"   // IWYU pragma: export
#include "stats/early_stopping.h"  // IWYU pragma: export
#include "stats/inference.h"       // IWYU pragma: export
#include "stats/latency.h"         // IWYU pragma: export
#include "stats/peak_search.h"     // IWYU pragma: export
#include "stats/random.h"          // IWYU pragma: export
#include "stats/steady_state.h"    // IWYU pragma: export
#include "stats/trend.h"           // IWYU pragma: export

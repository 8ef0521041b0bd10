// Metrics: the node's counters and latency histograms, rendered in the Prometheus text format
// for GET /metrics. Requests are counted by operation and HTTP status; latencies go into fixed
// buckets per operation. Recording takes one short lock; nothing is allocated once an
// (operation, status) pair has been seen. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cairn::node {

class Metrics {
 public:
  // Upper bounds of the latency buckets, in seconds (+Inf is implied).
  static constexpr std::array<double, 14> kLatencyBuckets = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0};

  // One finished request. `operation` is the operation name, or "health", "metrics",
  // "unknown" for requests that named none.
  void RecordRequest(absl::string_view operation, int http_status, absl::Duration latency)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Records written (inserted, upserted, updated or deleted) by an operation.
  void RecordWrites(absl::string_view operation, uint64_t records) ABSL_LOCKS_EXCLUDED(mu_);

  // Gauges and counters owned elsewhere, read at render time: name, help, type and a reader.
  struct External {
    std::string name, help, type;  // type: "gauge" or "counter"
    std::function<double()> read;
  };
  void AddExternal(External e) ABSL_LOCKS_EXCLUDED(mu_);
  // The same with one sample per value of a label: name{label="value"} sample.
  struct ExternalSeries {
    std::string name, help, type, label;
    std::function<std::vector<std::pair<std::string, double>>()> read;
  };
  void AddExternalSeries(ExternalSeries e) ABSL_LOCKS_EXCLUDED(mu_);

  std::string RenderPrometheus() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Histogram {
    std::array<uint64_t, kLatencyBuckets.size() + 1> counts{};  // last: +Inf
    double sum = 0;
    uint64_t count = 0;
  };

  mutable absl::Mutex mu_;
  absl::btree_map<std::pair<std::string, int>, uint64_t> requests_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<std::string, Histogram> latency_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<std::string, uint64_t> writes_ ABSL_GUARDED_BY(mu_);
  std::vector<External> externals_ ABSL_GUARDED_BY(mu_);
  std::vector<ExternalSeries> external_series_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn::node

#include "node/metrics.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cairn::node {
namespace {

// Prometheus label values escape '\', '"' and newlines. Operation names come from clients
// only after they matched a known operation, but stay defensive.
std::string Label(absl::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

std::string Number(double v) { return absl::StrFormat("%.17g", v); }

}  // namespace

void Metrics::RecordRequest(absl::string_view operation, int http_status, absl::Duration latency) {
  const double seconds = absl::ToDoubleSeconds(latency);
  const size_t bucket = std::lower_bound(kLatencyBuckets.begin(), kLatencyBuckets.end(), seconds) -
                        kLatencyBuckets.begin();
  absl::MutexLock lock(&mu_);
  ++requests_[{std::string(operation), http_status}];
  Histogram& h = latency_[std::string(operation)];
  ++h.counts[bucket];
  h.sum += seconds;
  ++h.count;
}

void Metrics::RecordWrites(absl::string_view operation, uint64_t records) {
  if (records == 0) return;
  absl::MutexLock lock(&mu_);
  writes_[std::string(operation)] += records;
}

void Metrics::AddExternal(External e) {
  absl::MutexLock lock(&mu_);
  externals_.push_back(std::move(e));
}

void Metrics::AddExternalSeries(ExternalSeries e) {
  absl::MutexLock lock(&mu_);
  external_series_.push_back(std::move(e));
}

std::string Metrics::RenderPrometheus() const {
  std::vector<External> externals;
  std::vector<ExternalSeries> series;
  std::string out;
  {
    absl::MutexLock lock(&mu_);
    externals = externals_;
    series = external_series_;
    out += "# HELP cairn_requests_total Operations API requests by operation and HTTP status.\n";
    out += "# TYPE cairn_requests_total counter\n";
    for (const auto& [key, n] : requests_) {
      absl::StrAppend(&out, "cairn_requests_total{operation=\"", Label(key.first), "\",status=\"",
                      key.second, "\"} ", n, "\n");
    }
    out += "# HELP cairn_request_duration_seconds Operations API latency by operation.\n";
    out += "# TYPE cairn_request_duration_seconds histogram\n";
    for (const auto& [op, h] : latency_) {
      const std::string label = Label(op);
      uint64_t cumulative = 0;
      for (size_t i = 0; i < h.counts.size(); ++i) {
        cumulative += h.counts[i];
        const std::string le = i < kLatencyBuckets.size() ? Number(kLatencyBuckets[i]) : "+Inf";
        absl::StrAppend(&out, "cairn_request_duration_seconds_bucket{operation=\"", label,
                        "\",le=\"", le, "\"} ", cumulative, "\n");
      }
      absl::StrAppend(&out, "cairn_request_duration_seconds_sum{operation=\"", label, "\"} ",
                      Number(h.sum), "\n");
      absl::StrAppend(&out, "cairn_request_duration_seconds_count{operation=\"", label, "\"} ",
                      h.count, "\n");
    }
    out += "# HELP cairn_record_writes_total Records written through the operations API.\n";
    out += "# TYPE cairn_record_writes_total counter\n";
    for (const auto& [op, n] : writes_) {
      absl::StrAppend(&out, "cairn_record_writes_total{operation=\"", Label(op), "\"} ", n, "\n");
    }
  }
  // Readers may take other components' locks: call them without ours.
  for (const External& e : externals) {
    absl::StrAppend(&out, "# HELP ", e.name, " ", e.help, "\n# TYPE ", e.name, " ", e.type, "\n",
                    e.name, " ", Number(e.read()), "\n");
  }
  for (const ExternalSeries& e : series) {
    absl::StrAppend(&out, "# HELP ", e.name, " ", e.help, "\n# TYPE ", e.name, " ", e.type, "\n");
    for (const auto& [value, sample] : e.read()) {
      absl::StrAppend(&out, e.name, "{", e.label, "=\"", Label(value), "\"} ", Number(sample),
                      "\n");
    }
  }
  return out;
}

}  // namespace cairn::node

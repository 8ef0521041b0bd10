// ScenarioTest: the GoogleTest fixture of a cluster scenario. It takes the test's seed
// (CAIRN_TEST_SEED replays one), starts a harness::Cluster with it, and when the test fails
// prints the cluster report: the seed, every node's state, cluster_status and last log lines.
// The cluster, and every process it started, ends with the test.
#pragma once

#include <atomic>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster-tests/harness/cluster.h"
#include "tests/testing/testing.h"

namespace cairn::harness {

class ScenarioTest : public ::testing::Test {
 protected:
  void SetUp() override { seed_ = ::cairn::testing::TestSeed(); }

  void TearDown() override {
    // SPEC R18: a repair means some other rule failed, unless the scenario made divergence
    // on purpose (expect_repairs_).
    if (!HasFailure() && cluster_ != nullptr && !expect_repairs_) {
      for (const std::string& n : cluster_->running()) {
        const HttpAnswer m = cluster_->node(n).Get("/metrics");
        const std::string line = "cairn_antientropy_rows_repaired_total ";
        const size_t at = m.body.find("\n" + line);
        if (at != std::string::npos && m.body.compare(at + 1 + line.size(), 2, "0\n") != 0) {
          ADD_FAILURE() << n << " repaired rows (anti-entropy, R18) in a scenario that expects "
                        << "none: " << m.body.substr(at + 1, m.body.find('\n', at + 1) - at - 1);
        }
      }
    }
    if (HasFailure() && cluster_ != nullptr) std::cerr << cluster_->Report() << std::flush;
    cluster_.reset();
  }

  // Starts the scenario's cluster (nodes n1..nN unless options name others), with its seed.
  absl::Status StartCluster(ClusterOptions options = {}) {
    options.seed = seed_;
    auto c = Cluster::Start(std::move(options));
    if (!c.ok()) return c.status();
    cluster_ = std::move(*c);
    return absl::OkStatus();
  }

  Cluster& cluster() { return *cluster_; }
  uint64_t seed() const { return seed_; }

  uint64_t seed_ = 0;
  std::unique_ptr<Cluster> cluster_;
  bool expect_repairs_ = false;  // the scenario makes divergence for anti-entropy to repair
};

// Load threads of a scenario: each runs `fn(stopping)` until asked to stop. Stop() (or the
// end of the scope, also when an assertion returns early) raises the flag and joins them.
class Workers {
 public:
  ~Workers() { Stop(); }
  void Run(std::function<void(const std::atomic<bool>& stopping)> fn) {
    threads_.emplace_back([this, fn = std::move(fn)] { fn(stopping_); });
  }
  void Stop() {
    stopping_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> threads_;
};

// `CAIRN_ASSIGN_OR_FAIL(json j, cluster().Ok(...));` assigns the value of a StatusOr, or
// fails the test (and returns) with its error.
#define CAIRN_ASSIGN_OR_FAIL(lhs, expr)                \
  auto CAIRN_HARNESS_CONCAT(_r, __LINE__) = (expr);    \
  ASSERT_TRUE(CAIRN_HARNESS_CONCAT(_r, __LINE__).ok()) \
      << CAIRN_HARNESS_CONCAT(_r, __LINE__).status();  \
  lhs = std::move(*CAIRN_HARNESS_CONCAT(_r, __LINE__))
#define CAIRN_HARNESS_CONCAT_INNER(a, b) a##b
#define CAIRN_HARNESS_CONCAT(a, b) CAIRN_HARNESS_CONCAT_INNER(a, b)

}  // namespace cairn::harness

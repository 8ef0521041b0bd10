// TestNode: an in-process node (storage, catalog, Cluster and gRPC server on loopback) for
// the replication tests, and helpers to compare what nodes hold.
#pragma once

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "cairn/storage/v1/records.pb.h"
#include "catalog/local_node.h"
#include "grpcpp/grpcpp.h"
#include "replication/cluster.h"
#include "storage/keys.h"
#include "tests/testing/testing.h"

namespace cairn::replication {

using catalog::AttributeSpec;
using catalog::TableSpec;

class TestNode {
 public:
  struct Tls {
    std::string cert, key, ca;  // PEM
  };
  TestNode(std::string name, std::string dir, std::string secret, Tls tls = {})
      : name_(std::move(name)),
        dir_(std::move(dir)),
        secret_(std::move(secret)),
        tls_(std::move(tls)) {}
  ~TestNode() { Stop(); }

  // Starts (or restarts) on `port` (0: any free port, remembered for restarts).
  void Start() {
    if (node_ == nullptr) {
      catalog::LocalNodeOptions o;
      o.name = name_;
      o.faults = &faults_;
      o.clock = clock_;
      auto node = catalog::LocalNode::Open(dir_, o);
      ASSERT_OK(node);
      node_ = std::move(*node);
    }
    ClusterOptions co;
    co.node_name = name_;
    co.secret = secret_;
    co.backoff_initial = absl::Milliseconds(20);
    co.backoff_max = absl::Milliseconds(200);
    co.forward_timeout = absl::Seconds(2);
    co.log_retention_entries = log_retention_entries_;
    co.keepalive = keepalive_;
    co.hold_limit = hold_limit_;
    co.verify.rate = verify_rate_;
    co.trim_interval = absl::Milliseconds(50);
    co.peers = routes_;
    co.tls_cert = tls_.cert;
    co.tls_key = tls_.key;
    co.tls_ca = tls_.ca;
    cluster_ = std::make_unique<Cluster>(node_.get(), co);
    grpc::ServerBuilder builder;
    builder.RegisterService(cluster_->service());
    cluster_->ConfigureServer(&builder);
    int bound = 0;
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port_), cluster_->ServerCredentials(),
                             &bound);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(bound, 0);
    port_ = bound;
    ASSERT_OK(cluster_->Start());
  }

  void Stop() {
    Isolate();
    node_.reset();
  }

  // Cuts this node off (its server and links stop) while its storage stays open for local
  // reads and writes; Start() brings it back on the same port.
  void Isolate() {
    if (cluster_ == nullptr) return;
    cluster_->Stop();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_.reset();
    cluster_.reset();
  }

  // A route to `other` (kept across restarts).
  void Route(const TestNode& other, Exclusions exclude = {}) {
    PeerRoute r{other.name_, other.address(), std::move(exclude)};
    routes_.push_back(r);
    if (cluster_ != nullptr) {
      ASSERT_OK(cluster_->AddPeer(r));
    }
  }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  const std::string& name() const { return name_; }
  catalog::Catalog& catalog() { return *node_->catalog; }
  catalog::RecordStore& records() { return *node_->records; }
  Cluster& cluster() { return *cluster_; }
  FaultRegistry& faults() { return faults_; }
  catalog::LocalNode& local() { return *node_; }
  void set_log_retention_entries(uint64_t n) { log_retention_entries_ = n; }
  void set_keepalive(absl::Duration d) { keepalive_ = d; }                  // before Start()
  void set_hold_limit(absl::Duration d) { hold_limit_ = d; }                // before Start()
  void set_verify_rate(uint64_t rows_per_s) { verify_rate_ = rows_per_s; }  // before Start()
  // The node's wall clock (before its first Start; null: the system clock).
  void set_clock(Clock* clock) { clock_ = clock; }
  Hlc node_hlc_now() { return node_->hlc->Now().value(); }
  catalog::TableRef Table(const std::string& db, const std::string& t) {
    auto def = node_->catalog->Snapshot()->FindTable(db, t);
    return def.ok() ? *def : nullptr;
  }
  // A copy of an attribute's definition (nullopt: no such table or attribute). A pointer into
  // Table()'s definition would dangle once the catalog publishes another and drops it.
  std::optional<catalog::AttributeDef> Attribute(const std::string& db, const std::string& t,
                                                 const std::string& name) {
    catalog::TableRef def = Table(db, t);
    const catalog::AttributeDef* a = def == nullptr ? nullptr : def->FindAttribute(name);
    if (a == nullptr) return std::nullopt;
    return *a;
  }
  std::vector<std::string> Attributes(const std::string& db, const std::string& t) {
    std::vector<std::string> out;
    if (auto def = Table(db, t)) {
      for (const auto& a : def->attributes()) out.push_back(a.name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  PeerStatus StatusOf(const std::string& peer) {
    for (PeerStatus& p : cluster_->Status()) {
      if (p.name == peer) return p;
    }
    return {};
  }

 private:
  std::string name_, dir_, secret_;
  Tls tls_;
  FaultRegistry faults_;
  int port_ = 0;
  uint64_t log_retention_entries_ = 10'000'000;
  absl::Duration keepalive_ = absl::Seconds(10);
  absl::Duration hold_limit_ = kHoldLimit;
  uint64_t verify_rate_ = AntiEntropyOptions().rate;
  Clock* clock_ = nullptr;
  std::vector<PeerRoute> routes_;
  std::unique_ptr<catalog::LocalNode> node_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<grpc::Server> server_;
};

inline TableSpec Spec(const std::string& db, const std::string& t,
                      std::vector<std::string> attributes, bool replicate = true) {
  TableSpec s;
  s.database = db;
  s.table = t;
  s.primary_key = "id";
  s.attributes.emplace();
  s.attributes->push_back({"id", catalog::v1::ID, false});
  for (const std::string& a : attributes) s.attributes->push_back({a, catalog::v1::STRING, true});
  s.replicate = replicate;
  return s;
}

// Every stored row of the live generation of db.table, tombstones included, as
// "key|version|origin|row generation|deleted|json" lines in key order; empty if absent.
inline std::vector<std::string> TableRows(TestNode& n, const std::string& db,
                                          const std::string& table) {
  std::vector<std::string> out;
  catalog::TableRef def = n.Table(db, table);
  if (def == nullptr) return out;
  const std::string prefix = storage::GenerationPrefix(def->generation_id());
  auto it = n.local().engine->NewIterator(storage::Cf::kRecords, nullptr,
                                          storage::GenerationPrefix(def->generation_id() + 1));
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    storage::v1::StoredRecord rec;
    rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()));
    out.push_back(absl::StrCat(absl::CEscape(it->key().ToString().substr(8)), "|", rec.version(),
                               "|", rec.origin(), "|", rec.row_generation(), "|", rec.deleted(),
                               "|", rec.json()));
  }
  return out;
}

// The live rows' primary keys of db.table, sorted (as JSON text).
inline std::vector<std::string> LiveKeys(TestNode& n, const std::string& db,
                                         const std::string& table) {
  std::vector<std::string> out;
  absl::Status s =
      n.records().SearchByValue(db, table, "id", "*", {}, [&](const nlohmann::json& r) {
        out.push_back(r["id"].dump());
        return true;
      });
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace cairn::replication

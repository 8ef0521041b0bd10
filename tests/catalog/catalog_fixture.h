// CatalogFixture: a LocalNode on a temp directory that tests can close, reopen and crash.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "catalog/catalog.h"
#include "catalog/record_store.h"
#include "common/fault.h"
#include "common/fault_points.h"
#include "nlohmann/json.hpp"
#include "storage/keys.h"
#include "tests/testing/local_node.h"
#include "tests/testing/testing.h"

namespace cairn::catalog {

class CatalogFixture : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(Reopen()); }
  void TearDown() override { faults_.ClearAll(); }

  absl::Status Reopen() {
    node_.reset();
    options_.faults = &faults_;
    auto node = testing::LocalNode::Open(dir_.path(), options_);
    if (!node.ok()) return node.status();
    node_ = std::move(*node);
    return absl::OkStatus();
  }
  void Close() { node_.reset(); }

  // Closes the node, then runs `action` on the same directory in a child process with a crash
  // armed at `point`. Returns the child's exit status: kInjectedCrashExitCode when the point
  // was reached. Reopen() afterwards plays the restart.
  int CrashAt(const char* point, const std::function<void(testing::LocalNode&)>& action) {
    Close();
    return testing::RunInChildProcess([&] {
      FaultRegistry faults;
      faults.Set(point, FaultAction::Crash());
      testing::LocalNodeOptions o = options_;
      o.faults = &faults;
      auto node = testing::LocalNode::Open(dir_.path(), o);
      if (!node.ok()) std::_Exit(1);
      action(**node);
    });
  }

  Catalog& catalog() { return *node_->catalog; }
  RecordStore& records() { return *node_->records; }
  SnapshotRef snap() { return node_->catalog->Snapshot(); }

  // A schema-defined table spec: primary key "id" plus the named attributes (String, indexed).
  static TableSpec Spec(const std::string& db, const std::string& table,
                        std::vector<std::string> attributes = {}, bool replicate = true) {
    TableSpec s;
    s.database = db;
    s.table = table;
    s.primary_key = "id";
    std::vector<AttributeSpec> attrs;
    for (auto& a : attributes) attrs.push_back({a, v1::STRING, true});
    s.attributes = attrs;
    s.replicate = replicate;
    return s;
  }
  static TableSpec DynamicSpec(const std::string& db, const std::string& table) {
    TableSpec s;
    s.database = db;
    s.table = table;
    s.primary_key = "id";
    return s;
  }

  // Starts an upsert of `records` into db.table that parks at records.write.before_commit,
  // holding its admission token (what a drop's drain waits for, C9), and returns once it is
  // parked. faults_.Release(fault_points::kWriteBeforeCommit) lets it commit.
  std::future<absl::StatusOr<WriteResult>> HoldWrite(const std::string& db,
                                                     const std::string& table,
                                                     nlohmann::json records) {
    faults_.Set(fault_points::kWriteBeforeCommit, FaultAction::Block().OnNth(1));
    auto write = std::async(std::launch::async,
                            [this, db, table, records] { return Upsert(db, table, records); });
    EXPECT_TRUE(faults_.WaitUntilBlocked(fault_points::kWriteBeforeCommit, absl::Seconds(30)));
    return write;
  }

  // Polls until the drop of `def`'s generation has closed its gate (SPEC C9 step 2 begun).
  void WaitUntilDropping(const TableRef& def) {
    ASSERT_EVENTUALLY([&] { ASSERT_TRUE(def->state()->dropping()); });
  }

  TableRef Live(const std::string& db, const std::string& table) {
    auto t = snap()->FindTable(db, table);
    return t.ok() ? *t : nullptr;
  }

  // Keys anywhere in storage that belong to `generation`: records, index entries, catalog
  // rows (primary row and attributes), its count.
  int KeysOfGeneration(uint64_t generation) {
    int n = 0;
    auto count_prefix = [&](storage::Cf cf, const std::string& prefix) {
      auto it = node_->engine->NewIterator(cf);
      for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) ++n;
    };
    count_prefix(storage::Cf::kRecords, storage::GenerationPrefix(generation));
    count_prefix(storage::Cf::kIndexes, storage::GenerationPrefix(generation));
    count_prefix(storage::Cf::kCatalog, storage::AttributePrefix(generation));
    count_prefix(storage::Cf::kMeta, storage::CountKey(generation));
    count_prefix(storage::Cf::kMeta, storage::StripKey(generation, ""));
    if (StoredRow(generation).has_value()) ++n;
    return n;
  }

  // The durable primary row of `generation`, if any.
  std::optional<v1::TableRow> StoredRow(uint64_t generation) {
    auto it = node_->engine->NewIterator(storage::Cf::kCatalog);
    for (it->Seek(std::string(storage::kTablePrefix)); it->Valid() && it->key().starts_with("T/");
         it->Next()) {
      v1::TableRow row;
      if (row.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())) &&
          row.generation_id() == generation) {
        return row;
      }
    }
    return std::nullopt;
  }

  // The durable drop marker of db.table (0 if none).
  Hlc StoredMarker(const std::string& db, const std::string& table) {
    std::string v;
    bool found = false;
    EXPECT_OK(node_->engine->Get(storage::Cf::kCatalog, storage::MarkerKey(db, table), &v, &found));
    if (!found) return 0;
    v1::DropMarker m;
    m.ParseFromString(v);
    return m.dropped_time();
  }

  absl::StatusOr<WriteResult> Upsert(const std::string& db, const std::string& table,
                                     nlohmann::json records) {
    return node_->records->Write(db, table, records, WriteMode::kUpsert);
  }
  std::vector<nlohmann::json> Search(const std::string& db, const std::string& table,
                                     const std::string& attr, const nlohmann::json& value) {
    std::vector<nlohmann::json> out;
    absl::Status s =
        node_->records->SearchByValue(db, table, attr, value, {}, [&](const nlohmann::json& r) {
          out.push_back(r);
          return true;
        });
    EXPECT_OK(s);
    return out;
  }

  testing::TempDir dir_;
  FaultRegistry faults_;
  testing::LocalNodeOptions options_;
  std::unique_ptr<testing::LocalNode> node_;
};

}  // namespace cairn::catalog

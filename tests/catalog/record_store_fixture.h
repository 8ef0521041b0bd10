// The fixture of RecordStore's tests (record_store_*_test.cc, mirroring catalog/'s
// record_store_*.cc): writes and searches of table "db".<table>, peer entries built and
// applied, the change log read back, and two checks: a drop cancels a scan (C9), and the
// index agrees with the records (D3).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "catalog/internal/record_codec.h"
#include "catalog/record_store.h"
#include "storage/value_codec.h"
#include "tests/catalog/catalog_fixture.h"

namespace cairn::catalog {

class RecordStoreTest : public CatalogFixture {
 protected:
  absl::StatusOr<WriteResult> Write(const std::string& table, nlohmann::json recs, WriteMode mode) {
    return records().Write("db", table, recs, mode);
  }
  std::vector<nlohmann::json> ById(const std::string& table, nlohmann::json ids,
                                   std::vector<std::string> get = {}) {
    std::vector<nlohmann::json> out;
    SearchOptions o;
    o.get_attributes = std::move(get);
    EXPECT_OK(records().SearchById("db", table, ids, o, [&](const nlohmann::json& r) {
      out.push_back(r);
      return true;
    }));
    return out;
  }
  std::vector<nlohmann::json> By(const std::string& table, const std::string& attr,
                                 nlohmann::json value, SearchOptions o = {}) {
    std::vector<nlohmann::json> out;
    EXPECT_OK(records().SearchByValue("db", table, attr, value, o, [&](const nlohmann::json& r) {
      out.push_back(r);
      return true;
    }));
    return out;
  }
  uint64_t Count(const std::string& table) {
    auto n = records().RecordCount("db", table);
    EXPECT_OK(n);
    return n.ok() ? *n : 0;
  }
  // Every change-log entry of database "db", in sequence order.
  std::vector<storage::v1::ChangeEntry> Log() {
    std::vector<storage::v1::ChangeEntry> out;
    auto it = node_->engine->NewIterator(storage::Cf::kChangeLog);
    const std::string prefix = storage::LogPrefix("db");
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
      storage::v1::ChangeEntry e;
      e.ParseFromArray(it->value().data(), static_cast<int>(it->value().size()));
      out.push_back(e);
    }
    return out;
  }
  static storage::v1::ChangeEntry Put(const std::string& table, nlohmann::json pk, Hlc version,
                                      const std::string& origin, Hlc row_generation,
                                      nlohmann::json record) {
    storage::v1::ChangeEntry e;
    e.set_table(table);
    e.set_op(storage::v1::PUT);
    std::string key;
    EXPECT_OK(storage::AppendPrimaryKey(pk, &key));
    e.set_key(key);
    e.set_version(version);
    e.set_origin(origin);
    e.set_row_generation(row_generation);
    e.set_json(record.dump());
    return e;
  }
  static storage::v1::ChangeEntry Del(const std::string& table, nlohmann::json pk, Hlc version,
                                      const std::string& origin, Hlc row_generation) {
    storage::v1::ChangeEntry e =
        Put(table, pk, version, origin, row_generation, nlohmann::json::object());
    e.set_op(storage::v1::DELETE);
    e.clear_json();
    return e;
  }
  absl::StatusOr<ApplyStats> Apply(std::vector<storage::v1::ChangeEntry> entries,
                                   std::function<void(rocksdb::WriteBatch*)> extra = nullptr) {
    return records().ApplyPeerEntries("db", entries, extra);
  }

  // C9: a drop cancels a scan between two rows it emits, however many rows it reads in between.
  // `scan` runs with a visitor that parks at the first row it is given; the drop begins
  // meanwhile; every row the scan reads after that finds the gate closing.
  void ExpectADropCancels(const TableRef& def,
                          const std::function<absl::Status(const RecordStore::Visitor&)>& scan) {
    std::promise<void> entered, resume;
    std::shared_future<void> resumed = resume.get_future().share();
    std::atomic<int> visits{0};
    // Whatever fails below, the parked visitor is let go, so the scan can finish.
    auto let_go = absl::MakeCleanup([&] { resume.set_value(); });
    auto running = std::async(std::launch::async, [&] {
      return scan([&](const nlohmann::json&) {
        if (visits++ == 0) {
          entered.set_value();
          resumed.wait();
        }
        return true;
      });
    });
    ASSERT_EQ(entered.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready)
        << "the scan never reached a row";
    auto drop = std::async(std::launch::async,
                           [&] { return catalog().DropTable(def->database(), def->name()); });
    ASSERT_EVENTUALLY([&] { ASSERT_TRUE(def->state()->dropping()); });
    std::move(let_go).Invoke();
    EXPECT_THAT(running.get(), ::cairn::testing::HasErrorCode(ErrorCode::kTableDropping));
    EXPECT_EQ(visits.load(), 1);
    EXPECT_OK(drop.get());
  }

  // D3: the index and the records agree exactly. Every index entry points at a live record
  // holding that value, and every value of every live record has its entry.
  void ExpectIndexConsistent(const std::string& table) {
    TableRef def = Live("db", table);
    ASSERT_NE(def, nullptr);
    std::set<std::string> expected;
    auto it = node_->engine->NewIterator(storage::Cf::kRecords);
    const std::string gen = storage::GenerationPrefix(def->generation_id());
    for (it->Seek(gen); it->Valid() && it->key().starts_with(gen); it->Next()) {
      storage::v1::StoredRecord rec;
      ASSERT_TRUE(rec.ParseFromArray(it->value().data(), static_cast<int>(it->value().size())));
      if (rec.deleted()) continue;
      absl::string_view pk(it->key().data() + 8, it->key().size() - 8);
      for (auto& k : internal::IndexKeys(*def, nlohmann::json::parse(rec.json()), pk))
        expected.insert(k);
    }
    std::set<std::string> actual;
    auto ix = node_->engine->NewIterator(storage::Cf::kIndexes);
    for (ix->Seek(gen); ix->Valid() && ix->key().starts_with(gen); ix->Next()) {
      actual.insert(ix->key().ToString());
    }
    EXPECT_EQ(actual, expected);
  }
};

}  // namespace cairn::catalog

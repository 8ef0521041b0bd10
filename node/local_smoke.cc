// cairn-smoke: a tour of one node's engine, run by scripts/run-node.sh until the cairnd server
// (the node-program issue) replaces it. Opens a data directory, creates a table, writes and
// searches records, drops and recreates the table, reopens the directory, and checks that
// what was acknowledged is still there. Exits non-zero on any failure.
//
//   cairn-smoke <data-dir> [records]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "catalog/catalog.h"
#include "catalog/record_store.h"
#include "common/clock.h"
#include "nlohmann/json.hpp"
#include "storage/change_log.h"
#include "storage/engine.h"

namespace {

using nlohmann::json;

struct Node {
  std::unique_ptr<cairn::HybridClock> hlc;
  std::unique_ptr<cairn::storage::Engine> engine;
  std::unique_ptr<cairn::storage::ChangeLog> log;
  std::unique_ptr<cairn::catalog::Catalog> catalog;
  std::unique_ptr<cairn::catalog::RecordStore> records;
};

[[noreturn]] void Fail(const std::string& what, const absl::Status& s) {
  std::fprintf(stderr, "FAILED: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

Node Open(const std::string& dir) {
  Node n;
  n.hlc = std::make_unique<cairn::HybridClock>(cairn::SystemClock::Default());
  cairn::storage::EngineOptions eo;
  eo.path = dir;
  auto engine = cairn::storage::Engine::Open(eo);
  if (!engine.ok()) Fail("open " + dir, engine.status());
  n.engine = std::move(*engine);
  n.log = std::make_unique<cairn::storage::ChangeLog>(n.engine.get());
  if (auto s = n.log->Recover(); !s.ok()) Fail("recover change log", s);
  cairn::catalog::CatalogOptions co;
  co.node_name = "smoke";
  co.hlc = n.hlc.get();
  auto catalog = cairn::catalog::Catalog::Open(n.engine.get(), co);
  if (!catalog.ok()) Fail("open catalog", catalog.status());
  n.catalog = std::move(*catalog);
  cairn::catalog::RecordStoreOptions ro;
  ro.node_name = "smoke";
  ro.hlc = n.hlc.get();
  n.records = std::make_unique<cairn::catalog::RecordStore>(n.engine.get(), n.log.get(),
                                                            n.catalog.get(), ro);
  if (auto s = n.records->ResumePendingStrips(); !s.ok()) Fail("resume strips", s);
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <data-dir> [records]\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int count = 10000;
  if (argc > 2 && !absl::SimpleAtoi(argv[2], &count)) count = 10000;
  const std::string table = absl::StrCat("orders_", absl::ToUnixMillis(absl::Now()));

  Node n = Open(dir);
  cairn::catalog::TableSpec spec;
  spec.database = "demo";
  spec.table = table;
  spec.primary_key = "id";
  spec.attributes = std::vector<cairn::catalog::AttributeSpec>{
      {"customer", cairn::catalog::v1::STRING, true}, {"qty", cairn::catalog::v1::INT, false}};
  auto created = n.catalog->CreateTable(spec);
  if (!created.ok()) Fail("create_table", created.status());
  std::printf("created demo.%s (generation %llu)\n", table.c_str(),
              static_cast<unsigned long long>((*created)->generation_id()));

  const absl::Time start = absl::Now();
  for (int i = 0; i < count; i += 100) {
    json batch = json::array();
    for (int j = i; j < std::min(count, i + 100); ++j) {
      batch.push_back({{"id", j}, {"customer", absl::StrCat("c", j % 10)}, {"qty", j % 7}});
    }
    auto w = n.records->Write("demo", table, batch, cairn::catalog::WriteMode::kInsert);
    if (!w.ok()) Fail("insert", w.status());
  }
  const double secs = absl::ToDoubleSeconds(absl::Now() - start);
  std::printf("inserted %d records in batches of 100: %.0f records/s\n", count, count / secs);

  int found = 0;
  auto s = n.records->SearchByValue("demo", table, "customer", "c3", {},
                                    [&](const json&) { return ++found, true; });
  if (!s.ok()) Fail("search_by_value", s);
  std::printf("search_by_value customer=c3: %d records\n", found);

  auto dropped = n.catalog->DropTable("demo", table);
  if (!dropped.ok()) Fail("drop_table", dropped.status());
  auto again = n.catalog->CreateTable(spec);
  if (!again.ok()) Fail("recreate", again.status());
  std::printf("dropped at %llu, recreated at %llu: a new, empty generation\n",
              static_cast<unsigned long long>(dropped->dropped_time),
              static_cast<unsigned long long>((*again)->created_time()));
  auto w = n.records->Write("demo", table, json::array({{{"id", 1}, {"customer", "after"}}}),
                            cairn::catalog::WriteMode::kInsert);
  if (!w.ok()) Fail("insert after recreate", w.status());

  n = Node();  // close
  n = Open(dir);
  auto total = n.records->RecordCount("demo", table);
  if (!total.ok()) Fail("record_count", total.status());
  std::printf("reopened %s: demo.%s holds %llu record(s)\n", dir.c_str(), table.c_str(),
              static_cast<unsigned long long>(*total));
  if (*total != 1) {
    std::fprintf(stderr, "FAILED: expected exactly the record written after the recreate\n");
    return 1;
  }
  std::printf("OK\n");
  return 0;
}

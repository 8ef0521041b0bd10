// The cost of enforcing a role (SPEC U4) on the write path, without HTTP: OpsApi::Handle of an
// upsert of 1 or 100 records, as an in-process super user (which enforcement never looks at)
// and as a user whose role grants each attribute (every record's every attribute checked),
// in the same process on the same table; and the front door's check of a remembered password.
// CPU time per request is the figure: the ratio of the two is the share enforcement keeps.
//
//   build/bench/access_bench [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "node/access.h"
#include "node/authenticator.h"
#include "node/credentials.h"
#include "node/ops_api.h"
#include "tests/testing/local_node.h"

namespace cairn {
namespace {

using nlohmann::json;

// One node, its table bench.t {id, customer (indexed), qty}, a role granting each attribute
// of it and a user of that role, made once for every benchmark of the process.
struct World {
  World() {
    dir = std::filesystem::temp_directory_path().string() + "/cairn-access-bench-XXXXXX";
    dir = mkdtemp(dir.data());
    auto opened = testing::LocalNode::Open(dir);
    if (!opened.ok()) std::abort();
    local = std::move(*opened);
    api = std::make_unique<node::OpsApi>(local.get(), node::OpsApiOptions());
    auto run = [&](const json& op) {
      if (api->Handle(op.dump()).status != 200) std::abort();
    };
    run({{"operation", "create_table"},
         {"database", "bench"},
         {"table", "t"},
         {"primary_key", "id"},
         {"attributes",
          {{{"name", "id"}, {"type", "ID"}},
           {{"name", "customer"}, {"type", "String"}, {"indexed", true}},
           {{"name", "qty"}, {"type", "Int"}}}}});
    json attributes = json::array();
    for (const char* a : {"id", "customer", "qty"}) {
      attributes.push_back(
          {{"attribute_name", a}, {"read", true}, {"insert", true}, {"update", true}});
    }
    run({{"operation", "add_role"},
         {"role", "writer"},
         {"permission",
          {{"bench",
            {{"tables",
              {{"t",
                {{"read", true},
                 {"insert", true},
                 {"update", true},
                 {"delete", false},
                 {"attribute_permissions", attributes}}}}}}}}}});
    if (!local->users->EnsureSigningKey(node::NewSigningKey()).ok()) std::abort();
    auto admin = node::HashPassword("admin-pw", node::kCheapPasswordHash);
    auto hash = node::HashPassword("writer-pw", node::kCheapPasswordHash);
    if (!admin.ok() || !hash.ok() || !local->users->Bootstrap("admin", *admin).ok() ||
        !local->users->AddUser({"w", *hash, "writer", true}).ok()) {
      std::abort();
    }
    auth = std::make_unique<node::Authenticator>(local->catalog.get(), node::AuthOptions());
    role_caller.kind = node::Caller::Kind::kUser;
    role_caller.username = "w";
    role_caller.principals = local->catalog->Snapshot()->principals;
    role_caller.role = role_caller.principals->FindRole("writer");
  }
  ~World() {
    api.reset();
    local.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string dir;
  std::unique_ptr<testing::LocalNode> local;
  std::unique_ptr<node::OpsApi> api;
  std::unique_ptr<node::Authenticator> auth;
  node::Caller role_caller;
  std::atomic<int64_t> next_id{0};
};

World& TheWorld() {
  static World* w = new World();
  return *w;
}

// Upserts of state.range(0) new records per request; state.range(1): 1 as the role's user,
// 0 as a super user.
void BM_Upsert(benchmark::State& state) {
  World& w = TheWorld();
  const int64_t per_request = state.range(0);
  const bool as_role = state.range(1) == 1;
  const node::Caller super = node::Caller::Internal();
  const node::Caller& caller = as_role ? w.role_caller : super;
  for (auto _ : state) {
    state.PauseTiming();
    json records = json::array();
    for (int64_t i = 0; i < per_request; ++i) {
      const int64_t id = w.next_id.fetch_add(1);
      records.push_back({{"id", id}, {"customer", absl::StrCat("c", id % 1000)}, {"qty", id % 97}});
    }
    const std::string body = json{
        {"operation", "upsert"},
        {"database", "bench"},
        {"table", "t"},
        {"records", records}}.dump();
    state.ResumeTiming();
    node::Reply r = w.api->Handle(body, caller);
    if (r.status != 200) state.SkipWithError(r.body.c_str());
  }
  state.SetItemsProcessed(state.iterations() * per_request);
}
BENCHMARK(BM_Upsert)
    ->ArgNames({"records", "as_role"})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Args({100, 0})
    ->Args({100, 1})
    ->MeasureProcessCPUTime()
    ->UseRealTime();

// Enforcement alone, as OpsApi runs it before a write (node/ops_api_records.cc CheckWrite):
// the table check, the table's definition, and every attribute of every record checked.
void BM_EnforceWrite(benchmark::State& state) {
  World& w = TheWorld();
  json records = json::array();
  for (int64_t i = 0; i < state.range(0); ++i) {
    records.push_back({{"id", i}, {"customer", absl::StrCat("c", i)}, {"qty", i}});
  }
  const node::Access access(w.role_caller);
  for (auto _ : state) {
    absl::Status s = access.Table("bench", "t", {node::Action::kInsert, node::Action::kUpdate});
    auto def = w.local->catalog->Snapshot()->FindTable("bench", "t");
    if (s.ok() && def.ok()) {
      s = access.Write(**def, records, {node::Action::kInsert, node::Action::kUpdate});
    }
    if (!s.ok()) state.SkipWithError(std::string(s.message()).c_str());
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_EnforceWrite)->ArgName("records")->Arg(1)->Arg(100);

// The front door's check of Basic credentials it has verified before (a keyed digest and a
// lookup: what every request of a logged-in client pays, super user or not).
void BM_RememberedPassword(benchmark::State& state) {
  World& w = TheWorld();
  const std::string header = "Basic " + absl::Base64Escape("w:writer-pw");
  if (!w.auth->Authenticate(header).ok()) state.SkipWithError("no login");
  for (auto _ : state) {
    auto r = w.auth->Quick(header);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_RememberedPassword);

}  // namespace
}  // namespace cairn

BENCHMARK_MAIN();

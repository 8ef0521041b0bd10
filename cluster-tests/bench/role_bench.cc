// role_bench: how soon a role change made on one node takes effect on another (SPEC U6: "a
// role change on n1 restricts a live session on n3 within the schema convergence bound"). Three
// nodes; a user of role `app` keeps a session (keep-alive, its password cached) on n3 and
// inserts there in a tight loop while the admin alternately grants and revokes the role's
// insert on n1: each round measures from alter_role's answer on n1 to the first answer of n3
// that follows the change (200 after a grant, 403 after a revoke).
//
//   role_bench [--cairnd PATH] [--rounds 40] [--json FILE]
#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster-tests/bench/bench_util.h"

namespace {

using cairn::bench::Die;
using cairn::bench::NewClient;
using cairn::bench::Percentile;
using cairn::bench::Post;
using cairn::bench::Target;
using nlohmann::json;

json Permission(bool insert) {
  return {{"bench",
           {{"tables",
             {{"roles",
               {{"read", true},
                {"insert", insert},
                {"update", false},
                {"delete", false},
                {"attribute_permissions", json::array()}}}}}}}};
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 40;
  CLI::App app("role_bench: time for a role change on n1 to take effect on n3", "role_bench");
  app.add_option("--rounds", rounds, "grants and revokes measured")->capture_default_str();
  cairn::bench::CommonFlags flags;
  cairn::bench::AddCommonFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);

  auto cluster = cairn::bench::StartCluster(flags.cairnd);
  const json machine = cairn::bench::MachineState();
  const Target n1 = cluster->node("n1").endpoint();
  Target n3 = cluster->node("n3").endpoint();
  cairn::bench::CreateTable(n1, "roles");
  auto admin = NewClient(n1);
  std::string error;
  if (!Post(admin.get(),
            {{"operation", "add_role"}, {"role", "app"}, {"permission", Permission(false)}},
            &error) ||
      !Post(admin.get(),
            {{"operation", "add_user"},
             {"username", "app_user"},
             {"password", "app-password"},
             {"role", "app"},
             {"active", true}},
            &error)) {
    Die("making the role and its user: " + error);
  }
  n3.user = "app_user";
  n3.password = "app-password";
  auto session = NewClient(n3);
  const std::string insert = json{{"operation", "insert"},
                                  {"database", "bench"},
                                  {"table", "roles"},
                                  {"records", {{{"id", 1}, {"customer", "c"}, {"qty", 1}}}}}
                                 .dump();
  // The user and the table reach n3 first.
  absl::Status reached =
      cairn::harness::Cluster::WaitFor("the user reaches n3 with its role", [&]() -> absl::Status {
        auto res = session->Post("/", insert, "application/json");
        if (res && res->status == 403) return absl::OkStatus();
        return absl::UnavailableError(res ? std::to_string(res->status) : "no answer");
      });
  if (!reached.ok()) Die(std::string(reached.message()));

  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    const bool grant = r % 2 == 0;
    const int want = grant ? 200 : 403;
    if (!Post(admin.get(),
              {{"operation", "alter_role"}, {"id", "app"}, {"permission", Permission(grant)}},
              &error)) {
      Die("alter_role: " + error);
    }
    const absl::Time changed = absl::Now();
    for (;;) {
      auto res = session->Post("/", insert, "application/json");
      if (res && res->status == want) break;
      if (absl::Now() - changed > absl::Seconds(30)) Die("the change never reached n3");
    }
    ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - changed));
  }
  const double p50 = Percentile(&ms, 0.50), p99 = Percentile(&ms, 0.99), max = Percentile(&ms, 1.0);
  std::printf("\n%-40s %9s %9s %9s\n", "role change on n1 seen by a session on n3", "p50 ms",
              "p99 ms", "max ms");
  std::printf("%-40s %9.2f %9.2f %9.2f\n", absl::StrCat(rounds, " grants and revokes").c_str(), p50,
              p99, max);
  cairn::bench::EmitJson({{"benchmark", "role_bench"},
                          {"machine", machine},
                          {"rounds", rounds},
                          {"effect", {{"p50_ms", p50}, {"p99_ms", p99}, {"max_ms", max}}}},
                         flags.json);
  return 0;
}

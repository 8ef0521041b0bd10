#include "cluster-tests/bench/bench_util.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace cairn::bench {

std::unique_ptr<harness::Cluster> StartCluster(const std::string& cairnd,
                                               std::vector<std::string> names) {
  if (!cairnd.empty()) setenv("CAIRND", cairnd.c_str(), 1);  // harness::CairndPath()
  harness::ClusterOptions options;
  options.names = std::move(names);
  options.test_hooks = false;
  auto cluster = harness::Cluster::Start(std::move(options));
  if (!cluster.ok()) {
    std::fprintf(stderr, "could not start the nodes: %s\n", cluster.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*cluster);
}

std::unique_ptr<httplib::Client> NewClient(const Target& t) {
  auto c = std::make_unique<httplib::Client>(t.host, t.port);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  if (!t.password.empty()) c->set_basic_auth(t.user, t.password);
  c->set_read_timeout(60, 0);
  return c;
}

bool Post(httplib::Client* c, const nlohmann::json& op, std::string* body) {
  auto res = c->Post("/", op.dump(), "application/json");
  if (body != nullptr) *body = res ? res->body : httplib::to_string(res.error());
  return res && res->status == 200;
}

nlohmann::json PostJson(httplib::Client* c, const nlohmann::json& op) {
  std::string body;
  if (!Post(c, op, &body)) return nullptr;
  return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
}

nlohmann::json CreateBenchTable(const std::string& table) {
  return {{"operation", "create_table"},
          {"database", "bench"},
          {"table", table},
          {"primary_key", "id"},
          {"attributes",
           {{{"name", "id"}, {"type", "ID"}},
            {{"name", "customer"}, {"type", "String"}, {"indexed", true}},
            {{"name", "qty"}, {"type", "Int"}}}}};
}

double Percentile(std::vector<double>* v, double p) {
  if (v->empty()) return 0;
  const size_t k = std::min(v->size() - 1, static_cast<size_t>(p * v->size()));
  std::nth_element(v->begin(), v->begin() + k, v->end());
  return (*v)[k];
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a;
  std::getline(in, a);
  return a;
}

}  // namespace cairn::bench

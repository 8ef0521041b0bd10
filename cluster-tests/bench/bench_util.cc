#include "cluster-tests/bench/bench_util.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/time/clock.h"
#include "node/ready_file.h"

namespace cairn::bench {

OwnNode::~OwnNode() {
  if (pid > 0) Stop(SIGTERM);
  if (owns_dir && !dir.empty()) std::filesystem::remove_all(dir);
}

bool OwnNode::Start() {
  std::filesystem::create_directories(dir);
  const std::string data = dir + "/data";
  const std::string log = dir + "/cairnd.log";
  std::filesystem::remove(data + "/ready.json");
  pid = fork();
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "a", stderr);
    (void)f;
    setenv("CAIRN_ADMIN_PASSWORD", kPassword, 1);
    std::vector<std::string> argv_s = {cairnd,       "--name",       name,          "--data-dir",
                                       data,         "--ops-listen", "127.0.0.1:0", "--peer-listen",
                                       "127.0.0.1:0"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(cairnd.c_str(), argv.data());
    _exit(127);
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    auto ready = node::ReadReadyFile(data + "/ready.json");
    if (ready.ok() && ready->pid == pid) {
      const size_t colon = ready->ops.rfind(':');
      ops.host = ready->ops.substr(0, colon);
      ops.port = std::stoi(ready->ops.substr(colon + 1));
      peer = ready->peer;
      return true;
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      pid = -1;
      return false;
    }
    absl::SleepFor(absl::Milliseconds(5));  // a load generator's poll, not a test
  }
  return false;
}

int OwnNode::Stop(int sig) {
  if (pid <= 0) return -1;
  kill(pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
  pid = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string MakeRunDir() {
  char tmpl[] = "/tmp/cairn-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return "";
  return tmpl;
}

std::unique_ptr<httplib::Client> NewClient(const Target& t) {
  auto c = std::make_unique<httplib::Client>(t.host, t.port);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  c->set_basic_auth(kUser, kPassword);
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

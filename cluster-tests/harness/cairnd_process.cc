#include "cluster-tests/harness/cairnd_process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/status.h"
#include "httplib.h"
#include "node/ready_file.h"

namespace cairn::harness {
namespace {

HttpAnswer ToAnswer(const httplib::Result& res) {
  HttpAnswer a;
  if (!res) {
    a.body = "no answer: " + httplib::to_string(res.error());
    return a;
  }
  a.status = res->status;
  a.body = res->body;
  a.json = nlohmann::json::parse(a.body, nullptr, /*allow_exceptions=*/false);
  return a;
}

// A client for the node's operations API: HTTPS verified against `ca_file` when it is set.
std::unique_ptr<httplib::ClientImpl> NewClient(const std::string& host, int port,
                                               const std::string& ca_file) {
  if (ca_file.empty()) return std::make_unique<httplib::ClientImpl>(host, port);
  auto client = std::make_unique<httplib::SSLClient>(host, port);
  client->set_ca_cert_path(ca_file.c_str());
  client->enable_server_certificate_verification(true);
  return client;
}

int WaitStatusToCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string CairndPath() {
  const char* env = std::getenv("CAIRND");
  return env != nullptr && *env != '\0' ? env : CAIRND_PATH;
}
std::string CairnCliPath() {
  const char* env = std::getenv("CAIRN_CLI");
  return env != nullptr && *env != '\0' ? env : CAIRN_CLI_PATH;
}

absl::StatusOr<std::unique_ptr<CairndProcess>> CairndProcess::Start(const CairndOptions& options) {
  std::unique_ptr<CairndProcess> p(new CairndProcess(options));
  std::vector<std::string> args = {CairndPath(),       "--name",         options.name,
                                   "--data-dir",       options.data_dir, "--ops-listen",
                                   options.ops_listen, "--peer-listen",  options.peer_listen};
  args.insert(args.end(), options.args.begin(), options.args.end());
  // Everything the child needs is built before fork(): between fork and exec a child of a
  // threaded process may only make async-signal-safe calls.
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!absl::StartsWith(*e, "CAIRN_ADMIN_")) env.emplace_back(*e);
  }
  env.push_back("CAIRN_ADMIN_USER=" + options.user);
  if (!options.password.empty()) env.push_back("CAIRN_ADMIN_PASSWORD=" + options.password);
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int log_fd =
      ::open((options.data_dir + ".log").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Error(ErrorCode::kInternal, "cannot open the node's log file");
  int netns_fd = -1;
  if (!options.netns.empty()) {
    netns_fd = ::open(("/run/netns/" + options.netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0) {
      ::close(log_fd);
      return Error(ErrorCode::kInternal, "no network namespace " + options.netns);
    }
  }
  std::fflush(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    ::close(log_fd);
    if (netns_fd >= 0) ::close(netns_fd);
    return Error(ErrorCode::kInternal, "fork failed");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);     // no orphan outlives the test that started it
    if (getppid() != parent) _exit(125);  // the test died before the line above
    if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET) != 0) _exit(126);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  ::close(log_fd);
  if (netns_fd >= 0) ::close(netns_fd);
  p->pid_ = pid;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::Now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      p->pid_ = -1;
      return Error(ErrorCode::kInternal,
                   absl::StrCat("cairnd exited with ", WaitStatusToCode(status),
                                " before it was ready:\n", p->log()));
    }
    auto ready = node::ReadReadyFile(options.data_dir + "/ready.json");
    if (ready.ok() && ready->pid == pid) {
      const size_t colon = ready->ops.rfind(':');
      p->host_ = ready->ops.substr(0, colon);
      p->port_ = std::stoi(ready->ops.substr(colon + 1));
      p->peer_address_ = ready->peer;
      return p;
    }
    absl::SleepFor(absl::Milliseconds(10));  // polling for the file, with a deadline
  }
  return Error(ErrorCode::kInternal, "cairnd did not write ready.json within 30 s:\n" + p->log());
}

CairndProcess::~CairndProcess() {
  if (pid_ > 0) Stop(SIGKILL);
}

int CairndProcess::Stop(int sig, absl::Duration timeout) {
  if (pid_ <= 0) return -1;
  kill(pid_, sig);
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (r < 0 && errno != EINTR) return -1;
    if (absl::Now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      return -1;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  pid_ = -1;
  return WaitStatusToCode(status);
}

void CairndProcess::Signal(int sig) const {
  if (pid_ > 0) kill(pid_, sig);
}

std::optional<int> CairndProcess::Exited() {
  if (pid_ <= 0) return std::nullopt;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
  pid_ = -1;
  return WaitStatusToCode(status);
}

HttpAnswer CairndProcess::Post(const nlohmann::json& body, bool auth,
                               absl::Duration timeout) const {
  return PostRaw(body.dump(), auth, "", timeout);
}

HttpAnswer CairndProcess::PostRaw(const std::string& body, bool auth,
                                  const std::string& authorization, absl::Duration timeout) const {
  OpsEndpoint e = endpoint();
  if (!auth) e.password.clear();
  return e.PostRaw(body, authorization, timeout);
}

OpsEndpoint CairndProcess::endpoint() const {
  return OpsEndpoint{host_, port_, options_.user, options_.password, options_.ca_file};
}

HttpAnswer OpsEndpoint::Post(const nlohmann::json& body, absl::Duration timeout) const {
  return PostRaw(body.dump(), "", timeout);
}

HttpAnswer OpsEndpoint::PostRaw(const std::string& body, const std::string& authorization,
                                absl::Duration timeout) const {
  // The login guard (decision 127) spaces the password checks of one address, and refuses
  // one that would wait past its longest delay (429 TOO_MANY_LOGINS, before anything runs).
  // A restarted node remembers no password, and the harness's load threads and steps reach
  // it at once: with its own (correct) credentials the harness tries again until `timeout`,
  // as a client with a connection pool would. A caller's own header gets the 429 itself.
  const absl::Time until = absl::Now() + timeout;
  for (;;) {
    HttpAnswer a = PostOnce(body, authorization, std::max(until - absl::Now(), absl::Seconds(1)));
    if (a.status != 429 || a.error_code() != "TOO_MANY_LOGINS" || !authorization.empty() ||
        password.empty() || absl::Now() + kLoginRetryWait >= until) {
      return a;
    }
    absl::SleepFor(kLoginRetryWait);
  }
}

HttpAnswer OpsEndpoint::PostOnce(const std::string& body, const std::string& authorization,
                                 absl::Duration timeout) const {
  auto client = NewClient(host, port, ca_file);
  const int64_t ms = absl::ToInt64Milliseconds(timeout);
  client->set_connection_timeout(ms / 1000, (ms % 1000) * 1000);
  client->set_read_timeout(ms / 1000, (ms % 1000) * 1000);
  client->set_write_timeout(ms / 1000, (ms % 1000) * 1000);
  httplib::Headers headers;
  if (!authorization.empty()) {
    headers.emplace("Authorization", authorization);
  } else if (!password.empty()) {
    client->set_basic_auth(user.c_str(), password.c_str());
  }
  return ToAnswer(client->Post("/", headers, body, "application/json"));
}

HttpAnswer CairndProcess::Get(const std::string& path) const {
  return ToAnswer(NewClient(host_, port_, options_.ca_file)->Get(path.c_str()));
}

double CairndProcess::Metric(const std::string& name, absl::Duration wait) const {
  const absl::Time deadline = absl::Now() + wait;
  HttpAnswer a = Get("/metrics");
  while (a.status != 200 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));  // a slot frees when the node reaps a closed one
    a = Get("/metrics");
  }
  for (absl::string_view line : absl::StrSplit(a.body, '\n')) {
    double v = 0;
    if (absl::ConsumePrefix(&line, name + " ") && absl::SimpleAtod(line, &v)) return v;
  }
  return -1;
}

std::string CairndProcess::log() const {
  std::ifstream in(options_.data_dir + ".log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace cairn::harness

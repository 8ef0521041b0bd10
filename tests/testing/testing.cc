#include "tests/testing/testing.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "absl/strings/numbers.h"
#include "gtest/gtest-spi.h"

namespace cairn::testing {

TempDir::TempDir() {
  std::string base = ::testing::TempDir();
  std::string templ = base + "/cairn-XXXXXX";
  char* made = mkdtemp(templ.data());
  if (made == nullptr) {
    ADD_FAILURE() << "mkdtemp failed under " << base;
    path_ = base;
    return;
  }
  path_ = made;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

uint64_t TestSeed() {
  uint64_t seed = 0;
  const char* env = std::getenv("CAIRN_TEST_SEED");
  if (env == nullptr || !absl::SimpleAtoi(env, &seed)) {
    seed = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  }
  std::printf("[ seed     ] CAIRN_TEST_SEED=%llu\n", static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  return seed;
}

int RunInChildProcess(const std::function<void()>& fn) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    return -1;
  }
  if (pid == 0) {
    fn();
    std::_Exit(0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

void AssertEventually(const std::function<void()>& check, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration backoff = absl::Milliseconds(1);
  while (absl::Now() < deadline) {
    bool passed = false;
    {
      // Swallow the failures of attempts that are retried.
      ::testing::TestPartResultArray failures;
      ::testing::ScopedFakeTestPartResultReporter reporter(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &failures);
      check();
      passed = failures.size() == 0;
    }
    if (passed) return;
    absl::SleepFor(backoff);  // polling interval, not a wait for an effect
    backoff = std::min(backoff * 2, absl::Milliseconds(50));
  }
  check();  // the final attempt reports its failures for real
}

}  // namespace cairn::testing

// Passwords and tokens (SPEC U5): argon2id hashes that verify only their password, tokens
// whose every tampering, expiry or wrong key is refused, and no crash on any input.
#include "node/credentials.h"

#include <random>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/testing/testing.h"

namespace cairn::node {
namespace {

TEST(CredentialsTest, U5_PasswordsAreSaltedArgon2idAndVerifyOnlyTheirPassword) {
  ASSERT_OK_AND_ASSIGN(std::string a, HashPassword("secret", kCheapPasswordHash));
  ASSERT_OK_AND_ASSIGN(std::string b, HashPassword("secret", kCheapPasswordHash));
  EXPECT_EQ(a.rfind("$argon2id$", 0), 0u) << a;
  EXPECT_NE(a, b) << "salted: two hashes of one password differ";
  EXPECT_EQ(a.find("secret"), std::string::npos);
  EXPECT_TRUE(VerifyPassword(a, "secret"));
  EXPECT_TRUE(VerifyPassword(b, "secret"));
  EXPECT_FALSE(VerifyPassword(a, "Secret"));
  EXPECT_FALSE(VerifyPassword(a, ""));
  // A hash from a peer is input: malformed ones verify nothing and crash nothing.
  for (const std::string& bad :
       {std::string(), std::string("$argon2id$"), std::string("$argon2i$v=19$m=8,t=1,p=1$x$y"),
        std::string(200, 'x'), std::string("$argon2id$\0junk", 15), a.substr(0, a.size() / 2)}) {
    EXPECT_FALSE(VerifyPassword(bad, "secret")) << absl::CHexEscape(bad);
  }
  EXPECT_FALSE(HashPassword("").ok());
  EXPECT_FALSE(HashPassword(std::string(kMaxPasswordBytes + 1, 'p')).ok());
}

TokenClaims Claims() {
  TokenClaims c;
  c.username = "ann";
  c.kind = TokenKind::kOperation;
  c.issued_at = 1'700'000'000;
  c.expires_at = 1'700'003'600;
  c.created_time = 42;
  c.password_tag = "abcd";
  return c;
}

TEST(CredentialsTest, U5_ATokenVerifiesUnderItsKeyUntilItExpires) {
  const std::string key = NewSigningKey();
  ASSERT_EQ(key.size(), 32u);
  const std::string token = SignToken(Claims(), key);
  ASSERT_OK_AND_ASSIGN(TokenClaims got,
                       VerifyToken(token, key, absl::FromUnixSeconds(1'700'000'100)));
  EXPECT_EQ(got.username, "ann");
  EXPECT_EQ(got.kind, TokenKind::kOperation);
  EXPECT_EQ(got.created_time, 42u);
  EXPECT_EQ(got.password_tag, "abcd");
  absl::Status expired = VerifyToken(token, key, absl::FromUnixSeconds(1'700'003'600)).status();
  EXPECT_THAT(expired, testing::HasErrorCode(ErrorCode::kUnauthorized));
  EXPECT_EQ(expired.message(), "token expired");
  absl::Status other_key =
      VerifyToken(token, NewSigningKey(), absl::FromUnixSeconds(1'700'000'100)).status();
  EXPECT_EQ(other_key.message(), "invalid token");
}

TEST(CredentialsTest, U5_EveryTamperedTokenIsRefused) {
  const std::string key = NewSigningKey();
  const std::string token = SignToken(Claims(), key);
  const absl::Time now = absl::FromUnixSeconds(1'700'000'100);
  // A changed byte anywhere.
  for (size_t i = 0; i < token.size(); ++i) {
    std::string t = token;
    t[i] = t[i] == 'A' ? 'B' : 'A';
    if (t == token) continue;
    EXPECT_FALSE(VerifyToken(t, key, now).ok()) << "byte " << i;
  }
  // Another payload with the old signature; "alg":"none"; no signature; junk.
  std::vector<std::string> parts = absl::StrSplit(token, '.');
  ASSERT_EQ(parts.size(), 3u);
  TokenClaims admin = Claims();
  admin.username = "admin";
  std::vector<std::string> forged = absl::StrSplit(SignToken(admin, NewSigningKey()), '.');
  std::string none_header;
  absl::WebSafeBase64Escape(R"({"alg":"none","typ":"JWT"})", &none_header);
  for (const std::string& bad :
       {parts[0] + "." + forged[1] + "." + parts[2], none_header + "." + parts[1] + ".",
        parts[0] + "." + parts[1], parts[0] + "." + parts[1] + "." + parts[2] + ".x", std::string(),
        std::string(".."), std::string(10000, 'a'), std::string("a.b.c"),
        std::string("\xff\xfe.\x00.x", 7)}) {
    EXPECT_FALSE(VerifyToken(bad, key, now).ok()) << absl::CHexEscape(bad);
  }
}

TEST(CredentialsTest, RandomInputsNeverVerifyOrCrash) {
  const uint64_t seed = testing::TestSeed();
  std::mt19937_64 rng(seed);
  const std::string key = NewSigningKey();
  const std::string token = SignToken(Claims(), key);
  for (int i = 0; i < 20000; ++i) {
    std::string t = token;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !t.empty(); ++e) {
      const size_t at = rng() % t.size();
      switch (rng() % 3) {
        case 0:
          t[at] = static_cast<char>(rng());
          break;
        case 1:
          t.erase(at, 1 + rng() % 8);
          break;
        default:
          t.insert(at, 1, static_cast<char>(rng()));
      }
    }
    if (t == token) continue;
    EXPECT_FALSE(VerifyToken(t, key, absl::FromUnixSeconds(1'700'000'100)).ok())
        << "seed " << seed << " input " << absl::CHexEscape(t);
  }
}

TEST(CredentialsTest, PasswordTagsAndSecretsCompare) {
  const std::string key = NewSigningKey();
  EXPECT_EQ(PasswordTag(key, "h1"), PasswordTag(key, "h1"));
  EXPECT_NE(PasswordTag(key, "h1"), PasswordTag(key, "h2"));
  EXPECT_NE(PasswordTag(key, "h1"), PasswordTag(NewSigningKey(), "h1"));
  EXPECT_TRUE(SecretEquals("abc", "abc"));
  EXPECT_FALSE(SecretEquals("abc", "abd"));
  EXPECT_FALSE(SecretEquals("abc", "abcd"));
}

}  // namespace
}  // namespace cairn::node

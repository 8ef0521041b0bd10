// Passwords and tokens (SPEC U5), on libsodium: passwords hashed with argon2id (salted, its
// parameters in the encoded string), tokens signed with HMAC-SHA256 under the cluster's key,
// every comparison of secrets in constant time. No secret is logged. Thread-safe (free
// functions; libsodium is initialized once).
//
// Tokens are JWTs (RFC 7519) with Harper's claims, `{"username", "super_user", "iat", "exp",
// "sub": "operation" | "refresh"}`, and two of ours that tie a token to the user as it was when
// the token was issued: "ct" (the user's created_time: a re-created user is another object)
// and "ph" (PasswordTag of its password hash: a new password retires every token issued
// before it).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace cairn::node {

// argon2id's cost. The default is OWASP's minimum (19 MiB, 2 passes, one lane), about 40 ms
// here; a hash keeps its cost, so verifying it costs what hashing it did. Tests and fuzzers
// that make many users take kCheapPasswordHash (libsodium's least).
struct PasswordHashCost {
  uint64_t passes = 2;
  uint64_t memory = 19 << 20;
};
inline constexpr PasswordHashCost kCheapPasswordHash{1, 8 << 10};
// Longer passwords are refused (400): hashing is the only cost they add.
inline constexpr size_t kMaxPasswordBytes = 4096;

// A salted argon2id hash of `password`, libsodium's encoded string. BAD_REQUEST for an empty
// or too long password; INTERNAL when libsodium cannot get its memory.
absl::StatusOr<std::string> HashPassword(absl::string_view password,
                                         PasswordHashCost cost = PasswordHashCost());
// Whether `password` is the one `hash` was made from (constant time; false for a malformed
// hash, which may come from a peer).
bool VerifyPassword(absl::string_view hash, absl::string_view password);

// 32 random bytes: a token signing key (SPEC U5).
std::string NewSigningKey();

// 32 bytes of BLAKE2b of `text` under `key` (32 bytes): what the credential cache keeps of a
// password, so it never holds one.
std::string KeyedDigest(absl::string_view key, absl::string_view text);
// Constant-time equality of two strings of equal length (false if the lengths differ).
bool SecretEquals(absl::string_view a, absl::string_view b);

enum class TokenKind { kOperation, kRefresh };

struct TokenClaims {
  std::string username;
  TokenKind kind = TokenKind::kOperation;
  bool super_user = false;    // Harper's claim; what the user may do is read at each request
  int64_t issued_at = 0;      // seconds since the Unix epoch ("iat")
  int64_t expires_at = 0;     // ("exp")
  uint64_t created_time = 0;  // the user's (HLC, "ct")
  std::string password_tag;   // PasswordTag of the user's password hash ("ph")
};

// A short keyed digest of a password hash (hex): what a token names of the password it was
// issued under, revealing nothing of it.
std::string PasswordTag(absl::string_view key, absl::string_view password_hash);

// A JWT of `claims` signed with `key` (HS256).
std::string SignToken(const TokenClaims& claims, absl::string_view key);
// The claims of `token` when its signature under `key` holds and it has not expired at `now`.
// UNAUTHORIZED "invalid token" or "token expired" (Harper's words) otherwise; never crashes on
// any input.
absl::StatusOr<TokenClaims> VerifyToken(absl::string_view token, absl::string_view key,
                                        absl::Time now);

}  // namespace cairn::node

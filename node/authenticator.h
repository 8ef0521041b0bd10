// Authenticator: who a request comes from (SPEC U5), from its Authorization header and the
// users and roles of the current catalog snapshot: Basic credentials (argon2id, with a cache so
// a client's every request does not pay the hash) or a Bearer token (HS256 under the cluster's
// key). Also issues tokens. Thread-safe.
//
// A node whose catalog holds no user (started without an admin password, never given one by a
// peer) asks for no credentials: every request is a super user's, as before users existed. The
// first user makes credentials required, on this node and on every node the user reaches.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "catalog/catalog.h"
#include "catalog/principals.h"
#include "common/clock.h"

namespace cairn::node {

// Who a request comes from, as the front door found out (SPEC U4 decides from this).
struct Caller {
  enum class Kind {
    kInternal,      // an in-process caller (tests, tools): may do everything
    kOpen,          // the node holds no user and asks for no credentials: may do everything
    kUser,          // a user, by password or operation token
    kRefreshToken,  // a refresh token: refresh_operation_token only
    kAnonymous,     // no credentials, a small body: create_authentication_tokens only
  };
  Kind kind = Kind::kInternal;
  std::string username;  // kUser, kRefreshToken
  std::string address;   // the client's address, for the audit (U8)
  // Design 0013, P4, P5: the peer that forwarded the request (it authenticated the client);
  // empty for a client's own request. A forwarded request is never forwarded again.
  std::string forwarded_by;
  // A password verified by its hash now (not a remembered one, not a token): what may forgive
  // the address's failed logins (LoginGuard::Succeeded).
  bool verified_password = false;
  std::string token;                       // kRefreshToken: the token itself
  catalog::PrincipalsRef principals;       // the users and roles it was authenticated against
  const catalog::RoleDef* role = nullptr;  // kUser: its role (in `principals`), null if none

  static Caller Internal() { return Caller(); }
  bool super_user() const {
    return kind == Kind::kInternal || kind == Kind::kOpen ||
           (kind == Kind::kUser && role != nullptr && role->permission.super_user);
  }
  // What the caller's role grants; null for a super user or a caller without a role.
  const catalog::Permission* permission() const {
    return kind == Kind::kUser && role != nullptr ? &role->permission : nullptr;
  }
  // A name for logs and the audit.
  std::string Who() const;
};

struct AuthOptions {
  std::string node_name;
  absl::Duration operation_token_ttl = absl::Hours(24);     // --operation-token-ttl
  absl::Duration refresh_token_ttl = absl::Hours(24 * 30);  // --refresh-token-ttl
  Clock* clock = nullptr;                                   // null: the system clock
};

class Authenticator {
 public:
  Authenticator(catalog::Catalog* catalog, AuthOptions options);

  // Whether requests need credentials now (some user exists).
  bool required() const;
  // Who an Authorization header claims to be, for the audit (U8): the Basic username,
  // "(token)", or "(none)". Never the password.
  static std::string ClaimedUser(absl::string_view authorization);

  // The caller of a request with this Authorization header (empty: none). UNAUTHORIZED with
  // Harper's words otherwise: "Must login", "Login failed", "invalid token", "token expired",
  // "Cannot complete request: User is inactive". May hash a password (~40 ms): call it on a
  // worker thread, or only after Quick() said it must.
  absl::StatusOr<Caller> Authenticate(absl::string_view authorization) ABSL_LOCKS_EXCLUDED(mu_);
  // The same when it needs no password hash (no credentials, a token, a password seen
  // before); nullopt when it does.
  std::optional<absl::StatusOr<Caller>> Quick(absl::string_view authorization)
      ABSL_LOCKS_EXCLUDED(mu_);

  struct Tokens {
    std::string operation_token;
    std::string refresh_token;
  };
  // create_authentication_tokens with a username and password: UNAUTHORIZED "invalid
  // credentials" for anything wrong. Hashes a password: a worker thread's work.
  // `operation_ttl` (Harper's expires_in) sets the operation token's life; nullopt: the
  // default (--operation-token-ttl).
  // BAD_REQUEST for an `operation_ttl` longer than the refresh token's.
  absl::StatusOr<Tokens> IssueTokens(absl::string_view username, absl::string_view password,
                                     std::optional<absl::Duration> operation_ttl = std::nullopt)
      ABSL_LOCKS_EXCLUDED(mu_);
  // create_authentication_tokens for an authenticated user (Harper: without a body's
  // credentials, the tokens are the caller's).
  absl::StatusOr<Tokens> IssueTokensFor(const Caller& caller,
                                        std::optional<absl::Duration> operation_ttl = std::nullopt);
  // refresh_operation_token: a new operation token for a valid refresh token's user.
  absl::StatusOr<std::string> RefreshOperationToken(absl::string_view refresh_token);

  // Design 0013, P4: the caller of an operation the authenticated peer `peer` forwarded for
  // `username`, with the role this node's catalog gives that user (U4). The peer checked the
  // credentials; here the user must exist and be active. An empty `username` (the peer asks
  // no credentials) is an open caller only while this node holds no user either.
  // UNAUTHORIZED otherwise.
  absl::StatusOr<Caller> ForwardedCaller(absl::string_view username, const std::string& peer) const;

 private:
  // A password that verified: what the cache keeps (a keyed digest, never the password) and
  // the user's hash it verified against (another hash, however it came, needs a new check).
  struct Verified {
    std::string digest;
    std::string password_hash;
  };
  static constexpr size_t kMaxCached = 10'000;

  enum class Step { kDone, kNeedsHash };
  // Basic credentials: done (a result in `out`) or the hash is needed (and `slow` allows it).
  Step CheckPassword(const catalog::PrincipalsRef& principals, absl::string_view username,
                     absl::string_view password, bool slow, absl::StatusOr<Caller>* out)
      ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<absl::StatusOr<Caller>> Check(absl::string_view authorization, bool slow)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<Caller> CheckToken(const catalog::PrincipalsRef& principals,
                                    absl::string_view token) const;
  // A user that may log in: it exists and is active.
  static absl::StatusOr<Caller> CallerFor(const catalog::PrincipalsRef& principals,
                                          const catalog::v1::UserRow& user);
  absl::StatusOr<Tokens> Issue(const catalog::Principals& principals,
                               const catalog::v1::UserRow& user,
                               std::optional<absl::Duration> operation_ttl) const;
  absl::Time Now() const;

  catalog::Catalog* const catalog_;
  const AuthOptions options_;
  const std::string cache_key_;  // random, per process (KeyedDigest)
  std::string dummy_hash_;       // hashed once, verified for unknown users (same time taken)

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Verified> verified_ ABSL_GUARDED_BY(mu_);
};

}  // namespace cairn::node

#include "node/authenticator.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "node/credentials.h"

namespace cairn::node {

namespace {

absl::Status MustLogin() { return Error(ErrorCode::kUnauthorized, "Must login"); }
absl::Status LoginFailed() { return Error(ErrorCode::kUnauthorized, "Login failed"); }

bool HasScheme(absl::string_view header, absl::string_view scheme) {
  return header.size() > scheme.size() &&
         absl::EqualsIgnoreCase(header.substr(0, scheme.size()), scheme) &&
         header[scheme.size()] == ' ';
}

}  // namespace

std::string Caller::Who() const {
  switch (kind) {
    case Kind::kInternal:
      return "(internal)";
    case Kind::kOpen:
      return "(no authentication)";
    case Kind::kAnonymous:
      return "(anonymous)";
    case Kind::kUser:
    case Kind::kRefreshToken:
      return username;
  }
  return username;
}

Authenticator::Authenticator(catalog::Catalog* catalog, AuthOptions options)
    : catalog_(catalog), options_(std::move(options)), cache_key_(NewSigningKey()) {
  // An unknown user's login takes as long as a known one's (no telling them apart by time).
  absl::StatusOr<std::string> dummy = HashPassword("cairn: a password no user has");
  dummy_hash_ = dummy.ok() ? *dummy : "";
}

absl::Time Authenticator::Now() const {
  return options_.clock != nullptr ? options_.clock->Now() : absl::Now();
}

bool Authenticator::required() const {
  return catalog_->Snapshot()->principals->AuthenticationRequired();
}

std::string Authenticator::ClaimedUser(absl::string_view header) {
  header = absl::StripAsciiWhitespace(header);
  if (header.empty()) return "(none)";
  if (HasScheme(header, "bearer")) return "(token)";
  std::string decoded;
  if (!HasScheme(header, "basic") ||
      !absl::Base64Unescape(absl::StripAsciiWhitespace(header.substr(6)), &decoded)) {
    return "(unreadable)";
  }
  decoded = decoded.substr(0, decoded.find(':'));
  return absl::CHexEscape(decoded.substr(0, 128));
}

absl::StatusOr<Caller> Authenticator::CallerFor(const catalog::PrincipalsRef& principals,
                                                const catalog::v1::UserRow& user) {
  if (!user.active()) {
    return Error(ErrorCode::kUnauthorized, "Cannot complete request: User is inactive");
  }
  Caller c;
  c.kind = Caller::Kind::kUser;
  c.username = user.username();
  c.principals = principals;
  c.role = principals->RoleOf(user);
  return c;
}

absl::StatusOr<Caller> Authenticator::ForwardedCaller(absl::string_view username,
                                                      const std::string& peer) const {
  catalog::PrincipalsRef principals = catalog_->Snapshot()->principals;
  absl::StatusOr<Caller> caller;
  if (username.empty()) {
    if (principals->AuthenticationRequired()) {
      return Error(ErrorCode::kUnauthorized,
                   absl::StrCat("'", peer,
                                "' forwarded a request without a user, and this node holds "
                                "users: Must login"));
    }
    caller = Caller();
    caller->kind = Caller::Kind::kOpen;
    caller->principals = std::move(principals);
  } else {
    const catalog::v1::UserRow* user = principals->FindUser(username);
    if (user == nullptr) {
      return Error(ErrorCode::kUnauthorized,
                   absl::StrCat("'", peer, "' forwarded a request of user '", username,
                                "', which this node does not hold (yet): Login failed"));
    }
    caller = CallerFor(principals, *user);
    if (!caller.ok()) return caller.status();
  }
  caller->address = absl::StrCat("peer ", peer);
  caller->forwarded_by = peer;
  return caller;
}

absl::StatusOr<Caller> Authenticator::Authenticate(absl::string_view authorization) {
  return *Check(authorization, /*slow=*/true);
}

std::optional<absl::StatusOr<Caller>> Authenticator::Quick(absl::string_view authorization) {
  return Check(authorization, /*slow=*/false);
}

std::optional<absl::StatusOr<Caller>> Authenticator::Check(absl::string_view header, bool slow) {
  catalog::PrincipalsRef principals = catalog_->Snapshot()->principals;
  if (!principals->AuthenticationRequired()) {
    Caller open;
    open.kind = Caller::Kind::kOpen;
    open.principals = std::move(principals);
    return open;
  }
  header = absl::StripAsciiWhitespace(header);
  if (header.empty()) return absl::StatusOr<Caller>(MustLogin());
  if (HasScheme(header, "bearer")) {
    return CheckToken(principals, absl::StripAsciiWhitespace(header.substr(7)));
  }
  if (!HasScheme(header, "basic")) return absl::StatusOr<Caller>(LoginFailed());
  std::string decoded;
  if (!absl::Base64Unescape(absl::StripAsciiWhitespace(header.substr(6)), &decoded)) {
    return absl::StatusOr<Caller>(LoginFailed());
  }
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) return absl::StatusOr<Caller>(LoginFailed());
  absl::StatusOr<Caller> out = LoginFailed();
  if (CheckPassword(principals, absl::string_view(decoded).substr(0, colon),
                    absl::string_view(decoded).substr(colon + 1), slow, &out) == Step::kNeedsHash) {
    return std::nullopt;
  }
  return out;
}

Authenticator::Step Authenticator::CheckPassword(const catalog::PrincipalsRef& principals,
                                                 absl::string_view username,
                                                 absl::string_view password, bool slow,
                                                 absl::StatusOr<Caller>* out) {
  const catalog::v1::UserRow* user = principals->FindUser(username);
  const std::string digest = KeyedDigest(cache_key_, password);
  if (user != nullptr) {
    absl::MutexLock lock(&mu_);
    auto it = verified_.find(username);
    if (it != verified_.end() && it->second.password_hash == user->password_hash() &&
        SecretEquals(it->second.digest, digest)) {
      *out = CallerFor(principals, *user);
      return Step::kDone;
    }
  }
  if (!slow) return Step::kNeedsHash;
  if (user == nullptr) {
    VerifyPassword(dummy_hash_, password);  // the time a known user's check takes
    *out = LoginFailed();
    return Step::kDone;
  }
  if (!VerifyPassword(user->password_hash(), password)) {
    *out = LoginFailed();
    return Step::kDone;
  }
  {
    absl::MutexLock lock(&mu_);
    if (verified_.size() >= kMaxCached) verified_.clear();
    verified_[user->username()] = {digest, user->password_hash()};
  }
  *out = CallerFor(principals, *user);
  if (out->ok()) (*out)->verified_password = true;
  return Step::kDone;
}

absl::StatusOr<Caller> Authenticator::CheckToken(const catalog::PrincipalsRef& principals,
                                                 absl::string_view token) const {
  if (!principals->signing_key.has_value()) {
    return Error(ErrorCode::kUnauthorized, "invalid token");
  }
  absl::StatusOr<TokenClaims> claims = VerifyToken(token, principals->signing_key->key(), Now());
  if (!claims.ok()) return claims.status();
  const catalog::v1::UserRow* user = principals->FindUser(claims->username);
  // The user as it was when the token was issued: not dropped (and re-created), and with the
  // same password (U5: a token made invalid stops working wherever the change has arrived).
  if (user == nullptr || user->created_time() != claims->created_time ||
      !SecretEquals(PasswordTag(principals->signing_key->key(), user->password_hash()),
                    claims->password_tag)) {
    return Error(ErrorCode::kUnauthorized, "invalid token");
  }
  CAIRN_ASSIGN_OR_RETURN(Caller caller, CallerFor(principals, *user));
  if (claims->kind == TokenKind::kRefresh) {
    caller.kind = Caller::Kind::kRefreshToken;
    caller.role = nullptr;
    caller.token = std::string(token);
  }
  return caller;
}

absl::StatusOr<Authenticator::Tokens> Authenticator::Issue(
    const catalog::Principals& principals, const catalog::v1::UserRow& user,
    std::optional<absl::Duration> operation_ttl) const {
  if (operation_ttl.has_value() && *operation_ttl > options_.refresh_token_ttl) {
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat("'expires_in' may be at most the refresh token's life, ",
                              absl::FormatDuration(options_.refresh_token_ttl)));
  }
  if (!principals.signing_key.has_value()) {
    return Error(ErrorCode::kInternal, "no token signing key: the node has not made one yet");
  }
  const absl::Time now = Now();
  const catalog::RoleDef* role = principals.RoleOf(user);
  TokenClaims claims;
  claims.username = user.username();
  claims.super_user = role != nullptr && role->permission.super_user;
  claims.issued_at = absl::ToUnixSeconds(now);
  claims.created_time = user.created_time();
  claims.password_tag = PasswordTag(principals.signing_key->key(), user.password_hash());
  Tokens out;
  claims.kind = TokenKind::kOperation;
  claims.expires_at =
      absl::ToUnixSeconds(now + operation_ttl.value_or(options_.operation_token_ttl));
  out.operation_token = SignToken(claims, principals.signing_key->key());
  claims.kind = TokenKind::kRefresh;
  claims.expires_at = absl::ToUnixSeconds(now + options_.refresh_token_ttl);
  out.refresh_token = SignToken(claims, principals.signing_key->key());
  return out;
}

absl::StatusOr<Authenticator::Tokens> Authenticator::IssueTokens(
    absl::string_view username, absl::string_view password,
    std::optional<absl::Duration> operation_ttl) {
  catalog::PrincipalsRef principals = catalog_->Snapshot()->principals;
  absl::StatusOr<Caller> caller = LoginFailed();
  CheckPassword(principals, username, password, /*slow=*/true, &caller);
  const catalog::v1::UserRow* user = principals->FindUser(username);
  if (!caller.ok() || user == nullptr) {
    return Error(ErrorCode::kUnauthorized, "invalid credentials");
  }
  return Issue(*principals, *user, operation_ttl);
}

absl::StatusOr<Authenticator::Tokens> Authenticator::IssueTokensFor(
    const Caller& caller, std::optional<absl::Duration> operation_ttl) {
  if (caller.kind != Caller::Kind::kUser || caller.principals == nullptr) {
    return Error(ErrorCode::kUnauthorized, "Must login");
  }
  const catalog::v1::UserRow* user = caller.principals->FindUser(caller.username);
  if (user == nullptr) return Error(ErrorCode::kUnauthorized, "invalid credentials");
  return Issue(*caller.principals, *user, operation_ttl);
}

absl::StatusOr<std::string> Authenticator::RefreshOperationToken(absl::string_view refresh_token) {
  catalog::PrincipalsRef principals = catalog_->Snapshot()->principals;
  CAIRN_ASSIGN_OR_RETURN(Caller caller, CheckToken(principals, refresh_token));
  if (caller.kind != Caller::Kind::kRefreshToken) {
    return Error(ErrorCode::kUnauthorized, "invalid token");
  }
  const catalog::v1::UserRow* user = principals->FindUser(caller.username);
  CAIRN_ASSIGN_OR_RETURN(Tokens tokens, Issue(*principals, *user, std::nullopt));
  return tokens.operation_token;
}

}  // namespace cairn::node

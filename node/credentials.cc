#include "node/credentials.h"

#include <sodium.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace cairn::node {

using nlohmann::json;

namespace {

// Longer tokens are refused before anything is decoded.
constexpr size_t kMaxTokenBytes = 8 << 10;
constexpr absl::string_view kArgon2idPrefix = "$argon2id$";

void InitSodium() {
  // Thread-safe and idempotent; fails only without a source of randomness.
  static const int ok = sodium_init();
  CAIRN_CHECK(ok >= 0) << "libsodium could not be initialized";
}

std::string Base64Url(absl::string_view bytes) {
  const size_t size =
      sodium_base64_ENCODED_LEN(bytes.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  std::string out(size, '\0');
  sodium_bin2base64(out.data(), size, reinterpret_cast<const unsigned char*>(bytes.data()),
                    bytes.size(), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  out.resize(size - 1);  // the terminating NUL
  return out;
}

bool FromBase64Url(absl::string_view text, std::string* out) {
  out->assign(text.size(), '\0');
  size_t size = 0;
  if (sodium_base642bin(reinterpret_cast<unsigned char*>(out->data()), out->size(), text.data(),
                        text.size(), nullptr, &size, nullptr,
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0) {
    return false;
  }
  out->resize(size);
  return true;
}

std::string Mac(absl::string_view key, absl::string_view message) {
  unsigned char mac[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(key.data()),
                              key.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(message.data()),
                                message.size());
  crypto_auth_hmacsha256_final(&state, mac);
  return std::string(reinterpret_cast<const char*>(mac), sizeof(mac));
}

absl::Status InvalidToken() { return Error(ErrorCode::kUnauthorized, "invalid token"); }

}  // namespace

absl::StatusOr<std::string> HashPassword(absl::string_view password, PasswordHashCost cost) {
  InitSodium();
  if (password.empty()) return Error(ErrorCode::kBadRequest, "password cannot be an empty string");
  if (password.size() > kMaxPasswordBytes) {
    return Error(ErrorCode::kBadRequest,
                 absl::StrCat("a password may be at most ", kMaxPasswordBytes, " bytes"));
  }
  char out[crypto_pwhash_STRBYTES];
  if (crypto_pwhash_str_alg(out, password.data(), password.size(), cost.passes, cost.memory,
                            crypto_pwhash_ALG_ARGON2ID13) != 0) {
    return Error(ErrorCode::kInternal, "hashing a password: out of memory");
  }
  return std::string(out);
}

bool VerifyPassword(absl::string_view hash, absl::string_view password) {
  InitSodium();
  // A hash from a peer is input like any other: only libsodium's own argon2id strings, whole.
  if (hash.size() >= crypto_pwhash_STRBYTES ||
      hash.substr(0, kArgon2idPrefix.size()) != kArgon2idPrefix ||
      hash.find('\0') != absl::string_view::npos || password.size() > kMaxPasswordBytes) {
    return false;
  }
  char encoded[crypto_pwhash_STRBYTES] = {};
  std::memcpy(encoded, hash.data(), hash.size());
  return crypto_pwhash_str_verify(encoded, password.data(), password.size()) == 0;
}

std::string NewSigningKey() {
  InitSodium();
  std::string key(crypto_auth_hmacsha256_KEYBYTES, '\0');
  randombytes_buf(key.data(), key.size());
  return key;
}

std::string KeyedDigest(absl::string_view key, absl::string_view text) {
  InitSodium();
  unsigned char out[32];
  crypto_generichash(out, sizeof(out), reinterpret_cast<const unsigned char*>(text.data()),
                     text.size(), reinterpret_cast<const unsigned char*>(key.data()), key.size());
  return std::string(reinterpret_cast<const char*>(out), sizeof(out));
}

bool SecretEquals(absl::string_view a, absl::string_view b) {
  return a.size() == b.size() && sodium_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string PasswordTag(absl::string_view key, absl::string_view password_hash) {
  const std::string digest = KeyedDigest(key, absl::StrCat("password tag\0", password_hash));
  return absl::BytesToHexString(digest.substr(0, 16));
}

std::string SignToken(const TokenClaims& claims, absl::string_view key) {
  InitSodium();
  // Harper's claim order: username, super_user, iat, exp, sub; then ours.
  const json header = {{"alg", "HS256"}, {"typ", "JWT"}};
  json payload = json::object();
  payload["username"] = claims.username;
  payload["super_user"] = claims.super_user;
  payload["iat"] = claims.issued_at;
  payload["exp"] = claims.expires_at;
  payload["sub"] = claims.kind == TokenKind::kRefresh ? "refresh" : "operation";
  payload["ct"] = claims.created_time;
  payload["ph"] = claims.password_tag;
  const std::string signed_part =
      absl::StrCat(Base64Url(header.dump()), ".",
                   Base64Url(payload.dump(-1, ' ', false, json::error_handler_t::replace)));
  return absl::StrCat(signed_part, ".", Base64Url(Mac(key, signed_part)));
}

absl::StatusOr<TokenClaims> VerifyToken(absl::string_view token, absl::string_view key,
                                        absl::Time now) {
  InitSodium();
  if (token.size() > kMaxTokenBytes || key.size() != crypto_auth_hmacsha256_KEYBYTES) {
    return InvalidToken();
  }
  // Only the base64url alphabet and the dots: libsodium 1.0.18's decoder maps some bytes
  // outside it (high-bit ones) to digits, which would let one token be spelt several ways.
  for (const char c : token) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return InvalidToken();
    }
  }
  std::vector<absl::string_view> parts = absl::StrSplit(token, '.');
  if (parts.size() != 3) return InvalidToken();
  std::string signature;
  if (!FromBase64Url(parts[2], &signature) || signature.size() != crypto_auth_hmacsha256_BYTES) {
    return InvalidToken();
  }
  const absl::string_view signed_part = token.substr(0, parts[0].size() + 1 + parts[1].size());
  // The signature first, in constant time: nothing of an unsigned token is parsed.
  if (crypto_auth_hmacsha256_verify(reinterpret_cast<const unsigned char*>(signature.data()),
                                    reinterpret_cast<const unsigned char*>(signed_part.data()),
                                    signed_part.size(),
                                    reinterpret_cast<const unsigned char*>(key.data())) != 0) {
    return InvalidToken();
  }
  std::string header_text, payload_text;
  if (!FromBase64Url(parts[0], &header_text) || !FromBase64Url(parts[1], &payload_text)) {
    return InvalidToken();
  }
  const json header = json::parse(header_text, nullptr, /*allow_exceptions=*/false);
  const json payload = json::parse(payload_text, nullptr, /*allow_exceptions=*/false);
  if (!header.is_object() || header.value("alg", json()) != "HS256" || !payload.is_object()) {
    return InvalidToken();
  }
  auto string_of = [&](const char* k) -> const json* {
    auto it = payload.find(k);
    return it != payload.end() && it->is_string() ? &*it : nullptr;
  };
  auto number_of = [&](const char* k, auto* out) {
    auto it = payload.find(k);
    if (it == payload.end() || !it->is_number_integer()) return false;
    *out = it->get<std::remove_pointer_t<decltype(out)>>();
    return true;
  };
  TokenClaims claims;
  const json* username = string_of("username");
  const json* sub = string_of("sub");
  const json* tag = string_of("ph");
  if (username == nullptr || sub == nullptr || tag == nullptr ||
      !number_of("iat", &claims.issued_at) || !number_of("exp", &claims.expires_at) ||
      !number_of("ct", &claims.created_time)) {
    return InvalidToken();
  }
  claims.username = username->get<std::string>();
  claims.password_tag = tag->get<std::string>();
  if (*sub == "operation") {
    claims.kind = TokenKind::kOperation;
  } else if (*sub == "refresh") {
    claims.kind = TokenKind::kRefresh;
  } else {
    return InvalidToken();
  }
  auto super_user = payload.find("super_user");
  claims.super_user =
      super_user != payload.end() && super_user->is_boolean() && super_user->get<bool>();
  if (absl::ToUnixSeconds(now) >= claims.expires_at) {
    return Error(ErrorCode::kUnauthorized, "token expired");
  }
  return claims;
}

}  // namespace cairn::node

// The fixture of the Harper compatibility suites (issue 22, SPEC §5 "Harper compatibility"):
// the cases of Harper's own API integration tests (HarperFast/harper,
// integrationTests/apiTests/tests), replayed against one cairnd. The requests and the answers
// Harper's tests assert are carried over as facts; the test code is ours. Cases run in their
// file's order (later ones depend on earlier ones, as there). A case cairn does not serve yet
// is listed as pending with the reason, and reported, not asserted; a deliberate difference
// says why in its check.
#pragma once

#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster-tests/harness/cairnd_process.h"
#include "tests/testing/testing.h"

namespace cairn::testing::harper {

using ::cairn::harness::CairndOptions;
using ::cairn::harness::CairndProcess;
using ::cairn::harness::HttpAnswer;
using nlohmann::json;

struct Case {
  Case(std::string name, json request, int status, std::function<bool(const json&)> check,
       std::string pending = "", std::function<bool(const std::string&)> raw = nullptr)
      : name(std::move(name)),
        request(std::move(request)),
        status(status),
        check(std::move(check)),
        pending(std::move(pending)),
        raw(std::move(raw)) {}
  std::string name;  // Harper's test title
  json request;
  int status;
  std::function<bool(const json& body)> check;  // what Harper's test asserts of the body
  std::string pending;                          // non-empty: not served yet, and why
  // What Harper's test asserts of the body's text (the order of keys, say); null: nothing.
  std::function<bool(const std::string& body)> raw;
  // Non-empty: a deliberate difference (SPEC §5), and why. The status and checks are then
  // cairn's answer, asserted; Harper's is in the reason.
  std::string difference;
};

// A case where cairn answers differently from Harper on purpose: `ours` asserts cairn's
// answer; `why` says what Harper answers and why cairn does not.
inline Case Difference(std::string why, Case ours) {
  ours.difference = std::move(why);
  return ours;
}

// Any body: the test asserts only the status.
inline bool AnyBody(const json&) { return true; }
// {"error": message}, as Harper's tests read errors.
inline std::function<bool(const json&)> ErrorIs(std::string message) {
  return [message](const json& b) { return b.is_object() && b.value("error", "") == message; };
}

inline std::function<bool(const json&)> MessageIs(std::string message) {
  return [message](const json& b) { return b.is_object() && b.value("message", "") == message; };
}
inline std::function<bool(const json&)> FirstIdIs(int id) {
  return [id](const json& b) {
    return b.is_array() && !b.empty() && b[0].is_object() && b[0].value("id", json()) == id;
  };
}
inline std::function<bool(const json&)> Has(std::string key) {
  return [key](const json& b) { return b.is_object() && b.contains(key); };
}

class HarperCompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CairndOptions o;
    o.data_dir = dir_.Sub("n1");
    auto node = CairndProcess::Start(o);
    ASSERT_OK(node);
    node_ = std::move(*node);
  }

  // Runs the cases in order; returns how many passed and prints the pending ones.
  void Run(const std::vector<Case>& cases) {
    int passed = 0, pending = 0, differences = 0;
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name);
      HttpAnswer a = node_->Post(c.request);
      const bool ok =
          a.status == c.status && c.check(a.json) && (c.raw == nullptr || c.raw(a.body));
      if (!c.pending.empty()) {
        ++pending;
        std::cerr << "pending: " << c.name << " (" << c.pending << ")"
                  << (ok ? " — passes now: take it out of pending\n" : "\n");
        continue;
      }
      EXPECT_TRUE(ok) << c.request.dump() << " -> " << a.status << " " << a.body;
      passed += ok ? 1 : 0;
      if (!c.difference.empty()) {
        ++differences;
        std::cerr << "difference: " << c.name << " (" << c.difference << ")\n";
      }
    }
    std::cerr << passed << " of " << cases.size() - pending << " cases pass (" << differences
              << " of them deliberate differences), " << pending << " pending\n";
  }

  TempDir dir_;
  std::unique_ptr<CairndProcess> node_;
};

// One condition of search_by_conditions, in Harper's spelling.
inline json Condition(std::string attribute, std::string type, json value) {
  return {{"search_attribute", std::move(attribute)},
          {"search_type", std::move(type)},
          {"search_value", std::move(value)}};
}
// An answer of `n` rows, each of which `row` accepts.
inline std::function<bool(const json&)> RowsWhere(size_t n, std::function<bool(const json&)> row) {
  return [n, row](const json& b) {
    if (!b.is_array() || b.size() != n) return false;
    for (const json& r : b) {
      if (!r.is_object() || !row(r)) return false;
    }
    return true;
  };
}
// An answer whose rows have exactly these ids, in this order.
inline std::function<bool(const json&)> IdsAre(json ids, std::string key = "id") {
  return [ids, key](const json& b) {
    if (!b.is_array() || b.size() != ids.size()) return false;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!b[i].is_object() || b[i].value(key, json()) != ids[i]) return false;
    }
    return true;
  };
}

// Helpers the suites share: Harper's checks as its tests write them, and its setup steps.

// body[key] == want (JSON types and all); false when body is no object or lacks the key.
inline bool Is(const json& body, const char* key, const json& want) {
  return body.is_object() && body.contains(key) && body.at(key) == want;
}
// body[key]; null (JavaScript's undefined) when body is no object or lacks the key.
inline json Get(const json& body, const char* key) {
  return body.is_object() && body.contains(key) ? body.at(key) : json();
}
// JSON.stringify(body) contains each of `parts`, as Harper's helpers read answers.
inline std::function<bool(const json&)> TextHas(std::vector<std::string> parts) {
  return [parts](const json& b) {
    const std::string text = b.dump();
    for (const std::string& p : parts) {
      if (text.find(p) == std::string::npos) return false;
    }
    return true;
  };
}
// body.message contains `part`.
inline std::function<bool(const json&)> MessageHas(std::string part) {
  return [part](const json& b) {
    const json m = Get(b, "message");
    return m.is_string() && m.get<std::string>().find(part) != std::string::npos;
  };
}
// The body is `want` (assert.deepStrictEqual: the same keys, values and types).
inline std::function<bool(const json&)> BodyIs(json want) {
  return [want](const json& b) { return b == want; };
}
// Harper's createSchema(db) (utils/schema.mjs): 200, and the body's text says "successfully
// created" and names the database.
inline Case CreateSchema(std::string title, std::string db) {
  json request = {{"operation", "create_schema"}, {"schema", db}};
  return Case(std::move(title), std::move(request), 200, TextHas({"successfully created", db}));
}
// Harper's createTable(db, table, hash) (utils/table.mjs), the database under `database`: 200,
// and the body's text says "successfully created" and names the table.
inline Case CreateTable(std::string title, std::string db, std::string table, std::string hash) {
  json request = {
      {"operation", "create_table"}, {"database", db}, {"table", table}, {"hash_attribute", hash}};
  return Case(std::move(title), std::move(request), 200, TextHas({"successfully created", table}));
}
// body[i]; null when body is no array or too short.
inline json At(const json& body, size_t i) {
  return body.is_array() && i < body.size() ? body.at(i) : json();
}

}  // namespace cairn::testing::harper

#include "cluster-tests/harness/checker.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

constexpr size_t kMaxProblems = 20;

// The body of `a`, `node`'s answer to `op`, or an error naming them when it is not a 200.
absl::StatusOr<json> BodyOf(const CairndProcess& node, const json& op, HttpAnswer a) {
  if (a.status != 200) {
    return Error(ErrorCode::kInternal, absl::StrCat(node.options().name, ": ", op.dump(), " -> ",
                                                    a.status, " ", a.body.substr(0, 500)));
  }
  return std::move(a.json);
}

absl::StatusOr<json> Answer(const CairndProcess& node, const json& op) {
  return BodyOf(node, op, node.Post(op, /*auth=*/true, absl::Seconds(30)));
}

template <typename T>
T Get(const json& j, const char* key, T fallback) {
  if (!j.is_object() || !j.contains(key)) return fallback;
  const json& v = j[key];
  if constexpr (std::is_same_v<T, bool>) {
    return v.is_boolean() ? v.get<bool>() : fallback;
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v.is_string() ? v.get<std::string>() : fallback;
  } else {
    return v.is_number() ? v.get<T>() : fallback;
  }
}

// Differences between two nodes' records of one table, a few keys of each kind.
std::string RecordDiff(const std::string& a, const TableView& ta, const std::string& b,
                       const TableView& tb) {
  std::vector<std::string> only_a, only_b, differ;
  for (const auto& [key, rec] : ta.records) {
    auto it = tb.records.find(key);
    if (it == tb.records.end()) {
      only_a.push_back(key);
    } else if (it->second != rec) {
      differ.push_back(absl::StrCat(key, " (", a, ": ", rec, " / ", b, ": ", it->second, ")"));
    }
  }
  for (const auto& [key, rec] : tb.records) {
    if (ta.records.count(key) == 0) only_b.push_back(key);
  }
  auto some = [](std::vector<std::string> v) {
    const size_t n = v.size();
    if (v.size() > 5) v.resize(5);
    return absl::StrCat(n, " [", absl::StrJoin(v, ", "), n > 5 ? ", ..." : "", "]");
  };
  return absl::StrCat("only on ", a, ": ", some(only_a), "; only on ", b, ": ", some(only_b),
                      "; different: ", some(differ));
}

}  // namespace

absl::StatusOr<NodeView> ReadNode(const CairndProcess& node) {
  CAIRN_ASSIGN_OR_RETURN(json all, Answer(node, {{"operation", "describe_all"}}));
  NodeView view;
  if (!all.is_object()) return Error(ErrorCode::kInternal, "describe_all is not an object");
  // Design 0013: the databases placed on other nodes (P11's `member`); their rows are read
  // through a member (P4), and this node's record_count counts its own, empty, table.
  std::set<std::string> elsewhere;
  for (const auto& [db, tables] : all.items()) {
    if (!tables.is_object() || !tables.contains("__placement__")) continue;
    CAIRN_ASSIGN_OR_RETURN(json status, Answer(node, {{"operation", "cluster_status"}}));
    for (const json& d : status.value("databases", json::array())) {
      if (!d.value("member", true)) elsewhere.insert(d.value("database", ""));
    }
    break;
  }
  for (const auto& [db, tables] : all.items()) {
    if (!tables.is_object()) continue;
    for (const auto& [name, d] : tables.items()) {
      if (name == "__placement__") continue;  // P11: where the database lives, not a table
      TableView t;
      t.member = elsewhere.count(db) == 0;
      t.replicate = Get(d, "replicate", true);
      t.created_time = Get<uint64_t>(d, "created_hlc", 0);  // the exact stamp
      t.primary_key = Get<std::string>(d, "hash_attribute", "");
      std::vector<std::string> attrs;
      if (d.contains("attributes") && d["attributes"].is_array()) {
        for (const json& a : d["attributes"]) {
          attrs.push_back(absl::StrCat(Get<std::string>(a, "attribute", "?"), ":",
                                       Get<std::string>(a, "type", "?"), ":",
                                       Get(a, "indexed", false) ? "indexed" : "plain"));
        }
      }
      std::sort(attrs.begin(), attrs.end());
      t.attributes = absl::StrJoin(attrs, ",");
      t.record_count = Get<int64_t>(d, "record_count", -1);
      const json search = {
          {"operation", "search_by_value"}, {"database", db}, {"table", name},
          {"attribute", t.primary_key},     {"value", "*"},   {"get_attributes", {"*"}}};
      HttpAnswer a = node.Post(search, /*auth=*/true, absl::Seconds(30));
      if (!t.member && t.replicate && a.status == 503 && a.error_code() == "NO_MEMBER_REACHABLE") {
        t.unreadable = true;  // CompareNodes says whether that is right
        view[absl::StrCat(db, ".", name)] = std::move(t);
        continue;
      }
      CAIRN_ASSIGN_OR_RETURN(json rows, BodyOf(node, search, std::move(a)));
      if (!rows.is_array()) return Error(ErrorCode::kInternal, "search_by_value is not an array");
      for (const json& r : rows) {
        const std::string key = r.contains(t.primary_key) ? r[t.primary_key].dump() : "?";
        t.records[key] = r.dump();
      }
      view[absl::StrCat(db, ".", name)] = std::move(t);
    }
  }
  return view;
}

absl::Status CompareNodes(const std::map<std::string, NodeView>& views,
                          const CheckOptions& options) {
  std::vector<std::string> problems;
  auto problem = [&](std::string p) {
    if (problems.size() < kMaxProblems) problems.push_back(std::move(p));
  };
  // Node-local tables: exactly where they were written (when the scenario says where).
  for (const auto& [node, expected] : options.local_tables) {
    auto v = views.find(node);
    if (v == views.end()) continue;
    std::set<std::string> local;
    for (const auto& [name, t] : v->second) {
      if (!t.replicate) local.insert(name);
    }
    if (local != expected) {
      problem(absl::StrCat(node, " holds node-local tables [", absl::StrJoin(local, ", "),
                           "], expected [", absl::StrJoin(expected, ", "), "]"));
    }
  }
  // Replicated tables: every node holds each one (unless its own node-local table of that
  // name hides it), identically.
  std::set<std::string> replicated;
  for (const auto& [node, view] : views) {
    for (const auto& [name, t] : view) {
      if (t.replicate && options.ignore.count(name) == 0) replicated.insert(name);
    }
  }
  for (const std::string& name : replicated) {
    // Design 0013 with C11: when every member's table of the name is node-local, no member
    // holds the replicated table and a non-member's read of it finds none (decision 151).
    int members = 0, members_replicated = 0;
    for (const auto& [node, view] : views) {
      auto it = view.find(name);
      if (it == view.end() || !it->second.member) continue;
      ++members;
      if (it->second.replicate) ++members_replicated;
    }
    const bool members_all_local = members > 0 && members_replicated == 0;
    const std::string* first_node = nullptr;
    const TableView* first = nullptr;
    for (const auto& [node, view] : views) {
      auto it = view.find(name);
      if (it == view.end()) {
        problem(absl::StrCat(node, " lacks ", name));
        continue;
      }
      const TableView& t = it->second;
      if (!t.replicate) continue;  // C11: its own table of that name
      if (t.unreadable) {
        if (!members_all_local) {
          problem(absl::StrCat(node, " could not read ", name, " through a member"));
        }
        continue;
      }
      if (t.member && t.record_count != static_cast<int64_t>(t.records.size())) {
        problem(absl::StrCat(node, " ", name, ": record_count ", t.record_count, " but ",
                             t.records.size(), " records found"));
      }
      if (first == nullptr) {
        first_node = &node;
        first = &t;
        continue;
      }
      const std::string pair = absl::StrCat(name, " on ", *first_node, " and ", node);
      if (t.primary_key != first->primary_key || t.attributes != first->attributes) {
        problem(absl::StrCat(pair, ": schema [", first->primary_key, "; ", first->attributes,
                             "] vs [", t.primary_key, "; ", t.attributes, "]"));
      }
      if (t.records != first->records) {
        problem(absl::StrCat(pair, ": records differ: ", RecordDiff(*first_node, *first, node, t)));
      }
    }
  }
  if (problems.empty()) return absl::OkStatus();
  return Error(ErrorCode::kInternal,
               absl::StrCat("the nodes differ:\n  ", absl::StrJoin(problems, "\n  ")));
}

}  // namespace cairn::harness

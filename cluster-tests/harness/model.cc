#include "cluster-tests/harness/model.h"

#include <algorithm>
#include <iostream>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace cairn::harness {
namespace {

using nlohmann::json;

constexpr size_t kMaxViolations = 20;

// A stored row as read_rows shows it.
struct Row {
  uint64_t version = 0;
  std::string origin;
  uint64_t row_generation = 0;
  bool deleted = false;
  json record;
};

// One replicated table on one node.
struct NodeTable {
  uint64_t dropped_time = 0;
  std::map<std::string, Row> rows;                    // key (JSON text) -> row
  std::map<std::string, uint64_t> attribute_markers;  // C15: attribute -> dropped_time
};

// `body` as a node holds it when written at `version` under `markers` (C15): without the
// values of attributes dropped after it.
json Stripped(json body, uint64_t version, const std::map<std::string, uint64_t>& markers) {
  if (!body.is_object()) return body;
  for (const auto& [attribute, stamp] : markers) {
    if (version < stamp && attribute != "id") body.erase(attribute);
  }
  return body;
}

// What the model compares of one node.
struct NodeRows {
  std::map<std::string, NodeTable> replicated;  // "db.table"
  std::set<std::string> local;                  // node-local "db.table" (C11)
  std::map<std::string, uint64_t> absent;       // "db.table" without a live table -> marker
  bool dropping = false;             // a name whose drop failed mid-way waits for a retry (C9)
  json connections = json::array();  // cluster_status
  // Design 0013: databases placed on other nodes (rules 1 and 3 skip them), and the rows this
  // node still holds of their tables, which must be none (rule 10, P3 and P8).
  // db -> its members (JSON), and what a release waits for.
  std::map<std::string, std::string> elsewhere;
  std::map<std::string, size_t> rows_elsewhere;                // "db.table" -> rows held
  std::map<std::string, std::vector<std::string>> members_of;  // db -> its members
};

// `names`: every "db.table" the model knows, whose markers are read where no table is live.
absl::StatusOr<NodeRows> ReadRows(const Cluster& cluster, const std::string& node,
                                  const std::set<std::string>& names) {
  NodeRows out;
  CAIRN_ASSIGN_OR_RETURN(json all, cluster.Ok(node, {{"operation", "describe_all"}}));
  CAIRN_ASSIGN_OR_RETURN(json status, cluster.Ok(node, {{"operation", "cluster_status"}}));
  for (const json& d : status.value("databases", json::array())) {
    if (!d.value("member", true)) {
      const json members = d["placement"]["members"];
      if (members.is_array()) {
        out.members_of[d.value("database", "")] = members.get<std::vector<std::string>>();
      }
      // The members, and while this node lets go of the rows (P8), what it waits for.
      out.elsewhere[d.value("database", "")] = absl::StrCat(
          d["placement"]["members"].dump(),
          d.value("releasing", false) ? absl::StrCat(", releasing: ", d.value("waiting_for", ""))
                                      : "");
    }
  }
  for (const auto& [db, tables] : all.items()) {
    if (!tables.is_object()) continue;
    for (const auto& [name, d] : tables.items()) {
      if (name == "__placement__") continue;  // P11: where the database lives, not a table
      const std::string qualified = absl::StrCat(db, ".", name);
      if (out.elsewhere.count(db) > 0 && d.value("replicate", true)) {
        CAIRN_ASSIGN_OR_RETURN(
            json r,
            cluster.Ok(node, {{"operation", "read_rows"}, {"database", db}, {"table", name}}));
        out.rows_elsewhere[qualified] = r.value("rows", json::array()).size();
        continue;
      }
      if (!d.value("replicate", true)) {
        out.local.insert(qualified);
        continue;
      }
      CAIRN_ASSIGN_OR_RETURN(
          json r,
          cluster.Ok(node, {{"operation", "read_rows"}, {"database", db}, {"table", name}}));
      if (!r.value("live", false)) continue;  // dropped since describe_all: read below as absent
      NodeTable& t = out.replicated[qualified];
      t.dropped_time = r.value("dropped_time", uint64_t{0});
      for (const json& m : d.value("dropped_attributes", json::array())) {
        t.attribute_markers[m["name"].get<std::string>()] = m["dropped_hlc"].get<uint64_t>();
      }
      for (const json& row : r["rows"]) {
        Row& stored = t.rows[row["key"].dump()];
        stored.version = row["version"].get<uint64_t>();
        stored.origin = row["origin"].get<std::string>();
        stored.row_generation = row["row_generation"].get<uint64_t>();
        stored.deleted = row["deleted"].get<bool>();
        stored.record = row["record"];
      }
    }
  }
  for (const std::string& name : names) {
    if (out.replicated.count(name) > 0 || out.local.count(name) > 0) continue;
    if (out.rows_elsewhere.count(name) > 0) continue;  // live, placed away: rule (10)
    const size_t dot = name.find('.');
    CAIRN_ASSIGN_OR_RETURN(json r, cluster.Ok(node, {{"operation", "read_rows"},
                                                     {"database", name.substr(0, dot)},
                                                     {"table", name.substr(dot + 1)}}));
    out.dropping = out.dropping || r.value("dropping", false);   // placed away or not
    if (out.elsewhere.count(name.substr(0, dot)) > 0) continue;  // rules (1) and (3) skip it
    out.absent[name] = r.value("dropped_time", uint64_t{0});
  }
  out.connections = status["connections"];
  return out;
}

// Whether the record found holds every field the write sent, with its value.
bool HoldsBody(const json& found, const json& sent) {
  if (!found.is_object() || !sent.is_object()) return false;
  for (const auto& [field, value] : sent.items()) {
    auto it = found.find(field);
    if (it == found.end() || *it != value) return false;
  }
  return true;
}

std::string Stamp(uint64_t version, const std::string& origin) {
  return absl::StrCat(version, "@", origin);
}

}  // namespace

Model::Ticket Model::Issue() {
  absl::MutexLock lock(&mu_);
  return Ticket{next_ticket_++, absl::Now()};
}

void Model::ClockSet(const std::string& node, absl::Duration offset, bool done) {
  absl::MutexLock lock(&mu_);
  auto& spans = clock_off_[node];
  const bool open = !spans.empty() && spans.back().second == absl::InfiniteFuture();
  if (offset != absl::ZeroDuration()) {
    // Off from before the request on, until set right.
    if (!open && !done) spans.emplace_back(absl::Now(), absl::InfiniteFuture());
  } else if (open && done) {
    // Right once it answered, and settled when an HLC it pushed ahead is passed (the
    // schedule's jumps are under 2 s).
    spans.back().second = absl::Now() + absl::Seconds(2);
  }
}

bool Model::ClockRightLocked(const std::string& node, absl::Time from, absl::Time to) const {
  auto it = clock_off_.find(node);
  if (it == clock_off_.end()) return true;
  for (const auto& [off, right] : it->second) {
    if (off <= to && from < right) return false;
  }
  return true;
}

void Model::AckLocked(TableModel* t, const json& keys, const json& written_as, const Ticket& issued,
                      bool deleted, const std::map<std::string, json>& sent) {
  const absl::Time now = absl::Now();
  for (const json& key : keys) {
    Ack a;
    a.key = key;
    a.version = written_as["version"].get<uint64_t>();
    a.origin = written_as["origin"].get<std::string>();
    a.row_generation = written_as["row_generation"].get<uint64_t>();
    a.deleted = deleted;
    if (auto it = sent.find(key.dump()); it != sent.end()) a.record = it->second;
    a.issued = issued.seq;
    a.issued_at = issued.at;
    a.acked_at = now;
    t->acks.push_back(std::move(a));
  }
}

void Model::Wrote(const std::string& db, const std::string& table, const Ticket& issued,
                  const json& records, const HttpAnswer& answer) {
  absl::MutexLock lock(&mu_);
  TableModel& t = tables_[absl::StrCat(db, ".", table)];
  std::map<std::string, json> sent;  // key -> the last body sent for it in this request
  if (records.is_array()) {
    for (const json& r : records) {
      if (!r.is_object() || !r.contains("id")) continue;
      t.bodies[r["id"].dump()].insert(r.dump());
      sent[r["id"].dump()] = r;
    }
  }
  if (answer.status != 200 || !answer.json.contains("written_as")) {
    if (answer.status == 0 || answer.status >= 500) ++unknown_;
    return;
  }
  const json& as = answer.json["written_as"];
  if (!as.value("replicate", true)) return;  // a node-local table's write (C11)
  for (const char* field : {"upserted_hashes", "inserted_hashes", "update_hashes"}) {
    if (answer.json.contains(field)) AckLocked(&t, answer.json[field], as, issued, false, sent);
  }
}

void Model::Deleted(const std::string& db, const std::string& table, const Ticket& issued,
                    const HttpAnswer& answer) {
  absl::MutexLock lock(&mu_);
  if (answer.status != 200 || !answer.json.contains("written_as")) {
    if (answer.status == 0 || answer.status >= 500) ++unknown_;
    return;
  }
  const json& as = answer.json["written_as"];
  if (!as.value("replicate", true)) return;
  if (!answer.json.contains("deleted_hashes")) return;
  AckLocked(&tables_[absl::StrCat(db, ".", table)], answer.json["deleted_hashes"], as, issued, true,
            {});
}

void Model::Answered(const json& op, const Ticket& issued, const HttpAnswer& answer) {
  const std::string db = op.value("database", ""), table = op.value("table", "");
  if (op.value("operation", "") == "delete") {
    Deleted(db, table, issued, answer);
  } else {
    Wrote(db, table, issued, op.value("records", json::array()), answer);
  }
}

void Model::Disrupted(const std::string& db, const std::string& table) {
  absl::MutexLock lock(&mu_);
  const uint64_t ended = next_ticket_++;
  if (table.empty()) {
    db_disrupted_[db] = ended;
  } else {
    tables_[absl::StrCat(db, ".", table)].disrupted = ended;
  }
}

uint64_t Model::LastDisruptionLocked(const std::string& name, const TableModel& t) const {
  auto d = db_disrupted_.find(name.substr(0, name.find('.')));
  return std::max(t.disrupted, d == db_disrupted_.end() ? uint64_t{0} : d->second);
}

std::string Model::Summary() const {
  absl::MutexLock lock(&mu_);
  size_t acks = 0, checked = 0, right = 0;
  for (const auto& [name, t] : tables_) {
    const uint64_t since = LastDisruptionLocked(name, t);
    for (const Ack& a : t.acks) {
      ++acks;
      checked += a.issued > since ? 1 : 0;
      right += ClockRightLocked(a.origin, a.issued_at, a.acked_at) ? 1 : 0;
    }
  }
  return absl::StrCat(acks, " acknowledged row writes (", checked,
                      " after their table's last drop, ", right, " by nodes with right clocks), ",
                      unknown_, " write requests of unknown outcome (no answer, or a 5xx)");
}

void Model::CheckRealTimeLocked(const std::function<void(std::string)>& violation) const {
  if (clock_bound_ == absl::InfiniteDuration()) return;
  std::vector<const Ack*> right;  // acknowledged by nodes whose clocks were right
  for (const auto& [name, t] : tables_) {
    for (const Ack& a : t.acks) {
      if (ClockRightLocked(a.origin, a.issued_at, a.acked_at)) right.push_back(&a);
    }
  }
  std::vector<const Ack*> by_ack = right, by_issue = right;
  std::sort(by_ack.begin(), by_ack.end(),
            [](const Ack* a, const Ack* b) { return a->acked_at < b->acked_at; });
  std::sort(by_issue.begin(), by_issue.end(),
            [](const Ack* a, const Ack* b) { return a->issued_at < b->issued_at; });
  // Walk the later writes in issue order; `newest` is the greatest version among the writes
  // acknowledged more than the bound before the current one was issued.
  const Ack* newest = nullptr;
  size_t next = 0;
  for (const Ack* later : by_issue) {
    while (next < by_ack.size() && by_ack[next]->acked_at + clock_bound_ < later->issued_at) {
      if (newest == nullptr || by_ack[next]->version > newest->version) newest = by_ack[next];
      ++next;
    }
    if (newest != nullptr && later->version <= newest->version) {
      violation(absl::StrCat(
          "(7) ", later->origin, " stamped a write issued ",
          absl::FormatDuration(later->issued_at - newest->acked_at), " after ", newest->origin,
          "'s was acknowledged with an older version: ", Stamp(later->version, later->origin),
          " <= ", Stamp(newest->version, newest->origin), " (", later->key.dump(), ", ",
          newest->key.dump(), ")"));
      return;  // one is enough: the rest follow from it
    }
  }
}

absl::Status Model::CheckVerify(const Cluster& cluster) const {
  std::vector<std::string> violations;
  uint64_t compared = 0, peers_answered = 0;
  for (const std::string& n : cluster.running()) {
    CAIRN_ASSIGN_OR_RETURN(json all, cluster.Ok(n, {{"operation", "describe_all"}}));
    for (const auto& [db, tables] : all.items()) {
      HttpAnswer a = cluster.Op(n, {{"operation", "verify"}, {"database", db}});
      // A non-member forwards it to a member (design 0013, P4), which verifies with the others.
      if (a.status != 200) {
        return absl::InternalError(absl::StrCat(n, " verify ", db, " -> ", a.status, " ", a.body));
      }
      const json& r = a.json;
      compared += r.value("rows_compared", uint64_t{0});
      for (const json& peer : r.value("peers", json::array())) {
        ++peers_answered;
        if (peer.contains("error")) {
          violations.push_back(
              absl::StrCat("(8) ", n, " could not verify ", db, ": ", peer.dump()));
          continue;
        }
        for (const json& t : peer.value("tables", json::array())) {
          if (t.value("rows_repaired", 0) != 0 || t.value("conflicts", 0) != 0) {
            violations.push_back(absl::StrCat("(8) ", n, " verify of ", db, " with ",
                                              peer.value("node", "?"), " repaired: ", t.dump()));
          }
        }
      }
    }
  }
  std::cerr << "verify: " << peers_answered << " peer comparisons, " << compared
            << " rows compared\n";
  if (cluster.running().size() > 1 && peers_answered == 0) {
    violations.push_back("(8) no node verified with any peer: is verify.v1 advertised?");
  }
  if (violations.size() > kMaxViolations) violations.resize(kMaxViolations);
  if (violations.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrJoin(violations, "\n"));
}

absl::Status Model::Check(const Cluster& cluster) const {
  std::set<std::string> names;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, t] : tables_) names.insert(name);
  }
  std::map<std::string, NodeRows> nodes;
  for (const std::string& n : cluster.running()) {
    CAIRN_ASSIGN_OR_RETURN(nodes[n], ReadRows(cluster, n, names));
  }
  std::vector<std::string> violations;
  auto violation = [&](std::string v) {
    if (violations.size() < kMaxViolations) violations.push_back(std::move(v));
  };

  // (4), (5): the links.
  for (const auto& [n, rows] : nodes) {
    for (const json& c : rows.connections) {
      const std::string peer = c.value("name", "");
      auto p = nodes.find(peer);
      if (p == nodes.end()) continue;  // not running
      if (c.value("lag_entries", json(1)) != 0) {
        violation(absl::StrCat("(4) ", n, " lags behind ", peer, ": ", c.dump()));
      }
      if (c.value("parked_entries", json(1)) != 0) {
        violation(absl::StrCat("(5) ", n, " holds entries of ", peer, " parked: ", c.dump()));
      }
      // A node-local table shadowing a replicated one keeps two schemas apart for good (C11),
      // and so does a drop that failed mid-way until it is retried (C9).
      const bool apart =
          !rows.local.empty() || !p->second.local.empty() || rows.dropping || p->second.dropping;
      if (!apart && !c.value("schema_in_sync", false)) {
        violation(absl::StrCat("(4) ", n, "'s schema is not in sync with ", peer));
      }
    }
  }

  // (10): no node holds a row of a database placed on other nodes (design 0013, P3), once
  // a removed member has let go of them (P8). A release may rightly wait: while a member is
  // not running (it cannot acknowledge), and where rule (4) lets schemas stay apart for a
  // table: every member holds a node-local table of the name (C11), or this node or a
  // member holds a drop left half-done (C9, per node), so no member was seen to hold the rows
  // (P9: nothing is let go unconfirmed). A release lets go of a database's tables together,
  // so a table of the first kind holds back the rows of the database's other tables too.
  auto dropping = [&](const std::string& n) {
    auto it = nodes.find(n);
    return it != nodes.end() && it->second.dropping;
  };
  auto local = [&](const std::string& n, const std::string& name) {
    auto it = nodes.find(n);
    return it != nodes.end() && it->second.local.count(name) > 0;
  };
  // Whether every member of `db` holds a node-local table of a name `rows`' node holds
  // replicated in `db` (C11): then its release waits (P9).
  auto held_back = [&](const NodeRows& rows, const std::string& db) {
    const std::vector<std::string>& members = rows.members_of.at(db);
    for (const auto& entry : rows.rows_elsewhere) {
      const std::string& name = entry.first;
      if (members.empty() || name.compare(0, db.size() + 1, db + ".") != 0) continue;
      if (std::all_of(members.begin(), members.end(),
                      [&](const std::string& m) { return local(m, name); })) {
        return true;
      }
    }
    return false;
  };
  for (const auto& [n, rows] : nodes) {
    for (const auto& [name, held] : rows.rows_elsewhere) {
      if (held == 0) continue;
      const std::string db = name.substr(0, name.find('.'));
      const std::vector<std::string>& members = rows.members_of.at(db);
      auto stopped = [&](const std::string& m) { return nodes.count(m) == 0; };
      if (dropping(n) || std::any_of(members.begin(), members.end(), dropping) ||
          std::any_of(members.begin(), members.end(), stopped) || held_back(rows, db)) {
        continue;
      }
      violation(absl::StrCat("(10) ", n, " holds ", held, " rows of ", name,
                             ", whose database is placed on ",
                             rows.elsewhere.at(name.substr(0, name.find('.')))));
    }
  }

  absl::MutexLock lock(&mu_);
  // (2), (3), (6): the rows each node holds.
  std::map<std::string, std::pair<std::string, const NodeTable*>> first;  // table -> node
  for (const auto& [n, rows] : nodes) {
    for (const auto& [name, t] : rows.replicated) {
      auto m = tables_.find(name);
      for (const auto& [key, row] : t.rows) {
        if (row.row_generation < t.dropped_time) {
          violation(absl::StrCat("(2) ", n, " ", name, " ", key, ": a row of generation ",
                                 row.row_generation, ", retired by the marker ", t.dropped_time));
        }
        if (row.deleted) continue;
        // (9): no value of an attribute dropped after the row was written (C15).
        for (const auto& [attribute, stamp] : t.attribute_markers) {
          if (row.version < stamp && attribute != "id" && row.record.contains(attribute)) {
            violation(absl::StrCat("(9) ", n, " ", name, " ", key, " at ",
                                   Stamp(row.version, row.origin), " holds ", attribute,
                                   ", dropped at ", stamp));
          }
        }
        // (6), of bodies as stripped by the markers (C15).
        bool sent = false;
        if (m != tables_.end() && m->second.bodies.count(key) > 0) {
          for (const std::string& body : m->second.bodies.at(key)) {
            if (Stripped(json::parse(body), row.version, t.attribute_markers) == row.record) {
              sent = true;
              break;
            }
          }
        }
        if (!sent) {
          violation(absl::StrCat("(6) ", n, " ", name, " ", key, ": ", row.record.dump(),
                                 " was never written"));
        }
      }
      auto [it, inserted] = first.emplace(name, std::make_pair(n, &t));
      if (inserted) continue;
      const NodeTable& other = *it->second.second;
      if (other.attribute_markers != t.attribute_markers) {
        violation(absl::StrCat("(9) ", name, ": ", it->second.first, " and ", n,
                               " hold different attribute markers"));
      }
      auto live = [](const NodeTable& table) {
        std::map<std::string, std::string> out;
        for (const auto& [key, row] : table.rows) {
          if (!row.deleted) {
            out[key] = absl::StrCat(Stamp(row.version, row.origin), " ", row.record.dump());
          }
        }
        return out;
      };
      const auto a = live(other), b = live(t);
      if (a != b) {
        std::vector<std::string> diff;
        for (const auto& [key, v] : a) {
          auto f = b.find(key);
          if (f == b.end() || f->second != v) {
            diff.push_back(absl::StrCat(key, " ", it->second.first, ": ", v, " / ", n, ": ",
                                        f == b.end() ? "none" : f->second));
          }
        }
        for (const auto& [key, v] : b) {
          if (a.count(key) == 0) {
            diff.push_back(absl::StrCat(key, " ", it->second.first, ": none / ", n, ": ", v));
          }
        }
        if (diff.size() > 3) diff.resize(3);
        violation(absl::StrCat("(3) ", name, " differs between ", it->second.first, " and ", n,
                               ": ", absl::StrJoin(diff, "; ")));
      }
    }
  }

  // (1): every acknowledged operation after its table's last disruption.
  for (const auto& [name, t] : tables_) {
    const uint64_t since = LastDisruptionLocked(name, t);
    for (const Ack& a : t.acks) {
      if (a.issued <= since) continue;
      const std::string what =
          absl::StrCat(a.deleted ? "delete of " : "write of ", name, " ", a.key.dump(), " at ",
                       Stamp(a.version, a.origin), " (row generation ", a.row_generation, ")");
      for (const auto& [n, rows] : nodes) {
        if (rows.local.count(name) > 0) continue;  // hidden here by a node-local table (C11)
        if (rows.elsewhere.count(name.substr(0, name.find('.'))) > 0) continue;  // rule (10)
        auto tab = rows.replicated.find(name);
        if (tab == rows.replicated.end()) {
          auto gone = rows.absent.find(name);
          if (gone != rows.absent.end() && a.row_generation < gone->second) continue;  // C8
          violation(absl::StrCat("(1) ", n, " lacks ", name, ", which holds the ", what));
          continue;
        }
        if (a.row_generation < tab->second.dropped_time) continue;  // retired by rule (C8)
        auto r = tab->second.rows.find(a.key.dump());
        if (r == tab->second.rows.end()) {
          violation(absl::StrCat("(1) ", n, " lost the ", what));
          continue;
        }
        const Row& row = r->second;
        if (std::tie(row.version, row.origin) < std::tie(a.version, a.origin)) {
          violation(absl::StrCat("(1) ", n, " holds ", Stamp(row.version, row.origin),
                                 ", older than the ", what));
        } else if (std::tie(row.version, row.origin) == std::tie(a.version, a.origin) &&
                   (row.deleted != a.deleted ||
                    (!a.deleted &&
                     !HoldsBody(row.record,
                                Stripped(a.record, a.version, tab->second.attribute_markers))))) {
          violation(absl::StrCat("(1) ", n, " holds ",
                                 row.deleted ? "a tombstone" : row.record.dump(),
                                 " under the stamps of the ", what));
        }
      }
    }
  }
  CheckRealTimeLocked(violation);
  if (violations.empty()) return absl::OkStatus();
  return Error(ErrorCode::kInternal,
               absl::StrCat("the model check failed:\n  ", absl::StrJoin(violations, "\n  ")));
}

}  // namespace cairn::harness

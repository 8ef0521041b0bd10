// cairn: the command-line client of a cairn node's operations API (SPEC §6).
//
//   cairn [--node [https://]HOST:PORT] [--ca-file F] [--user U] [--password-file F] COMMAND ...
//     op '<json>' | op @file.json | op -     run any operation, print the answer
//     status                                  this node and its peer links
//     describe [DB[.TABLE]]                   databases, tables, attributes, record counts
//     get DB.TABLE ID [ID ...]                records by primary key
//     put DB.TABLE '<json record or array>'   upsert records
//     search DB.TABLE ATTRIBUTE VALUE         records whose attribute matches (VALUE * = all)
//     search DB.TABLE CONDITION [CONDITION ...] [--or] [--sort ATTR[:desc] ...] [--limit N]
//            [--offset N] [--reverse] [--fields A,B]
//                                             records that meet the conditions
//                                             (search_by_conditions): price>10 'name^=Ab'
//                                             qty=5..10; see `cairn search --help`
//     backup [NAME]                           a backup of the node (create_backup)
//     verify [DB[.TABLE]] [--node PEER]        anti-entropy with the peers now (R18), a line
//                                             per table as it goes
//     user list | add NAME --role R [--inactive] | alter NAME [--role R] [--active B]
//          [--password] | drop NAME          users (SPEC §7); a new password is read from
//                                             stdin
//     role list | add NAME '<permission json>' | alter ID '<permission json>' | drop ID
//     login                                   tokens for these credentials, as
//                                             `export CAIRN_TOKEN=...` lines (eval them)
//     watch DB.TABLE [ID] [--since C] [--no-current]
//                                             follow the changes (SPEC §8): a JSON line per
//                                             event; see `cairn watch --help`
//
// The node defaults to $CAIRN_NODE or 127.0.0.1:9925; `https://HOST:PORT` speaks HTTPS and
// verifies the node's certificate against --ca-file ($CAIRN_CA_FILE; else the system's CAs)
// and the host name. Credentials come from the flags or
// $CAIRN_ADMIN_USER / $CAIRN_ADMIN_PASSWORD, or a token ($CAIRN_TOKEN, --token) instead. Exit
// status 0 on success; 1 with the server's message when the operation fails; 2 for a usage error; 3
// when the node cannot be reached.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "node/cli_client.h"
#include "node/cli_watch.h"
#include "node/config.h"

namespace {

using cairn::cli::Connection;
using cairn::cli::Usage;
using nlohmann::json;

// Sends one operation; prints the answer (pretty JSON) or the error. Returns the exit status.
int Run(const Connection& c, const json& operation, bool quiet = false, json* answer = nullptr) {
  std::unique_ptr<httplib::ClientImpl> client = cairn::cli::MakeClient(c);
  if (client == nullptr) return 2;
  client->set_read_timeout(300, 0);
  auto res = client->Post("/", operation.dump(-1, ' ', false, json::error_handler_t::replace),
                          "application/json");
  if (!res) {
    std::fprintf(stderr, "cairn: cannot reach %s: %s\n", c.node.c_str(),
                 httplib::to_string(res.error()).c_str());
    return 3;
  }
  json body = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (res->status != 200) {
    if (body.is_object() && body.contains("error")) {
      std::fprintf(stderr, "cairn: %s (%s, HTTP %d)\n", body["error"].dump().c_str(),
                   body.value("code", "?").c_str(), res->status);
    } else {
      std::fprintf(stderr, "cairn: HTTP %d: %s\n", res->status, res->body.c_str());
    }
    return 1;
  }
  if (body.is_discarded()) {
    std::fprintf(stderr, "cairn: the answer is not complete JSON (%zu bytes)\n", res->body.size());
    return 1;
  }
  if (!quiet) {
    std::printf("%s\n", body.dump(2, ' ', false, json::error_handler_t::replace).c_str());
  }
  if (answer != nullptr) *answer = std::move(body);
  return 0;
}

// "db.table" -> {"database": db, "table": table}.
bool SplitTable(const std::string& name, json* op) {
  std::vector<std::string> parts = absl::StrSplit(name, absl::MaxSplits('.', 1));
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) return false;
  (*op)["database"] = parts[0];
  (*op)["table"] = parts[1];
  return true;
}

// A primary key from the command line: an integer when it reads as one, else a string.
json KeyArgument(const std::string& arg) {
  int64_t n = 0;
  if (absl::SimpleAtoi(arg, &n) && absl::StrCat(n) == arg) return n;
  return arg;
}

// A condition's value: JSON when it parses as JSON (10, true, null, "quoted"), else the text.
json ValueArgument(const std::string& arg) {
  json v = json::parse(arg, nullptr, /*allow_exceptions=*/false);
  return v.is_discarded() || v.is_structured() ? json(arg) : v;
}

// One condition of `cairn search`: ATTRIBUTE OPERATOR VALUE, the operators those of CSS
// attribute selectors and comparisons; `=LOW..HIGH` is between. False if it has no operator.
bool ParseCondition(const std::string& arg, json* out) {
  const size_t at = arg.find_first_of("=<>!^$*");
  if (at == 0 || at == std::string::npos) return false;
  struct Op {
    const char* text;
    const char* type;
  };
  static constexpr Op kOps[] = {
      {"!=", "not_equal"},   {"^=", "starts_with"},        {"$=", "ends_with"},
      {"*=", "contains"},    {">=", "greater_than_equal"}, {"<=", "less_than_equal"},
      {">", "greater_than"}, {"<", "less_than"},           {"=", "equals"}};
  for (const Op& op : kOps) {
    if (arg.compare(at, std::strlen(op.text), op.text) != 0) continue;
    const std::string value = arg.substr(at + std::strlen(op.text));
    json condition = {{"search_attribute", arg.substr(0, at)}, {"search_type", op.type}};
    const size_t dots = value.find("..");
    json low, high;
    if (std::string(op.type) == "equals" && dots != std::string::npos &&
        (low = ValueArgument(value.substr(0, dots))).is_number() &&
        (high = ValueArgument(value.substr(dots + 2))).is_number()) {
      condition["search_type"] = "between";
      condition["search_value"] = {low, high};
    } else if (std::string(op.type) == "starts_with" || std::string(op.type) == "ends_with" ||
               std::string(op.type) == "contains") {
      condition["search_value"] = value;  // text comparisons: the text as typed
    } else {
      condition["search_value"] = ValueArgument(value);
    }
    *out = std::move(condition);
    return true;
  }
  return false;
}

std::string ReadAll(std::istream& in) {
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void PrintStatus(const json& s) {
  std::printf("node %s\n", s.value("node_name", "?").c_str());
  const json& connections = s.contains("connections") ? s["connections"] : json::array();
  if (connections.empty()) std::printf("  no peers\n");
  for (const json& c : connections) {
    std::printf("  %-16s %-22s %s", c.value("name", "?").c_str(), c.value("url", "?").c_str(),
                c.value("connected", false) ? "connected" : "disconnected");
    if (c.value("connected", false)) {
      std::printf("  %s  lag %s entries / %s ms",
                  c.value("schema_in_sync", false) ? "schema in sync" : "schema differs",
                  c.value("lag_entries", json(0)).dump().c_str(),
                  c.value("lag_ms", json(0)).dump().c_str());
    }
    if (c.contains("full_copy") && c["full_copy"].value("active", false)) {
      std::printf("  full copy %s%%", c["full_copy"].value("percent", json(0)).dump().c_str());
    }
    const std::string error = c.value("last_error", "");
    if (!error.empty()) std::printf("  (%s)", error.c_str());
    std::printf("\n");
  }
}

// One line per table of a verify answer.
bool PrintVerify(const std::string& db, const json& answer) {
  bool in_sync = true;
  for (const json& peer : answer.value("peers", json::array())) {
    const std::string node = peer.value("node", "?");
    for (const json& t : peer.value("tables", json::array())) {
      const std::string name = db + "." + t.value("table", "?");
      if (t.contains("skipped")) {
        std::printf("%-32s %-12s skipped: %s\n", name.c_str(), node.c_str(),
                    t.value("skipped", "").c_str());
        continue;
      }
      const bool ok = t.value("in_sync", false);
      in_sync = in_sync && ok;
      std::printf("%-32s %-12s %s rows compared, %s repaired (%s here, %s there)%s, %s ms\n",
                  name.c_str(), node.c_str(), t.value("rows_compared", json(0)).dump().c_str(),
                  t.value("rows_repaired", json(0)).dump().c_str(),
                  t.value("repaired_here", json(0)).dump().c_str(),
                  t.value("repaired_there", json(0)).dump().c_str(),
                  ok ? ""
                     : absl::StrCat(", ", t.value("unsettled", json(0)).dump(), " unsettled, ",
                                    t.value("conflicts", json(0)).dump(), " conflicts")
                           .c_str(),
                  t.value("duration_ms", json(0)).dump().c_str());
    }
    if (peer.contains("error")) {
      in_sync = false;
      std::printf("%-32s %-12s error: %s\n", db.c_str(), node.c_str(),
                  peer.value("error", "").c_str());
    }
    std::fflush(stdout);
  }
  return in_sync;
}

// What `cairn user`, `cairn role` and `cairn login` were given.
struct UserArgs {
  std::string name, role, active;
  bool active_flag = true;
  bool new_password = false;
  std::string role_name, permission;
};

// '<json>', @FILE or - (stdin): the permission JSON of `cairn role`.
bool ReadJsonArgument(std::string text, json* out) {
  if (text == "-") {
    text = ReadAll(std::cin);
  } else if (!text.empty() && text[0] == '@') {
    std::ifstream in(text.substr(1));
    if (!in) return false;
    text = ReadAll(in);
  }
  *out = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return !out->is_discarded();
}

// cairn user ..., cairn role ..., cairn login.
int RunUsers(const Connection& c, const std::string& command, const UserArgs& a) {
  if (command == "list") return Run(c, {{"operation", "list_users"}});
  if (command == "drop") return Run(c, {{"operation", "drop_user"}, {"username", a.name}});
  if (command == "add" || command == "alter") {
    json op = {{"operation", command == "add" ? "add_user" : "alter_user"}, {"username", a.name}};
    if (!a.role.empty()) op["role"] = a.role;
    if (command == "add") op["active"] = a.active_flag;
    if (!a.active.empty()) {
      if (a.active != "true" && a.active != "false") return Usage("--active takes true or false");
      op["active"] = a.active == "true";
    }
    if (command == "add" || a.new_password) {
      // From stdin (a pipe, or typed): never a command-line argument others could read.
      std::string password;
      std::getline(std::cin, password);
      if (password.empty()) return Usage("no password on stdin");
      op["password"] = password;
    }
    return Run(c, op);
  }
  if (command == "role list") return Run(c, {{"operation", "list_roles"}});
  if (command == "role drop") return Run(c, {{"operation", "drop_role"}, {"id", a.role_name}});
  if (command == "role add" || command == "role alter") {
    json permission;
    if (!ReadJsonArgument(a.permission, &permission)) {
      return Usage("the permission is not valid JSON (or its file cannot be read)");
    }
    json op = {{"permission", std::move(permission)}};
    if (command == "role add") {
      op["operation"] = "add_role";
      op["role"] = a.role_name;
    } else {
      op["operation"] = "alter_role";
      op["id"] = a.role_name;
    }
    return Run(c, op);
  }
  // login
  json answer;
  const int rc = Run(c, {{"operation", "create_authentication_tokens"}}, /*quiet=*/true, &answer);
  if (rc != 0) return rc;
  std::printf("export CAIRN_TOKEN='%s'\nexport CAIRN_REFRESH_TOKEN='%s'\n",
              answer.value("operation_token", "").c_str(),
              answer.value("refresh_token", "").c_str());
  return 0;
}

}  // namespace

int Main(int argc, char** argv) {
  Connection c;
  const char* env_node = std::getenv("CAIRN_NODE");
  c.node = env_node != nullptr ? env_node : "127.0.0.1:9925";
  const char* env_user = std::getenv("CAIRN_ADMIN_USER");
  c.user = env_user != nullptr ? env_user : "admin";
  const char* env_password = std::getenv("CAIRN_ADMIN_PASSWORD");
  if (env_password != nullptr) c.password = env_password;
  const char* env_ca = std::getenv("CAIRN_CA_FILE");
  if (env_ca != nullptr) c.ca_file = env_ca;
  const char* env_token = std::getenv("CAIRN_TOKEN");
  if (env_token != nullptr) c.token = env_token;
  std::string password_file;

  CLI::App app("cairn: run operations on a cairn node", "cairn");
  app.require_subcommand(1);
  app.add_option("--node", c.node, "[https://]HOST:PORT of the node's operations API ($CAIRN_NODE)")
      ->capture_default_str();
  app.add_option("--ca-file", c.ca_file, "CA certificate that signs the node's ($CAIRN_CA_FILE)");
  app.add_option("--user", c.user, "admin user ($CAIRN_ADMIN_USER)")->capture_default_str();
  app.add_option("--password-file", password_file,
                 "file with the password ($CAIRN_ADMIN_PASSWORD)");
  app.add_option("--token", c.token,
                 "an operation token instead of user and password "
                 "($CAIRN_TOKEN; `cairn login` makes one)");

  std::string op_text;
  auto* op = app.add_subcommand("op", "run an operation: '<json>', @FILE, or - for stdin");
  op->add_option("operation", op_text, "the operation JSON")->default_val("-");
  auto* status = app.add_subcommand("status", "show this node and its peer links");
  std::string describe_what;
  auto* describe = app.add_subcommand("describe", "describe everything, a database or a table");
  describe->add_option("what", describe_what, "DB or DB.TABLE");
  std::string table;
  std::vector<std::string> ids;
  auto* get = app.add_subcommand("get", "records by primary key");
  get->add_option("table", table, "DB.TABLE")->required();
  get->add_option("ids", ids, "primary keys")->required();
  std::string record_text;
  auto* put = app.add_subcommand("put", "upsert a record (or an array of records)");
  put->add_option("table", table, "DB.TABLE")->required();
  put->add_option("record", record_text, "the record JSON, or - for stdin")->required();
  std::vector<std::string> search_args, sort_keys;
  std::string fields;
  bool search_or = false, search_reverse = false;
  uint64_t search_limit = 0, search_offset = 0;
  auto* search = app.add_subcommand(
      "search",
      "records that meet conditions, or whose attribute matches a value.\n"
      "  cairn search DB.TABLE 'price>10' 'name^=Ab' 'qty=5..10'\n"
      "    each condition ATTRIBUTE OP VALUE; OP one of = != > >= < <= ^= (starts with)\n"
      "    $= (ends with) *= (contains); =LOW..HIGH is between (both ends included); a value\n"
      "    is JSON when it reads as JSON (10, true, null, \"10\"), else text. All conditions\n"
      "    hold, or any with --or.\n"
      "  cairn search DB.TABLE ATTRIBUTE VALUE\n"
      "    search_by_value: * matches all; a trailing *, a leading * or both match a prefix,\n"
      "    suffix or substring");
  search->add_option("table", table, "DB.TABLE")->required();
  search->add_option("conditions", search_args, "conditions, or ATTRIBUTE VALUE")->required();
  search->add_flag("--or", search_or, "any condition, not all");
  search->add_option("--sort", sort_keys, "sort by ATTR (ATTR:desc descending); repeat for ties");
  search->add_option("--limit", search_limit, "at most this many records");
  search->add_option("--offset", search_offset, "skip this many first");
  search->add_flag("--reverse", search_reverse, "the opposite order");
  search->add_option("--fields", fields, "the attributes to show, A,B,C (default: all)");

  std::string backup_name;
  auto* backup = app.add_subcommand("backup", "take a backup of the node (create_backup)");
  backup->add_option("name", backup_name, "its name (default: the UTC time)");

  std::string verify_what, verify_peer;
  auto* verify = app.add_subcommand("verify", "compare and repair data with the peers now (R18)");
  verify->add_option("what", verify_what, "DB or DB.TABLE (default: every database)");
  verify->add_option("--node,--peer", verify_peer, "only this peer (default: every peer)");

  // Users, roles, tokens (SPEC §7).
  std::string user_name, user_role, user_active;
  bool user_inactive = false, user_password = false;
  auto* user = app.add_subcommand("user", "users: list, add, alter, drop");
  user->require_subcommand(1);
  auto* user_list = user->add_subcommand("list", "every user, with its role");
  auto* user_add = user->add_subcommand("add", "a user; its password is read from stdin");
  user_add->add_option("name", user_name, "username")->required();
  user_add->add_option("--role", user_role, "the role's name")->required();
  user_add->add_flag("--inactive", user_inactive, "made inactive (it cannot log in)");
  auto* user_alter = user->add_subcommand("alter", "change a user's role, activity or password");
  user_alter->add_option("name", user_name, "username")->required();
  user_alter->add_option("--role", user_role, "the new role's name");
  user_alter->add_option("--active", user_active, "true or false");
  user_alter->add_flag("--password", user_password, "a new password, read from stdin");
  auto* user_drop = user->add_subcommand("drop", "drop a user");
  user_drop->add_option("name", user_name, "username")->required();
  std::string role_name, role_permission;
  auto* role = app.add_subcommand("role", "roles: list, add, alter, drop");
  role->require_subcommand(1);
  auto* role_list = role->add_subcommand("list", "every role, with its permissions");
  auto* role_add = role->add_subcommand("add", "a role with Harper's permission JSON");
  role_add->add_option("name", role_name, "role name (also its id)")->required();
  role_add->add_option("permission", role_permission, "'<json>', @FILE or - for stdin")->required();
  auto* role_alter = role->add_subcommand("alter", "replace a role's permissions");
  role_alter->add_option("id", role_name, "role id")->required();
  role_alter->add_option("permission", role_permission, "'<json>', @FILE or - for stdin")
      ->required();
  auto* role_drop = role->add_subcommand("drop", "drop a role (none of its users active)");
  role_drop->add_option("id", role_name, "role id")->required();
  auto* login = app.add_subcommand(
      "login", "tokens for these credentials: prints `export CAIRN_TOKEN=...` lines to eval");
  cairn::cli::WatchArgs watch_args;
  std::string watch_table;
  bool watch_no_current = false;
  auto* watch = app.add_subcommand(
      "watch",
      "follow a table's (or a record's) changes: the current rows, `caught_up`, then each\n"
      "  change, one JSON line per event ({\"event\": \"put\", \"id\", \"record\", \"cursor\", "
      "...}).\n"
      "  Resume with --since CURSOR (the last cursor printed; the current rows have none) on the\n"
      "  same node. Exits 0 after\n"
      "  `shutdown` or `dropped`, 1 after `overflow`, `resync_required` or `error`");
  watch->add_option("table", watch_table, "DB.TABLE")->required();
  watch->add_option("id", watch_args.id, "one record's primary key");
  watch->add_option("--since", watch_args.since, "resume after this cursor (no current rows)");
  watch->add_flag("--no-current", watch_no_current, "changes only, not the current rows");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // usage errors are 2, whatever CLI11 numbers them
  }

  if (!password_file.empty()) {
    std::ifstream in(password_file);
    if (!in) return Usage("cannot read " + password_file);
    c.password = std::string(absl::StripTrailingAsciiWhitespace(ReadAll(in)));
  }

  if (user->parsed() || role->parsed() || login->parsed()) {
    return RunUsers(c,
                    user_list->parsed()    ? "list"
                    : user_add->parsed()   ? "add"
                    : user_alter->parsed() ? "alter"
                    : user_drop->parsed()  ? "drop"
                    : role_list->parsed()  ? "role list"
                    : role_add->parsed()   ? "role add"
                    : role_alter->parsed() ? "role alter"
                    : role_drop->parsed()  ? "role drop"
                                           : "login",
                    UserArgs{user_name, user_role, user_active, !user_inactive, user_password,
                             role_name, role_permission});
  }
  if (watch->parsed()) {
    json t;
    if (!SplitTable(watch_table, &t)) return Usage("expected DB.TABLE, got '" + watch_table + "'");
    watch_args.database = t["database"];
    watch_args.table = t["table"];
    watch_args.current = !watch_no_current;
    return cairn::cli::Watch(c, watch_args);
  }
  if (op->parsed()) {
    std::string text = op_text;
    if (text == "-") {
      text = ReadAll(std::cin);
    } else if (!text.empty() && text[0] == '@') {
      std::ifstream in(text.substr(1));
      if (!in) return Usage("cannot read " + text.substr(1));
      text = ReadAll(in);
    }
    json operation = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (operation.is_discarded()) return Usage("the operation is not valid JSON");
    return Run(c, operation);
  }
  if (status->parsed()) {
    json answer;
    int rc = Run(c, {{"operation", "cluster_status"}}, /*quiet=*/true, &answer);
    if (rc == 0) PrintStatus(answer);
    return rc;
  }
  if (describe->parsed()) {
    json operation = {{"operation", "describe_all"}};
    if (!describe_what.empty()) {
      if (describe_what.find('.') != std::string::npos) {
        operation = {{"operation", "describe_table"}};
        if (!SplitTable(describe_what, &operation)) return Usage("expected DB or DB.TABLE");
      } else {
        operation = {{"operation", "describe_database"}, {"database", describe_what}};
      }
    }
    return Run(c, operation);
  }
  if (verify->parsed()) {
    // A verify per table, so each prints its line as soon as it is done.
    std::vector<std::pair<std::string, std::string>> tables;  // (db, table)
    if (verify_what.find('.') != std::string::npos) {
      json t;
      if (!SplitTable(verify_what, &t)) return Usage("expected DB or DB.TABLE");
      tables.emplace_back(t["database"], t["table"]);
    } else {
      json all;
      json list = verify_what.empty()
                      ? json{{"operation", "describe_all"}}
                      : json{{"operation", "describe_database"}, {"database", verify_what}};
      if (int rc = Run(c, list, /*quiet=*/true, &all); rc != 0) return rc;
      auto add = [&](const std::string& db, const json& ts) {
        for (const auto& [t, def] : ts.items()) {
          if (t != "__placement__") tables.emplace_back(db, t);  // P11's entry is no table
        }
      };
      if (verify_what.empty()) {
        for (const auto& [db, ts] : all.items()) add(db, ts);
      } else {
        add(verify_what, all);
      }
    }
    bool in_sync = true;
    for (const auto& [db, t] : tables) {
      json operation = {{"operation", "verify"}, {"database", db}, {"table", t}};
      if (!verify_peer.empty()) operation["node"] = verify_peer;
      json answer;
      if (int rc = Run(c, operation, /*quiet=*/true, &answer); rc != 0) return rc;
      in_sync = PrintVerify(db, answer) && in_sync;
    }
    if (tables.empty()) std::printf("no tables to verify\n");
    return in_sync ? 0 : 1;
  }
  if (backup->parsed()) {
    json operation = {{"operation", "create_backup"}};
    if (!backup_name.empty()) operation["name"] = backup_name;
    return Run(c, operation);
  }
  json operation = json::object();
  if (!SplitTable(table, &operation)) return Usage("expected DB.TABLE, got '" + table + "'");
  if (get->parsed()) {
    operation["operation"] = "search_by_id";
    operation["ids"] = json::array();
    for (const std::string& id : ids) operation["ids"].push_back(KeyArgument(id));
    operation["get_attributes"] = {"*"};
    return Run(c, operation);
  }
  if (put->parsed()) {
    if (record_text == "-") record_text = ReadAll(std::cin);
    json records = json::parse(record_text, nullptr, /*allow_exceptions=*/false);
    if (records.is_discarded()) return Usage("the record is not valid JSON");
    if (!records.is_array()) records = json::array({records});
    operation["operation"] = "upsert";
    operation["records"] = std::move(records);
    return Run(c, operation);
  }
  if (search->parsed()) {
    json unused;
    if (search_args.size() == 2 && !ParseCondition(search_args[0], &unused)) {
      operation["operation"] = "search_by_value";  // ATTRIBUTE VALUE
      operation["attribute"] = search_args[0];
      operation["value"] = search_args[1] == "*" ? json("*") : KeyArgument(search_args[1]);
    } else {
      operation["operation"] = "search_by_conditions";
      operation["conditions"] = json::array();
      for (const std::string& arg : search_args) {
        json condition;
        if (!ParseCondition(arg, &condition)) {
          return Usage("'" + arg + "' is not a condition (ATTRIBUTE OP VALUE, e.g. price>10)");
        }
        operation["conditions"].push_back(std::move(condition));
      }
      if (search_or) operation["operator"] = "or";
      json* level = &operation;
      for (const std::string& key : sort_keys) {
        std::vector<std::string> parts = absl::StrSplit(key, ':');
        if (parts.size() > 2 || parts[0].empty() || (parts.size() == 2 && parts[1] != "desc")) {
          return Usage("--sort takes ATTR or ATTR:desc, got '" + key + "'");
        }
        json sort = {{"attribute", parts[0]}, {"descending", parts.size() == 2}};
        const char* field = level == &operation ? "sort" : "next";
        (*level)[field] = std::move(sort);
        level = &(*level)[field];
      }
    }
    if (search_limit > 0) operation["limit"] = search_limit;
    if (search_offset > 0) operation["offset"] = search_offset;
    if (search_reverse) operation["reverse"] = true;
    operation["get_attributes"] = {"*"};
    if (!fields.empty()) {
      operation["get_attributes"] = json::array();
      for (absl::string_view f : absl::StrSplit(fields, ',')) {
        operation["get_attributes"].push_back(std::string(f));
      }
    }
    return Run(c, operation);
  }
  return Usage("no command");
}

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {  // an answer of an unexpected shape, say
    std::fprintf(stderr, "cairn: %s\n", e.what());
    return 1;
  }
}

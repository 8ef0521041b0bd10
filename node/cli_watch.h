// `cairn watch`: follows a table's or a record's changes (SPEC §8) over GET /subscribe/...,
// printing each event as one JSON line: the event's data with its name as "event".
#pragma once

#include <string>

#include "node/cli_client.h"

namespace cairn::cli {

struct WatchArgs {
  std::string database, table;
  std::string id;     // empty: the whole table
  std::string since;  // a cursor to resume after; empty: none
  bool current = true;
};

// Runs until the stream ends. Exit status: 0 when it ended with `shutdown` or `dropped`; 1 when
// it ended with `overflow`, `resync_required` or `error` (the line says why, and the cursor to
// resume from when there is one) or was refused; 3 when the node cannot be reached or the
// stream was cut.
int Watch(const Connection& c, const WatchArgs& args);

}  // namespace cairn::cli

// The one place where rocksdb::Status becomes absl::Status (STYLE 2.2).
#pragma once

#include "absl/status/status.h"
#include "rocksdb/status.h"

namespace cairn::storage {

// Maps a RocksDB status to a canonical absl code; the original text goes into the message.
absl::Status FromRocks(const rocksdb::Status& s);

}  // namespace cairn::storage

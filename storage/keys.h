// Key layouts of every column family (SPEC §2a). Thread-compatible free functions.
//
//   catalog    D/<db>                              DatabaseRow
//              E/<db>                              DatabaseMarker (design 0013, P1)
//              T/<db>/<table>/<generation BE64>    TableRow (primary row, maybe tombstoned)
//              A/<generation BE64><attribute>      AttributeRow
//              M/<db>/<table>                      DropMarker
//              N/<db>/<table>/<attribute>          AttributeMarker (SPEC C15)
//              S/u/<username>                      UserRow (SPEC U6)
//              S/r/<role id>                       RoleRow
//              S/mu/<username>, S/mr/<role id>     PrincipalMarker
//              S/k                                 SigningKey (SPEC U5)
//   records    <generation BE64><primary key>      StoredRecord
//   indexes    <generation BE64><attribute id BE32><value><primary key>   (empty value)
//   changelog  <db>\0<seq BE64>                    ChangeEntry
//   meta       meta/next_generation_id             BE64
//              meta/incarnation                    BE64 (last process incarnation, informational)
//              count/<generation BE64>             int64 little-endian, merged by addition
//              strip/<generation BE64><attribute>  BE64 drop stamp: a drop_attribute strip to
//                                                  finish (empty: written before stamps)
//              meta/log_id                         BE64 random: identity of this node's log
//              logtrim/<db>                        BE64: log entries up to here were trimmed
//              cursor/<peer>\0<db>                 ReplicaCursor (SPEC R6)
//              rowgen/<generation BE64><row generation BE64>  empty: the generation holds
//                                                  peer rows of that row generation (D7)
//              purge/<generation BE64>             BE64 marker: a C8 purge to finish
//              refetch/<db>/<table>\0<peer>        BE64 dropped_time: ask that peer again
//                                                  for the table's rows (SPEC R14)
//
// Names never contain '/' or '\0' (SPEC C13), so the separators are unambiguous. Every record
// and index key of a generation starts with its big-endian id, so a generation is one
// contiguous range in each family: create is a catalog batch and drop one range delete.
#pragma once

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace cairn::storage {

void PutBigEndian64(uint64_t v, std::string* out);
void PutBigEndian32(uint32_t v, std::string* out);
uint64_t GetBigEndian64(absl::string_view in);  // requires in.size() >= 8
uint32_t GetBigEndian32(absl::string_view in);  // requires in.size() >= 4

// The smallest key greater than every key starting with `prefix` (its prefix successor): drop
// trailing 0xFF bytes, then increment the last byte. Empty if `prefix` is all 0xFF (no bound).
std::string PrefixSuccessor(absl::string_view prefix);

// --- catalog family
std::string DatabaseKey(absl::string_view db);
inline constexpr absl::string_view kDatabasePrefix = "D/";
std::string TableKey(absl::string_view db, absl::string_view table, uint64_t generation);
inline constexpr absl::string_view kTablePrefix = "T/";
std::string AttributeKey(uint64_t generation, absl::string_view attribute);
std::string AttributePrefix(uint64_t generation);
std::string DatabaseMarkerKey(absl::string_view db);
inline constexpr absl::string_view kDatabaseMarkerPrefix = "E/";
std::string MarkerKey(absl::string_view db, absl::string_view table);
inline constexpr absl::string_view kMarkerPrefix = "M/";
std::string AttributeMarkerKey(absl::string_view db, absl::string_view table,
                               absl::string_view attribute);
inline constexpr absl::string_view kAttributeMarkerPrefix = "N/";
std::string PeerKey(absl::string_view name);
inline constexpr absl::string_view kPeerPrefix = "P/";
// Users and roles (SPEC §7). A username may hold '/' (nothing follows it in its key).
inline constexpr absl::string_view kUserPrefix = "S/u/";
inline constexpr absl::string_view kRolePrefix = "S/r/";
inline constexpr absl::string_view kUserMarkerPrefix = "S/mu/";
inline constexpr absl::string_view kRoleMarkerPrefix = "S/mr/";
inline constexpr absl::string_view kSigningKeyKey = "S/k";
std::string UserKey(absl::string_view username);
std::string RoleKey(absl::string_view id);
std::string UserMarkerKey(absl::string_view username);
std::string RoleMarkerKey(absl::string_view id);

// --- records and indexes families
std::string GenerationPrefix(uint64_t generation);
std::string RecordKey(uint64_t generation, absl::string_view encoded_pk);
// "<generation><attribute id>": every index entry of one attribute.
std::string IndexAttributePrefix(uint64_t generation, uint32_t attribute_id);

// --- changelog family
std::string LogKey(absl::string_view db, uint64_t seq);
std::string LogPrefix(absl::string_view db);  // "<db>\0"

// --- meta family
// Before generation high-water keys: the next generation id (still read on open).
inline constexpr absl::string_view kNextGenerationKey = "meta/next_generation_id";
// "genhw/<generation BE64>": a generation id handed out. Each create batch writes its own and
// deletes every lower one, so whatever order concurrent creates commit in, the highest id
// ever handed out stays; opening resumes above it (ids are never reused).
std::string GenerationHighWaterKey(uint64_t generation);
inline constexpr absl::string_view kGenerationHighWaterPrefix = "genhw/";
inline constexpr absl::string_view kIncarnationKey = "meta/incarnation";
std::string CountKey(uint64_t generation);
inline constexpr absl::string_view kCountPrefix = "count/";
// "strip/<generation BE64><attribute>": values of a dropped attribute still to be stripped.
std::string StripKey(uint64_t generation, absl::string_view attribute);
inline constexpr absl::string_view kStripPrefix = "strip/";
inline constexpr absl::string_view kLogIdKey = "meta/log_id";
std::string LogTrimKey(absl::string_view db);
inline constexpr absl::string_view kLogTrimPrefix = "logtrim/";
// "loghw/<db>" -> BE64: no sequence number of <db>'s log above it was ever handed out, and
// none at or below it is handed out again (SPEC R15). Written synced, before use.
std::string LogHighWaterKey(absl::string_view db);
inline constexpr absl::string_view kLogHighWaterPrefix = "loghw/";
// "loghole/<db>\0<first BE64>" -> BE64 last: numbers a restart skipped (up to the
// high-water), never used; retention by count does not count them.
std::string LogHoleKey(absl::string_view db, uint64_t first);
inline constexpr absl::string_view kLogHolePrefix = "loghole/";
std::string CursorKey(absl::string_view peer, absl::string_view db);
std::string CursorPrefix(absl::string_view peer);  // "cursor/<peer>\0"
inline constexpr absl::string_view kCursorPrefix = "cursor/";
std::string RowGenKey(uint64_t generation, uint64_t row_generation);
std::string RowGenPrefix(uint64_t generation);
std::string PurgeKey(uint64_t generation);
// "shadow/<generation BE64><encoded pk>" -> ShadowedRows: rows a peer row of an older row
// generation replaced (SPEC C8, D7); removed with the generation.
std::string ShadowKey(uint64_t generation, absl::string_view encoded_pk);
inline constexpr absl::string_view kPurgePrefix = "purge/";
std::string RefetchKey(absl::string_view db, absl::string_view table, absl::string_view peer);
// "echo/<db>\0<table>": this node dropped its copy of the replicated table locally (decision
// 86); its log streams from peers carry its own writes of the table too. Removed by a timed
// drop of the name.
std::string EchoKey(absl::string_view db, absl::string_view table);
inline constexpr absl::string_view kEchoPrefix = "echo/";
inline constexpr absl::string_view kRefetchPrefix = "refetch/";
// "parked/<peer>\0<db>\0<table>\0<id>": a peer's entry waiting for its table (R17); the
// parker's id is the encoded pk, \0, BE64 version and origin (one key per version).
std::string ParkedKey(absl::string_view peer, absl::string_view db, absl::string_view table,
                      absl::string_view encoded_pk);
std::string ParkedPrefix(absl::string_view peer);  // "parked/<peer>\0"
inline constexpr absl::string_view kParkedPrefix = "parked/";
// "release/<db>" -> BE64 placement stamp: this node was removed from <db>'s members by the
// placement of that stamp and still holds rows of it (design 0013, P8). Written in the
// placement's batch; removed by the release's batch, or by a placement that makes the node a
// member again.
std::string ReleaseKey(absl::string_view db);
inline constexpr absl::string_view kReleasePrefix = "release/";

}  // namespace cairn::storage

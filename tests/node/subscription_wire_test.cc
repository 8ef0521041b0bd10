// The HTTP form of a change subscription (SPEC W1): targets read into feeds, events written as
// Server-Sent Events. Every malformed target is BAD_REQUEST naming the problem.
#include "node/subscription_wire.h"

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "tests/node/sse.h"
#include "tests/testing/testing.h"

namespace cairn::node {
namespace {

using ::cairn::testing::HasErrorCode;
using nlohmann::json;

constexpr char kCursor[] = "12-00000000000000ab-00000000000000cd";

TEST(SubscriptionWireTest, W1_APathNamesTheTableOrOneRecord) {
  ASSERT_TRUE(IsSubscribeTarget("/subscribe/db/t"));
  ASSERT_TRUE(IsSubscribeTarget("/subscribe?x"));
  ASSERT_FALSE(IsSubscribeTarget("/subscribers/db/t"));
  ASSERT_FALSE(IsSubscribeTarget("/"));

  auto o = ParseSubscribeTarget("/subscribe/d%20b/t", "");
  ASSERT_OK(o);
  EXPECT_EQ(o->database, "d b");
  EXPECT_EQ(o->table, "t");
  EXPECT_FALSE(o->id.has_value());
  EXPECT_TRUE(o->current);

  // The id: a JSON integer is that number; anything else a string; quoted digits a string.
  o = ParseSubscribeTarget("/subscribe/db/t/42", "");
  ASSERT_OK(o);
  EXPECT_EQ(*o->id, json(42));
  o = ParseSubscribeTarget("/subscribe/db/t/-7", "");
  ASSERT_OK(o);
  EXPECT_EQ(*o->id, json(-7));
  o = ParseSubscribeTarget("/subscribe/db/t/9223372036854775807", "");
  ASSERT_OK(o);
  EXPECT_EQ(*o->id, json(INT64_MAX));
  o = ParseSubscribeTarget("/subscribe/db/t/9223372036854775808", "");  // past int64
  ASSERT_OK(o);
  EXPECT_EQ(*o->id, json("9223372036854775808"));
  o = ParseSubscribeTarget("/subscribe/db/t/+7", "");
  ASSERT_OK(o);
  EXPECT_EQ(*o->id, json("+7"));
  o = ParseSubscribeTarget("/subscribe/db/t/007", "");
  ASSERT_OK(o);
  EXPECT_EQ(*o->id, json("007"));
  o = ParseSubscribeTarget("/subscribe/db/t/%2242%22", "");
  ASSERT_OK(o);
  EXPECT_EQ(*o->id, json("42"));
  o = ParseSubscribeTarget("/subscribe/db/t/caf%C3%A9", "");
  ASSERT_OK(o);
  EXPECT_EQ(*o->id, json("caf\xC3\xA9"));
}

TEST(SubscriptionWireTest, W1_TheQueryAsksForSinceCurrentAndAttributes) {
  auto o = ParseSubscribeTarget(
      absl::StrCat("/subscribe/db/t?since=", kCursor, "&current=false&get_attributes=a,b"), "");
  ASSERT_OK(o);
  ASSERT_TRUE(o->since.has_value());
  EXPECT_EQ(o->since->ToString(), kCursor);
  EXPECT_FALSE(o->current);
  EXPECT_EQ(o->get_attributes, (std::vector<std::string>{"a", "b"}));
  // Last-Event-ID resumes as since= does; since= wins.
  o = ParseSubscribeTarget("/subscribe/db/t", kCursor);
  ASSERT_OK(o);
  EXPECT_EQ(o->since->seq, 12u);
  o = ParseSubscribeTarget("/subscribe/db/t?since=1-0000000000000001-0000000000000001", kCursor);
  ASSERT_OK(o);
  EXPECT_EQ(o->since->seq, 1u);
}

TEST(SubscriptionWireTest, W1_AMalformedTargetIsABadRequestNamingIt) {
  for (const char* target :
       {"/subscribe", "/subscribe/", "/subscribe/db", "/subscribe/db/", "/subscribe//t",
        "/subscribe/db/t/1/2", "/subscribe/db/t/", "/subscribe/db/t%", "/subscribe/db/t%4",
        "/subscribe/db/t%zz", "/subscribe/db/t%00", "/subscribe/db/t/%22unterminated",
        "/subscribe/db/t?current=maybe", "/subscribe/db/t?since=nope", "/subscribe/db/t?x=1",
        "/subscribe/db/t?current=true&current=false", "/subscribe/db/t?since=1-2-3"}) {
    EXPECT_THAT(ParseSubscribeTarget(target, ""), HasErrorCode(ErrorCode::kBadRequest)) << target;
  }
  EXPECT_THAT(ParseSubscribeTarget("/subscribe/db/t", "garbage"),
              HasErrorCode(ErrorCode::kBadRequest));
  auto s = ParseSubscribeTarget("/subscribe/db/t?colour=red", "");
  EXPECT_THAT(std::string(s.status().message()), ::testing::HasSubstr("colour"));
}

// W2: a change names its op, key, record, time, origin and cursor; the event's id is the
// cursor, except for a state row.
TEST(SubscriptionWireTest, W2_AnEventCarriesEverythingAndAStateRowNoId) {
  catalog::FeedEvent e;
  e.op = catalog::FeedEvent::Op::kPut;
  e.id = 7;
  e.record = {{"id", 7}, {"v", "a\nb"}};  // a newline in a value stays inside the data line
  e.version = HybridClock::Make(1'700'000'000'000, 3);
  e.origin = "n1";
  e.cursor = *catalog::FeedCursor::Parse(kCursor);
  std::string text = ChangeEvent(EventFraming::kSse, e, /*state=*/false);
  std::vector<testing::SseEvent> events = testing::TakeSseEvents(&text);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(text.empty());
  EXPECT_EQ(events[0].name, "put");
  EXPECT_EQ(events[0].id, kCursor);
  EXPECT_EQ(events[0].data["op"], "put");
  EXPECT_EQ(events[0].data["id"], 7);
  EXPECT_EQ(events[0].data["record"]["v"], "a\nb");
  EXPECT_EQ(events[0].data["__updatedtime__"], 1'700'000'000'000);
  EXPECT_EQ(events[0].data["origin"], "n1");
  EXPECT_EQ(events[0].data["cursor"], kCursor);

  e.op = catalog::FeedEvent::Op::kDelete;
  text = ChangeEvent(EventFraming::kSse, e, /*state=*/true);
  events = testing::TakeSseEvents(&text);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "delete");
  EXPECT_EQ(events[0].id, "");
  EXPECT_FALSE(events[0].data.contains("cursor"));  // a state row offers no cursor at all
  EXPECT_TRUE(events[0].data["record"].is_null());

  text = EndEvent(EventFraming::kSse, "overflow", {{"cursor", kCursor}});
  events = testing::TakeSseEvents(&text);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "overflow");
  EXPECT_EQ(events[0].data["cursor"], kCursor);
}

// W1 over WebSocket: the same event as one line of JSON, named by "event", so the connection
// sends each line as one text message; no bytes but events (pings keep the connection).
TEST(SubscriptionWireTest, W1_AWebSocketEventIsOneLineOfJsonNamedByEvent) {
  catalog::FeedEvent e;
  e.op = catalog::FeedEvent::Op::kPut;
  e.id = "k";
  e.record = {{"id", "k"}, {"v", "a\nb"}};  // a newline in a value is escaped, not a line
  e.version = HybridClock::Make(1'700'000'000'000, 3);
  e.origin = "n1";
  e.cursor = *catalog::FeedCursor::Parse(kCursor);
  const std::string change = ChangeEvent(EventFraming::kWebSocket, e, /*state=*/false);
  ASSERT_FALSE(change.empty());
  EXPECT_EQ(change.find('\n'), change.size() - 1);
  const json message = json::parse(change);
  EXPECT_EQ(message["event"], "put");
  EXPECT_EQ(message["op"], "put");
  EXPECT_EQ(message["id"], "k");
  EXPECT_EQ(message["record"]["v"], "a\nb");
  EXPECT_EQ(message["cursor"], kCursor);

  const json state = json::parse(ChangeEvent(EventFraming::kWebSocket, e, /*state=*/true));
  EXPECT_FALSE(state.contains("cursor"));
  const json caught_up =
      json::parse(CaughtUpEvent(EventFraming::kWebSocket, *catalog::FeedCursor::Parse(kCursor)));
  EXPECT_EQ(caught_up, (json{{"event", "caught_up"}, {"cursor", kCursor}}));
  const json end = json::parse(EndEvent(EventFraming::kWebSocket, "dropped", json::object()));
  EXPECT_EQ(end, (json{{"event", "dropped"}}));
  EXPECT_EQ(OpenedBytes(EventFraming::kWebSocket), "");
  EXPECT_EQ(KeepaliveBytes(EventFraming::kWebSocket), "");
}

}  // namespace
}  // namespace cairn::node

#include "storage/value_codec.h"

#include <random>

#include "tests/testing/testing.h"

namespace cairn::storage {
namespace {

using nlohmann::json;

std::string Enc(const json& v) {
  std::string out;
  EXPECT_OK(AppendScalar(v, &out));
  return out;
}

TEST(ValueCodecTest, RoundTrips) {
  for (const json& v : {json(nullptr), json(true), json(false), json(0), json(-1), json(INT64_MIN),
                        json(INT64_MAX), json(2.5), json(-0.125), json(""), json("abc"),
                        json(std::string("a\0b", 3)), json("\xc3\xa9t\xc3\xa9")}) {
    std::string e = Enc(v);
    absl::string_view in = e;
    json back;
    ASSERT_TRUE(ConsumeScalar(&in, &back)) << v.dump();
    EXPECT_TRUE(in.empty());
    EXPECT_EQ(back, v);
  }
}

TEST(ValueCodecTest, IntegralFloatsAreIntegers) {
  EXPECT_EQ(Enc(5), Enc(5.0));
  EXPECT_NE(Enc(5), Enc(5.5));
  EXPECT_NE(Enc(5), Enc("5"));
}

TEST(ValueCodecTest, PrimaryKeysAreStringsOrIntegers) {  // SPEC D1
  std::string out;
  EXPECT_OK(AppendPrimaryKey(json("k"), &out));
  EXPECT_OK(AppendPrimaryKey(json(42), &out));
  for (const json& bad :
       {json(1.5), json(true), json(nullptr), json::array(), json::object(), json(UINT64_MAX)}) {
    EXPECT_THAT(AppendPrimaryKey(bad, &out), testing::HasErrorCode(ErrorCode::kTypeMismatch))
        << bad.dump();
  }
}

// Property: within a type, byte order of encodings equals value order; a string's encoding
// starts with the prefix encoding of each of its prefixes. Checked on random values.
TEST(ValueCodecTest, OrderPreservingOnRandomValues) {
  std::mt19937_64 rng(testing::TestSeed());
  for (int i = 0; i < 20000; ++i) {
    int64_t a = static_cast<int64_t>(rng()), b = static_cast<int64_t>(rng());
    ASSERT_EQ(a < b, Enc(a) < Enc(b)) << a << " " << b;
    double x = std::ldexp(static_cast<double>(static_cast<int32_t>(rng())), -(int)(rng() % 40));
    double y = std::ldexp(static_cast<double>(static_cast<int32_t>(rng())), -(int)(rng() % 40));
    if (std::trunc(x) != x && std::trunc(y) != y) {
      ASSERT_EQ(x < y, Enc(x) < Enc(y)) << x << " " << y;
    }
    std::string s(rng() % 6, '\0'), t(rng() % 6, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 3);  // lots of 0x00 and 0x01
    for (char& c : t) c = static_cast<char>(rng() % 3);
    ASSERT_EQ(s < t, Enc(json(s)) < Enc(json(t)));
    std::string prefix;
    AppendStringPrefix(s.substr(0, rng() % (s.size() + 1)), &prefix);
    ASSERT_EQ(Enc(json(s)).compare(0, prefix.size(), prefix), 0);
  }
}

TEST(ValueCodecTest, MalformedInputIsRejected) {
  json out;
  for (std::string bad : {std::string(), std::string("\x10\x01"),
                          std::string("\x20"
                                      "ab"),
                          std::string("\x20"
                                      "a\0\x02",
                                      4),
                          std::string("\x7f")}) {
    absl::string_view in = bad;
    EXPECT_FALSE(ConsumeScalar(&in, &out));
  }
}

}  // namespace
}  // namespace cairn::storage

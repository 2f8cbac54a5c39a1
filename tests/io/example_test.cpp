// tf.train.Example parser: hand-built wire data (packed, unpacked, unknown fields, groups),
// malformed input with exact errors, and a cross-check against libprotobuf on random Examples.
#include "io/example.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "example_test.pb.h"

namespace shardflow::io {
namespace example_test {

// Minimal wire writer for hand-built messages.
std::string Varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
std::string Tag(uint32_t field, uint32_t wt) { return Varint((field << 3) | wt); }
std::string Len(uint32_t field, const std::string& body) {
  return Tag(field, 2) + Varint(body.size()) + body;
}
std::string Entry(const std::string& name, const std::string& feature) {
  return Len(1, Len(1, name) + Len(2, feature));
}
std::string ExampleOf(const std::string& entries) { return Len(1, entries); }

TEST(ExampleParser, BuilderOutputParsesBack) {
  ExampleBuilder b;
  b.AddInt64("label", {7}).AddFloat("x", {1.5f, -2.0f}).AddBytes("img", {"abc", "", "de"});
  b.AddInt64("neg", {-1, INT64_MIN, INT64_MAX}).AddFloat("empty", {});
  ExampleView view;
  const std::string wire = b.Serialize();  // the view points into it
  ASSERT_TRUE(ParseExample(wire, &view).ok());
  ASSERT_EQ(view.features().size(), 5u);
  const FeatureView* neg = view.Find("neg");
  ASSERT_EQ(neg->num_values, 3);
  int64_t ints[3];
  neg->CopyInt64s(ints);
  EXPECT_EQ(ints[0], -1);
  EXPECT_EQ(ints[1], INT64_MIN);
  EXPECT_EQ(ints[2], INT64_MAX);
  const FeatureView* img = view.Find("img");
  EXPECT_EQ(img->kind, FeatureKind::kBytes);
  EXPECT_EQ(img->num_values, 3);
  EXPECT_EQ(img->total_bytes, 5u);
  uint8_t bytes[5];
  img->CopyBytes(bytes);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(bytes), 5), "abcde");
  EXPECT_EQ(view.Find("empty")->kind, FeatureKind::kFloat);
  EXPECT_EQ(view.Find("empty")->num_values, 0);
  EXPECT_EQ(view.Find("missing"), nullptr);
}

TEST(ExampleParser, UnpackedAndMixedEncodingsAndUnknownFields) {
  std::string f32(4, '\0');
  const float one = 1.0f, two = 2.0f;
  std::memcpy(f32.data(), &one, 4);
  std::string two32(4, '\0');
  std::memcpy(two32.data(), &two, 4);
  // FloatList: unpacked 1.0, an unknown varint field, packed [2.0, 1.0], unknown group.
  const std::string floats = Tag(1, 5) + f32 + Tag(9, 0) + Varint(300) + Len(1, two32 + f32) +
                             Tag(7, 3) + Tag(1, 0) + Varint(5) + Tag(7, 4);
  // Int64List: unpacked -5, packed [1, 2], unknown fixed64 and fixed32.
  const std::string ints = Tag(1, 0) + Varint(static_cast<uint64_t>(-5)) + Tag(5, 1) +
                           std::string(8, 'x') + Len(1, Varint(1) + Varint(2)) + Tag(6, 5) +
                           std::string(4, 'y');
  // Unknown fields at every level: Example, Features, entry, Feature.
  const std::string entries =
      Entry("f", Len(2, floats) + Tag(15, 0) + Varint(1)) +
      Len(1, Len(1, "i") + Tag(3, 1) + std::string(8, 'z') + Len(2, Len(3, ints))) +
      Len(9, "unknown in Features");
  const std::string ex = ExampleOf(entries) + Len(2, "unknown in Example") + Tag(3, 5) + f32;
  ExampleView view;
  Status s = ParseExample(ex, &view);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const FeatureView* f = view.Find("f");
  ASSERT_EQ(f->num_values, 3);
  float fv[3];
  f->CopyFloats(fv);
  EXPECT_EQ(fv[0], 1.0f);
  EXPECT_EQ(fv[1], 2.0f);
  EXPECT_EQ(fv[2], 1.0f);
  const FeatureView* i = view.Find("i");
  ASSERT_EQ(i->num_values, 3);
  int64_t iv[3];
  i->CopyInt64s(iv);
  EXPECT_EQ(iv[0], -5);
  EXPECT_EQ(iv[1], 1);
  EXPECT_EQ(iv[2], 2);
}

TEST(ExampleParser, MapSemanticsLastEntryWinsAndEmptyInputs) {
  ExampleView view;
  ASSERT_TRUE(ParseExample("", &view).ok());
  EXPECT_TRUE(view.features().empty());
  const std::string ex =
      ExampleOf(Entry("a", Len(3, Len(1, Varint(1)))) + Entry("a", Len(3, Len(1, Varint(9)))));
  ASSERT_TRUE(ParseExample(ex, &view).ok());
  ASSERT_EQ(view.features().size(), 1u);
  int64_t v = 0;
  view.Find("a")->CopyInt64s(&v);
  EXPECT_EQ(v, 9);
  // A Feature with no list set.
  const std::string none = ExampleOf(Entry("none", ""));
  ASSERT_TRUE(ParseExample(none, &view).ok());
  EXPECT_EQ(view.Find("none")->kind, FeatureKind::kNone);
}

struct BadCase {
  const char* name;
  std::string bytes;
  std::string message;
  uint64_t offset;
};

TEST(ExampleParser, MalformedInputIsRejectedWithOffsetAndRecord) {
  const std::string good_entry = Entry("x", Len(3, Len(1, Varint(1))));
  std::vector<BadCase> cases = {
      {"wire type 7", ExampleOf(good_entry) + Tag(4, 7),
       "malformed tf.train.Example: invalid wire type 7 at byte 14 of the Example", 14},
      {"features with varint wire type", Tag(1, 0) + Varint(3),
       "malformed tf.train.Example: Example field 1 has wire type 0 at byte 0 of the Example", 0},
      {"length past the end", Tag(1, 2) + Varint(100) + "abc",
       "malformed tf.train.Example: length 100 runs past the end of its message (3 bytes left) at "
       "byte 1 of the Example",
       1},
      {"int64 list with fixed32", ExampleOf(Entry("x", Len(3, Tag(1, 5) + "abcd"))),
       "malformed tf.train.Example: Int64List field 1 has wire type 5 at byte 11 of the Example",
       11},
      {"packed floats not a multiple of 4", ExampleOf(Entry("x", Len(2, Len(1, "abcde")))),
       "malformed tf.train.Example: packed float list length not a multiple of 4 at byte 11 of the "
       "Example",
       11},
      {"truncated varint", ExampleOf(Entry("x", Len(3, Len(1, "\xff\xff")))),
       "malformed tf.train.Example: malformed varint in packed int64 list at byte 13 of the "
       "Example",
       13},
      {"unterminated group", Tag(5, 3) + Tag(1, 0) + Varint(1),
       "malformed tf.train.Example: unterminated group at byte 3 of the Example", 3},
      {"field number 0", Tag(0, 0) + Varint(1),
       "malformed tf.train.Example: invalid field number at byte 0 of the Example", 0},
  };
  for (const BadCase& c : cases) {
    ExampleView view;
    const RecordLocation where{"f.tfrecord", 1000, 42};
    Status s = ParseExample(c.bytes, &view, &where);
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(s.code(), ErrorCode::kDataLoss) << c.name;
    EXPECT_EQ(s.message(), c.message) << c.name;
    EXPECT_EQ(s.context().offset, 1000 + c.offset) << c.name;
    EXPECT_EQ(s.context().record, 42) << c.name;
    EXPECT_EQ(s.context().file, "f.tfrecord") << c.name;
    // Every prefix of a bad Example is handled without crashing.
    for (size_t n = 0; n < c.bytes.size(); ++n) (void)ParseExample(c.bytes.substr(0, n), &view);
  }
}

// Random Examples through libprotobuf (packed and unpacked) must parse to the same values.
TEST(ExampleParser, CrossCheckAgainstLibprotobuf) {
  std::mt19937_64 rng(2024);
  for (int trial = 0; trial < 300; ++trial) {
    shardflow_test::Example ex;
    auto* map = ex.mutable_features()->mutable_feature();
    const int nfeat = static_cast<int>(rng() % 6);
    for (int k = 0; k < nfeat; ++k) {
      const std::string name = "feat" + std::to_string(rng() % 8);
      shardflow_test::Feature feature;
      const int kind = static_cast<int>(rng() % 4);
      const size_t count = rng() % 20;
      if (kind == 1) {
        for (size_t j = 0; j < count; ++j) {
          std::string v(rng() % 10, '\0');
          for (char& c : v) c = static_cast<char>(rng());
          feature.mutable_bytes_list()->add_value(v);
        }
      } else if (kind == 2) {
        feature.mutable_float_list();
        for (size_t j = 0; j < count; ++j) {
          feature.mutable_float_list()->add_value(
              static_cast<float>(static_cast<int64_t>(rng() % 2001) - 1000) / 8.0f);
        }
      } else if (kind == 3) {
        feature.mutable_int64_list();
        for (size_t j = 0; j < count; ++j)
          feature.mutable_int64_list()->add_value(static_cast<int64_t>(rng()) >> (rng() % 64));
      }
      (*map)[name] = feature;
    }
    std::string wire = ex.SerializeAsString();
    // Sometimes re-encode one list unpacked, as other writers may.
    const bool unpacked = trial % 3 == 0;
    if (unpacked) {
      std::string entries;
      for (const auto& [name, feature] : *map) {
        std::string fbytes;
        if (feature.has_float_list()) {
          shardflow_test::FloatListUnpacked u;
          for (float v : feature.float_list().value()) u.add_value(v);
          fbytes = Len(2, u.SerializeAsString());
        } else if (feature.has_int64_list()) {
          shardflow_test::Int64ListUnpacked u;
          for (int64_t v : feature.int64_list().value()) u.add_value(v);
          fbytes = Len(3, u.SerializeAsString());
        } else {
          fbytes = feature.SerializeAsString();
        }
        entries += Entry(name, fbytes);
      }
      wire = map->empty() ? "" : ExampleOf(entries);
    }
    shardflow_test::Example ref;
    ASSERT_TRUE(ref.ParseFromString(wire));
    ExampleView view;
    Status s = ParseExample(wire, &view);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(view.features().size(), ref.features().feature().size()) << trial;
    for (const auto& [name, feature] : ref.features().feature()) {
      const FeatureView* f = view.Find(name);
      ASSERT_NE(f, nullptr) << name;
      if (feature.has_bytes_list()) {
        ASSERT_EQ(f->kind, FeatureKind::kBytes);
        std::vector<std::string> got;
        f->ForEachBytes([&](std::string_view v) { got.emplace_back(v); });
        EXPECT_EQ(got, std::vector<std::string>(feature.bytes_list().value().begin(),
                                                feature.bytes_list().value().end()));
      } else if (feature.has_float_list()) {
        ASSERT_EQ(f->kind, FeatureKind::kFloat);
        std::vector<float> got(static_cast<size_t>(f->num_values));
        f->CopyFloats(got.data());
        EXPECT_EQ(got, std::vector<float>(feature.float_list().value().begin(),
                                          feature.float_list().value().end()));
      } else if (feature.has_int64_list()) {
        ASSERT_EQ(f->kind, FeatureKind::kInt64);
        std::vector<int64_t> got(static_cast<size_t>(f->num_values));
        f->CopyInt64s(got.data());
        EXPECT_EQ(got, std::vector<int64_t>(feature.int64_list().value().begin(),
                                            feature.int64_list().value().end()));
      } else {
        EXPECT_EQ(f->kind, FeatureKind::kNone);
      }
    }
    // Our serializer produces bytes libprotobuf reads back identically.
    ExampleBuilder b;
    for (const auto& f : view.features()) {
      if (f.kind == FeatureKind::kInt64) {
        std::vector<int64_t> v(static_cast<size_t>(f.num_values));
        f.CopyInt64s(v.data());
        b.AddInt64(std::string(f.name), v);
      } else if (f.kind == FeatureKind::kFloat) {
        std::vector<float> v(static_cast<size_t>(f.num_values));
        f.CopyFloats(v.data());
        b.AddFloat(std::string(f.name), v);
      } else if (f.kind == FeatureKind::kBytes) {
        std::vector<std::string> v;
        f.ForEachBytes([&](std::string_view x) { v.emplace_back(x); });
        b.AddBytes(std::string(f.name), v);
      }
    }
    shardflow_test::Example round;
    ASSERT_TRUE(round.ParseFromString(b.Serialize()));
    for (const auto& [name, feature] : round.features().feature()) {
      EXPECT_EQ(feature.SerializeAsString(), ref.features().feature().at(name).SerializeAsString());
    }
  }
}

}  // namespace example_test
}  // namespace shardflow::io

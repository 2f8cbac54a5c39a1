// Byte-pair encoding (io/text/bpe.hpp): GPT-2's chunking; merges learned by hand on a small
// corpus, deterministic; every byte sequence round-trips (invalid UTF-8, NUL, empty); the
// vocab.json + merges.txt layout written and read back encodes the same; malformed files are
// refused naming the file and line.
#include "io/text/bpe.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/random.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow {
namespace bpe_test {

using text::Bpe;

std::vector<std::string> Chunks(const std::string& s) {
  std::vector<std::string> out;
  for (auto v : text::PreTokenize(s)) out.emplace_back(v);
  return out;
}

TEST(Bpe, ChunksAsGpt2) {
  EXPECT_EQ(Chunks("Hello world, it's 2026!"),
            (std::vector<std::string>{"Hello", " world", ",", " it", "'s", " 2026", "!"}));
  // A run of spaces leaves its last to the next word; a newline before a word stands alone.
  EXPECT_EQ(Chunks("a   b\n\nc"), (std::vector<std::string>{"a", "  ", " b", "\n", "\n", "c"}));
  EXPECT_EQ(Chunks("caf\xc3\xa9 \xff!"), (std::vector<std::string>{"caf\xc3\xa9", " \xff", "!"}));
  EXPECT_EQ(Chunks("end  "), (std::vector<std::string>{"end", "  "}));
  EXPECT_TRUE(Chunks("").empty());
}

TEST(Bpe, LearnsTheMostFrequentPairsDeterministically) {
  const std::vector<std::string> docs = {"low low low lower lowest", "newer newest wider"};
  const Bpe a = Bpe::Learn(docs, 260);
  const Bpe b = Bpe::Learn(docs, 260);
  ASSERT_EQ(a.merges(), 4);
  std::vector<int64_t> ids_a, ids_b;
  a.Encode(" lowest low", &ids_a);
  b.Encode(" lowest low", &ids_b);
  EXPECT_EQ(ids_a, ids_b);
  // " l" "o" "w" occur most: the first merges build " low" (3 tokens fewer than its bytes).
  std::vector<int64_t> low;
  a.Encode(" low", &low);
  EXPECT_EQ(low.size(), 1u) << "merges so far do not make ' low' one token";
  EXPECT_EQ(a.end_id(), 260);
  EXPECT_EQ(a.pad_id(), 261);
  EXPECT_EQ(a.vocabulary(), 262);
  // A corpus with no repeated pair stops early.
  EXPECT_EQ(Bpe::Learn({"abc"}, 1000).merges(), 0);
}

TEST(Bpe, EveryByteSequenceRoundTrips) {
  std::vector<std::string> docs;
  for (int d = 0; d < 30; ++d) {
    std::string s;
    for (int i = 0; i < 200; ++i) {
      s += "the quick brown fox "[static_cast<int>(RandomUniform(2, d, i) * 20)];
    }
    docs.push_back(s);
  }
  const Bpe bpe = Bpe::Learn(docs, 400);
  EXPECT_GT(bpe.merges(), 20);
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  for (int i = 0; i < 3000; ++i)
    all += static_cast<char>(static_cast<int>(RandomUniform(3, 0, i) * 256));
  for (const std::string& s : {std::string(), all, std::string("\xc3(\xa0 x\0y", 7), docs[0]}) {
    std::vector<int64_t> ids;
    bpe.Encode(s, &ids);
    EXPECT_EQ(bpe.Decode(ids), s);
  }
  std::vector<int64_t> ids;
  bpe.Encode(docs[1], &ids);
  EXPECT_LT(ids.size(), docs[1].size() * 3 / 4) << "the merges compress the corpus they came from";
  const std::vector<int64_t> specials = {bpe.end_id(), bpe.pad_id()};
  EXPECT_EQ(bpe.Decode(specials, "|"), "|");
  EXPECT_THROW(bpe.Decode(std::vector<int64_t>{bpe.vocabulary()}), Error);
}

class BpeFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("bpe_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  void Put(const std::string& name, const std::string& text) const {
    std::ofstream(Path(name), std::ios::binary) << text;
  }
  // The error reading vocab.json + merges.txt, or "".
  std::string ReadError() const {
    try {
      Bpe::Read(Path("vocab.json"), Path("merges.txt"));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  std::filesystem::path dir_;
};

TEST_F(BpeFiles, WrittenFilesReadBackTheSameEncoder) {
  const Bpe learned = Bpe::Learn({"hello hello help helmet \xff\xfe\xff\xfe"}, 280);
  learned.Write(Path("vocab.json"), Path("merges.txt"));
  const Bpe read = Bpe::Read(Path("vocab.json"), Path("merges.txt"));
  EXPECT_EQ(read.merges(), learned.merges());
  EXPECT_EQ(read.vocabulary(), learned.vocabulary());
  for (const std::string s : {"hello helmet", "\xff\xfe\xff\xfe!", "new words"}) {
    std::vector<int64_t> a, b;
    learned.Encode(s, &a);
    read.Encode(s, &b);
    EXPECT_EQ(a, b) << s;
  }
}

TEST_F(BpeFiles, MalformedFilesNameFileAndLine) {
  const Bpe learned = Bpe::Learn({"hello hello help"}, 270);
  learned.Write(Path("vocab.json"), Path("merges.txt"));
  std::ifstream in(Path("merges.txt"));
  std::string merges((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Put("merges.txt", merges + "h\n");  // one token
  std::string e = ReadError();
  EXPECT_NE(e.find("line " + std::to_string(learned.merges() + 2) + ":"), std::string::npos) << e;
  EXPECT_NE(e.find("merges.txt"), std::string::npos) << e;
  Put("merges.txt", merges + "h zzz\n");  // an unknown token
  e = ReadError();
  EXPECT_NE(e.find("does not have"), std::string::npos) << e;
  Put("merges.txt", merges);
  Put("vocab.json", "{\"a\": 0,");
  EXPECT_NE(ReadError().find("not JSON"), std::string::npos);
  Put("vocab.json", "{\"a\": 0, \"b\": 2}");
  EXPECT_NE(ReadError().find("without gaps"), std::string::npos);
  Put("vocab.json", "[1, 2]");
  EXPECT_NE(ReadError().find("JSON object"), std::string::npos);
  EXPECT_THROW(Bpe::Read(Path("none.json"), Path("merges.txt")), Error);
}

// Hugging Face's byte-level BPE (tokenizers 0.23.3; tests/fixtures/bpe, written by
// bench/peers/hf_bpe_reference.py): its vocab.json and merges.txt, read here, encode every
// stored case to Hugging Face's ids, and decode them back.
TEST(Bpe, ReadsHuggingFaceFilesAndEncodesAsItDoes) {
  const auto dir = testing::FixturesDir() / "bpe";
  const Bpe bpe = Bpe::Read((dir / "vocab.json").string(), (dir / "merges.txt").string());
  EXPECT_EQ(bpe.tokens(), 400);
  std::ifstream in(dir / "cases.json");
  const nlohmann::json cases = nlohmann::json::parse(in)["cases"];
  ASSERT_GE(cases.size(), 7u);
  for (const nlohmann::json& c : cases) {
    const std::string text = c["text"];
    std::vector<int64_t> ids;
    bpe.Encode(text, &ids);
    EXPECT_EQ(ids, c["ids"].get<std::vector<int64_t>>()) << text;
    EXPECT_EQ(bpe.Decode(ids), text);
  }
}

}  // namespace bpe_test
}  // namespace shardflow

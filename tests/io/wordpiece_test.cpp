// WordPiece (io/text/wordpiece.hpp): BERT's basic cut for ASCII; greedy longest-match pieces with
// ## continuations, [UNK] for a word nothing covers; a vocab.txt trained by Hugging Face
// tokenizers encodes every stored case to its ids (tests/fixtures/wordpiece); a malformed
// vocab.txt is refused naming file and line.
#include "io/text/wordpiece.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow {
namespace wordpiece_test {

using text::WordPiece;

TEST(WordPiece, BasicWordsAsBert) {
  EXPECT_EQ(text::BasicWords("Hello, World!  it's\tA\x07-b", true),
            (std::vector<std::string>{"hello", ",", "world", "!", "it", "'", "s", "a", "-", "b"}));
  EXPECT_EQ(text::BasicWords("Caf\xc3\xa9 OK", false),
            (std::vector<std::string>{"Caf\xc3\xa9", "OK"}));
}

class WordPieceFiles : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    path_ = std::filesystem::temp_directory_path() /
            ("wordpiece_test_" +
             std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + ".txt");
    std::ofstream(path_, std::ios::binary) << text;
    return path_.string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_;
};

TEST_F(WordPieceFiles, LongestPiecesFirstAndUnknownWords) {
  const WordPiece w =
      WordPiece::Read(Write("[PAD]\n[UNK]\n[SEP]\nun\n##aff\n##able\n##a\nable\n,\n"), true);
  std::vector<int64_t> ids;
  // "unaffable" = un ##aff ##able; ","; "unable" = un ##able; "xyz" = [UNK] (the one unknown)
  EXPECT_EQ(w.Encode("Unaffable, unable xyz", &ids), 1);
  EXPECT_EQ(ids, (std::vector<int64_t>{3, 4, 5, 8, 3, 5, 1}));
  EXPECT_EQ(w.Decode(ids), "unaffable , unable [UNK]");
  EXPECT_EQ(w.sep_id(), 2);
  EXPECT_EQ(w.pad_id(), 0);
}

TEST_F(WordPieceFiles, MalformedVocabulariesNameFileAndLine) {
  auto error = [&](const std::string& text) {
    try {
      WordPiece::Read(Write(text), true);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string e = error("[UNK]\na\n\nb\n");
  EXPECT_NE(e.find("line 3"), std::string::npos) << e;
  EXPECT_NE(e.find(path_.string()), std::string::npos) << e;
  e = error("[UNK]\na\nb\na\n");
  EXPECT_NE(e.find("line 4: token 'a' is already line 2"), std::string::npos) << e;
  EXPECT_NE(error("a\nb\n").find("no [UNK]"), std::string::npos);
  EXPECT_THROW(WordPiece::Read("/nonexistent/vocab.txt", true), Error);
}

TEST(WordPiece, EncodesAsHuggingFaceBert) {
  const auto dir = testing::FixturesDir() / "wordpiece";
  const WordPiece w = WordPiece::Read((dir / "vocab.txt").string(), true);
  std::ifstream in(dir / "cases.json");
  const nlohmann::json cases = nlohmann::json::parse(in)["cases"];
  ASSERT_GE(cases.size(), 6u);
  for (const nlohmann::json& c : cases) {
    const std::string text = c["text"];
    std::vector<int64_t> ids;
    w.Encode(text, &ids);
    EXPECT_EQ(ids, c["ids"].get<std::vector<int64_t>>()) << text;
  }
}

}  // namespace wordpiece_test
}  // namespace shardflow

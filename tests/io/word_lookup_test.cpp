// The word lookup with out-of-vocabulary buckets (tf.lookup.StaticVocabularyTable's rule) and
// the tokenizer face the pipeline and convert pick tokenizers through.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "io/text/tokenizer.hpp"
#include "io/text/word_lookup.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::text {
namespace word_lookup_test {

std::string ErrorOf(const std::string& vocab, int64_t buckets = 3) {
  try {
    WordLookup::Parse(vocab, "vocab.txt", buckets, true);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(WordLookup, VocabularyIdsAreLineNumbersAndUnknownWordsFallInBuckets) {
  const WordLookup w = WordLookup::Parse("the\ncat\nsat\n", "vocab.txt", 4, true);
  EXPECT_EQ(w.words(), 3);
  EXPECT_EQ(w.end_id(), 7);
  EXPECT_EQ(w.pad_id(), 8);
  EXPECT_EQ(w.vocabulary(), 9);
  std::vector<int64_t> ids;
  // Any whitespace cuts words; case folds under lowercase.
  EXPECT_EQ(w.Encode("  The\tcat\n\nsat  on the   mat ", &ids), 2);
  ASSERT_EQ(ids.size(), 6u);
  EXPECT_EQ((std::vector<int64_t>(ids.begin(), ids.begin() + 3)), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(ids[4], 0);
  for (const size_t i : {size_t{3}, size_t{5}}) {
    EXPECT_GE(ids[i], 3);
    EXPECT_LT(ids[i], 7);
  }
  // The bucket is the FNV-1a hash of the word modulo the buckets: the same word, the same id.
  std::vector<int64_t> again;
  w.Encode("mat on", &again);
  EXPECT_EQ(again, (std::vector<int64_t>{ids[5], ids[3]}));
  EXPECT_EQ(ids[3], 3 + static_cast<int64_t>(shardflow::Fnv1a64("on") % 4));
  // Unknown words spread over the buckets.
  std::set<int64_t> buckets;
  std::vector<int64_t> many;
  w.Encode("a b c d e f g h i j k l m n o p q r s t", &many);
  for (const int64_t id : many) buckets.insert(id);
  EXPECT_EQ(buckets.size(), 4u);
  EXPECT_EQ(w.Decode({0, 1, 3, 7, 8, 2}, "|"), "the cat [OOV:0]| sat");
  EXPECT_THROW(w.Decode({9}), Error);
}

TEST(WordLookup, CaseKeptWithoutLowercaseAndEmptyTextHasNoIds) {
  const WordLookup w = WordLookup::Parse("The\r\nthe\n", "vocab.txt", 1, false);
  std::vector<int64_t> ids;
  EXPECT_EQ(w.Encode("The the THE", &ids), 1);
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 1, 2}));
  ids.clear();
  EXPECT_EQ(w.Encode(" \n\t ", &ids), 0);
  EXPECT_TRUE(ids.empty());
}

TEST(WordLookup, BadVocabulariesNameFileAndLine) {
  EXPECT_NE(ErrorOf("a\n\nb\n").find("line 2: an empty word"), std::string::npos);
  EXPECT_NE(ErrorOf("a\nb\na\n").find("line 3: word 'a' is already line 1"), std::string::npos);
  EXPECT_NE(ErrorOf("a\nb c\n").find("line 2: 'b c' holds whitespace"), std::string::npos);
  EXPECT_NE(ErrorOf("").find("has no word"), std::string::npos);
  EXPECT_NE(ErrorOf("a\n", 0).find("at least one out-of-vocabulary bucket"), std::string::npos);
  EXPECT_NE(ErrorOf("a\n\nb\n").find("vocab.txt"), std::string::npos);
  EXPECT_THROW(WordLookup::Read("/no/such/vocab.txt", 1, true), Error);
}

TEST(Tokenizer, PicksByNameAndNamesTheMissingKey) {
  const Tokenizer byte = Tokenizer::Make({.kind = "byte"});
  std::vector<int64_t> ids;
  EXPECT_EQ(byte.Encode("hi\xff", &ids), 0);
  EXPECT_EQ(ids, (std::vector<int64_t>{'h', 'i', 255}));
  EXPECT_EQ(byte.vocabulary(), 258);
  EXPECT_EQ(byte.pad_id(), 257);
  EXPECT_EQ(byte.Decode(ids), "hi\xff");
  auto error = [](const TokenizerOptions& o) {
    try {
      Tokenizer::Make(o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error({.kind = "sentencepiece", .key_prefix = "data."}).find("data.tokenizer"),
            std::string::npos);
  EXPECT_NE(
      error({.kind = "bpe", .bpe_vocab = "v.json", .key_prefix = "data."}).find("data.bpe_merges"),
      std::string::npos);
  EXPECT_NE(error({.kind = "wordpiece", .key_prefix = "data."}).find("data.wordpiece_vocab"),
            std::string::npos);
  EXPECT_NE(error({.kind = "lookup", .key_prefix = "data."}).find("data.lookup_vocab"),
            std::string::npos);
  // The stored WordPiece vocabulary: [SEP] ends documents, [PAD] pads.
  const auto vocab = shardflow::testing::FixturesDir() / "wordpiece" / "vocab.txt";
  const Tokenizer wp = Tokenizer::Make({.kind = "wordpiece", .wordpiece_vocab = vocab.string()});
  EXPECT_EQ(wp.kind(), "wordpiece");
  EXPECT_GE(wp.pad_id(), 0);
  EXPECT_NE(wp.Describe().find("wordpiece ("), std::string::npos);
}

}  // namespace word_lookup_test
}  // namespace shardflow::text

// io/text: documents cut by line, file or a delimiter line (the fortune convention), empty ones
// skipped and counted; the byte-level tokenizer round-trips every byte string (invalid UTF-8,
// NUL bytes, the empty string) and names a bad id; language-model packing gives every token but
// the first exactly once as a target, across document boundaries, and counts the dropped tail;
// the n-gram baselines are the smoothed cross-entropies by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/random.hpp"
#include "io/text/byte_tokenizer.hpp"
#include "io/text/documents.hpp"
#include "io/text/lm_packing.hpp"

namespace shardflow {
namespace text_test {

using text::ByteTokenizer;

std::vector<std::string> Texts(const std::vector<text::Document>& docs) {
  std::vector<std::string> out;
  for (const auto& d : docs) out.push_back(d.text);
  return out;
}

TEST(Documents, FortuneDelimiterLines) {
  std::vector<text::Document> docs;
  text::DocumentCounts counts;
  // A delimiter-only document, a CRLF file's lines, a last document without a closing %.
  text::SplitDocuments("one\ntwo lines\n%\n%\n  \n%\r\nthree\r\n%x\nlast", "%", 3, &docs, &counts);
  EXPECT_EQ(Texts(docs), (std::vector<std::string>{"one\ntwo lines", "three\n%x\nlast"}));
  EXPECT_EQ(counts.documents, 2);
  EXPECT_EQ(counts.empty_skipped, 2);
  EXPECT_EQ(docs[1].file, 3);
  EXPECT_EQ(docs[1].index, 3);
}

TEST(Documents, LinesAndFiles) {
  std::vector<text::Document> docs;
  text::DocumentCounts counts;
  text::SplitDocuments("a\n\nb\r\nc", "line", 0, &docs, &counts);
  EXPECT_EQ(Texts(docs), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(counts.empty_skipped, 1);
  docs.clear();
  text::SplitDocuments("a\n\nb\n", "file", 1, &docs, &counts);
  EXPECT_EQ(Texts(docs), (std::vector<std::string>{"a\n\nb\n"}));
  EXPECT_THROW(text::CheckDocumentSplit("", "input.documents"), Error);
  EXPECT_THROW(text::CheckDocumentSplit("%\n", "input.documents"), Error);
}

TEST(Documents, AMissingFileIsNamed) {
  text::DocumentCounts counts;
  try {
    text::ReadDocuments({"/nonexistent/fortunes"}, "%", &counts);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/fortunes"), std::string::npos) << e.what();
  }
}

TEST(ByteTokenizer, RoundTripsEveryByteString) {
  const std::string cases[] = {"", std::string("\0\xff\xfe", 3), "caf\xc3\xa9", "\xc3(\xa0\xa1",
                               "tab\tnew\nline"};
  for (const std::string& s : cases) {
    std::vector<int64_t> ids;
    ByteTokenizer::Encode(s, &ids);
    EXPECT_EQ(ids.size(), s.size());
    EXPECT_EQ(ByteTokenizer::Decode(ids), s);
  }
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  for (int i = 0; i < 1000; ++i) all += static_cast<char>(RandomUniform(1, 0, i) * 256);
  std::vector<int64_t> ids;
  ByteTokenizer::Encode(all, &ids);
  EXPECT_EQ(ByteTokenizer::Decode(ids), all);
  const std::vector<int64_t> with_specials = {104, ByteTokenizer::kEnd, 105, ByteTokenizer::kPad};
  EXPECT_EQ(ByteTokenizer::Decode(with_specials, "|"), "h|i");
  EXPECT_THROW(ByteTokenizer::Decode(std::vector<int64_t>{258}), Error);
  EXPECT_THROW(ByteTokenizer::Decode(std::vector<int64_t>{-1}), Error);
}

TEST(LmPacking, EveryTokenButTheFirstIsATargetOnce) {
  const std::vector<std::vector<int64_t>> docs = {{1, 2, 3}, {4}, {5, 6, 7, 8, 9}};
  // stream 1 2 3 E 4 E 5 6 7 8 9 E: 12 tokens, blocks of 4 -> 2 blocks (tail of 3 dropped)
  const text::PackedBlocks p = text::PackForLanguageModel(docs, 99, 4);
  ASSERT_EQ(p.count, 2);
  EXPECT_EQ(p.dropped_tokens, 3);
  EXPECT_EQ(std::vector<int64_t>(p.Input(0).begin(), p.Input(0).end()),
            (std::vector<int64_t>{1, 2, 3, 99}));
  EXPECT_EQ(std::vector<int64_t>(p.Target(0).begin(), p.Target(0).end()),
            (std::vector<int64_t>{2, 3, 99, 4}));
  EXPECT_EQ(std::vector<int64_t>(p.Input(1).begin(), p.Input(1).end()),
            (std::vector<int64_t>{4, 99, 5, 6}));
  EXPECT_EQ(std::vector<int64_t>(p.Target(1).begin(), p.Target(1).end()),
            (std::vector<int64_t>{99, 5, 6, 7}));
  EXPECT_EQ(text::PackForLanguageModel({}, 99, 4).count, 0);
  EXPECT_THROW(text::PackForLanguageModel(docs, 99, 0), Error);
}

TEST(LmPacking, NgramBaselinesByHand) {
  // vocabulary 3; train stream 0 1 0 1 0 (block 4: one block, every token counted)
  const text::PackedBlocks train = text::PackForLanguageModel({{0, 1, 0, 1}}, 0, 4);
  const text::PackedBlocks held = text::PackForLanguageModel({{1}}, 0, 1);  // input 1, target 0
  const text::BaselineLosses b = text::NgramBaselines(train, held, 3);
  // unigram counts +1: 0 -> 4, 1 -> 3, 2 -> 1 of 8; bigram row 1: (1,0) 2 + 1 of 2 + 3
  EXPECT_NEAR(b.unigram, -std::log(4.0 / 8.0), 1e-12);
  EXPECT_NEAR(b.bigram, -std::log(3.0 / 5.0), 1e-12);
}

}  // namespace text_test
}  // namespace shardflow

// libFuzzer target: the text tokenizers' file readers and their encoders on arbitrary bytes
// (io/text/). The input is split at its first NUL byte into A and B. A BPE vocab.json (A) and
// merges.txt (B), a WordPiece vocab.txt (A) and document splitting (the whole input) either
// parse or are refused with shardflow::Error, never anything else (so is a word lookup's
// vocabulary, A, whose ids of B's words stay inside its vocabulary); whatever parses encodes the
// other part: a BPE and the byte tokenizer decode it back to its bytes, the chunks of
// PreTokenize and the documents' text never lose or invent bytes beyond the delimiter lines.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/text/bpe.hpp"
#include "io/text/byte_tokenizer.hpp"
#include "io/text/documents.hpp"
#include "io/text/word_lookup.hpp"
#include "io/text/wordpiece.hpp"

using namespace shardflow;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string a = input.substr(0, nul);
  const std::string b = nul == std::string::npos ? std::string() : input.substr(nul + 1);
  std::string joined;
  for (auto chunk : text::PreTokenize(input)) joined += chunk;
  if (joined != input) std::abort();
  std::vector<int64_t> ids;
  text::ByteTokenizer::Encode(input, &ids);
  if (text::ByteTokenizer::Decode(ids) != input) std::abort();
  try {
    const text::Bpe bpe = text::Bpe::Parse(a, b, "vocab.json", "merges.txt");
    ids.clear();
    bpe.Encode(input, &ids);
    if (bpe.Decode(ids) != input) std::abort();
  } catch (const Error&) {
  }
  try {
    const text::WordPiece wp = text::WordPiece::Parse(a, "vocab.txt", true);
    ids.clear();
    wp.Encode(b, &ids);
    wp.Decode(ids);
  } catch (const Error&) {
  }
  try {
    const text::WordLookup lookup = text::WordLookup::Parse(a, "vocab.txt", 3, true);
    ids.clear();
    lookup.Encode(b, &ids);
    for (const int64_t id : ids) {
      if (id < 0 || id >= lookup.end_id()) std::abort();
    }
    lookup.Decode(ids);
  } catch (const Error&) {
  }
  std::vector<text::Document> docs;
  text::DocumentCounts counts;
  text::SplitDocuments(input, "%", 0, &docs, &counts);
  text::SplitDocuments(input, "line", 0, &docs, &counts);
  return 0;
}

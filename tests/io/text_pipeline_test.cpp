// Text in the pipeline: padded_batch's per-feature padding and masks, bucket_by_sequence_length
// (tf.data's semantics, counts, resume), the tokenize op, and [data] tokenizer inputs from JSON
// lines, text lines and TFRecord bytes through BuildInputPipeline on 1..4 simulated ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/example.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/iterator_state.hpp"
#include "io/text/lm_packing.hpp"
#include "io/tfrecord_writer.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace text_pipeline_test {

using testing::Drain;
using testing::ErrorText;
using testing::ExpectHas;
using testing::WriteFile;

// Element x of Range(n) with "seq": int64 [len(x)] holding 100 x + position, len = lengths[x].
Dataset Sequences(const std::vector<int64_t>& lengths) {
  return testing::Range(static_cast<int64_t>(lengths.size()))
      .Map([lengths](Element& e, const MapContext&) {
        const int64_t x = testing::X(e);
        Tensor seq(DType::kInt64, {lengths[static_cast<size_t>(x)]});
        for (int64_t i = 0; i < seq.num_elements(); ++i) seq.data<int64_t>()[i] = 100 * x + i;
        e.features.erase(e.features.begin() + 1);  // y
        e.Set("seq", seq);
      });
}

std::vector<int64_t> Column(const Element& batch, const std::string& name) {
  const Tensor& t = batch.Get(name);
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.num_elements());
}

// Saves `ds`'s iterator after `cut` elements and restores the state into a new one: it must go
// on with exactly all[cut..] (the int64 features named).
void ExpectResumesExactly(const Dataset& ds, const std::vector<Element>& all, size_t cut,
                          const std::vector<std::string>& features) {
  PipelineIterator it = ds.MakeIterator();
  Element e;
  for (size_t i = 0; i < cut; ++i) ASSERT_TRUE(it.Next(&e));
  const std::string state = it.SaveState();
  PipelineIterator resumed = ds.MakeIterator();
  resumed.RestoreState(state);
  size_t i = cut;
  while (resumed.Next(&e)) {
    ASSERT_LT(i, all.size());
    for (const std::string& f : features) {
      EXPECT_EQ(Column(e, f), Column(all[i], f)) << f << " of element " << i << ", cut " << cut;
    }
    ++i;
  }
  EXPECT_EQ(i, all.size()) << "cut " << cut;
}

TEST(PaddedBatch, PerFeaturePaddingValuesAndMasks) {
  PaddedBatchOptions o{.padding_value = 0, .padding_values = {{"seq", -1}}, .masks = {"seq"}};
  const auto batches = Drain(Sequences({2, 0, 3}).PaddedBatch(3, false, o));
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].Get("seq").shape(), (Shape{3, 3}));
  EXPECT_EQ(Column(batches[0], "seq"), (std::vector<int64_t>{0, 1, -1, -1, -1, -1, 200, 201, 202}));
  const Tensor& mask = batches[0].Get("seq_mask");
  ASSERT_EQ(mask.dtype(), DType::kUInt8);
  EXPECT_EQ(std::vector<uint8_t>(mask.data<uint8_t>(), mask.data<uint8_t>() + 9),
            (std::vector<uint8_t>{1, 1, 0, 0, 0, 0, 1, 1, 1}));
}

BucketOptions Buckets(std::vector<int64_t> boundaries, std::vector<int64_t> sizes) {
  return {.length_feature = "seq",
          .boundaries = std::move(boundaries),
          .batch_sizes = std::move(sizes),
          .sequence_features = {"seq"},
          .padding = {.padding_value = -1}};
}

TEST(BucketBySequenceLength, FullBucketsFirstThenPartialOnesInBucketOrder) {
  // Lengths of x = 0..7; buckets [0,3) [3,6) [6,inf) with batches 2, 2, 3.
  const std::vector<int64_t> lengths = {1, 4, 2, 7, 5, 0, 6, 3};
  const auto batches = Drain(Sequences(lengths).BucketBySequenceLength(Buckets({3, 6}, {2, 2, 3})));
  std::vector<std::vector<int64_t>> xs;
  for (const Element& b : batches) xs.push_back(Column(b, "x"));
  // x=0,2 fill bucket 0 at x=2; x=1,4 fill bucket 1 at x=4; then the partial ones: bucket 0
  // holds x=5, bucket 1 x=7, bucket 2 x=3,6.
  EXPECT_EQ(xs, (std::vector<std::vector<int64_t>>{{0, 2}, {1, 4}, {5}, {7}, {3, 6}}));
  // Each batch is padded to its longest.
  EXPECT_EQ(batches[1].Get("seq").shape(), (Shape{2, 5}));
  EXPECT_EQ(Column(batches[1], "seq"),
            (std::vector<int64_t>{100, 101, 102, 103, -1, 400, 401, 402, 403, 404}));
  EXPECT_EQ(batches[2].Get("seq").shape(), (Shape{1, 0}));
  EXPECT_EQ(batches[0].id, 0);
  const BucketOptions o = Buckets({3, 6}, {2, 2, 3});
  EXPECT_EQ(BucketedBatches(o, {3, 3, 2}), 5);
  const auto dropped = Drain(Sequences(lengths).BucketBySequenceLength([&] {
    BucketOptions d = o;
    d.drop_remainder = true;
    return d;
  }()));
  EXPECT_EQ(dropped.size(), 2u);
}

TEST(BucketBySequenceLength, PadToBucketBoundaryAndItsLimit) {
  BucketOptions o = Buckets({3, 6}, {2, 2, 2});
  o.pad_to_bucket_boundary = true;
  const auto batches = Drain(Sequences({1, 2, 4, 3}).BucketBySequenceLength(o));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].Get("seq").shape(), (Shape{2, 2}));
  EXPECT_EQ(batches[1].Get("seq").shape(), (Shape{2, 5}));
  const std::string error = ErrorText([&] { Drain(Sequences({1, 6}).BucketBySequenceLength(o)); });
  ExpectHas(error, "length 6 is not below the last boundary 6");
  ExpectHas(ErrorText([] {
              Sequences({1}).BucketBySequenceLength(Buckets({3, 2}, {1, 1, 1}));
            }),
            "strictly increasing");
  ExpectHas(ErrorText([] { Sequences({1}).BucketBySequenceLength(Buckets({3}, {1})); }),
            "one batch size per bucket (2 for 1 boundaries), got 1");
}

TEST(BucketBySequenceLength, CountMatchesAndResumeContinuesExactly) {
  std::vector<int64_t> lengths;
  for (int64_t i = 0; i < 97; ++i) lengths.push_back((i * 37) % 23);
  const BucketOptions o = Buckets({4, 9, 15}, {5, 3, 4, 2});
  const Dataset ds = Sequences(lengths).BucketBySequenceLength(o);
  const auto all = Drain(ds);
  std::vector<int64_t> per(4, 0);
  for (const int64_t n : lengths) ++per[static_cast<size_t>(BucketOf(o.boundaries, n))];
  EXPECT_EQ(static_cast<int64_t>(all.size()), BucketedBatches(o, per));
  std::multiset<int64_t> seen;
  for (const Element& b : all) {
    for (const int64_t x : Column(b, "x")) seen.insert(x);
  }
  EXPECT_EQ(seen.size(), lengths.size());
  EXPECT_EQ(*seen.rbegin(), 96);
  // Saved after 7 batches the buckets hold elements.
  for (const size_t cut : {size_t{1}, size_t{7}, all.size() - 1}) {
    ExpectResumesExactly(ds, all, cut, {"x", "seq"});
  }
}

TEST(PackSequences, BlocksAreConvertsPackingAndResumeExactly) {
  const std::vector<int64_t> lengths = {3, 0, 11, 1, 7, 2, 9};
  std::vector<std::vector<int64_t>> docs;
  int64_t stream = 0;
  for (size_t x = 0; x < lengths.size(); ++x) {
    docs.emplace_back();
    for (int64_t i = 0; i < lengths[x]; ++i)
      docs.back().push_back(100 * static_cast<int64_t>(x) + i);
    stream += lengths[x] + 1;
  }
  const PackOptions o{.feature = "seq", .block = 5, .end_id = 999};
  const Dataset ds = Sequences(lengths).PackSequences(o);
  const auto blocks = Drain(ds);
  const text::PackedBlocks ref = text::PackForLanguageModel(docs, 999, 5);
  ASSERT_EQ(static_cast<int64_t>(blocks.size()), ref.count);
  EXPECT_EQ(ref.count, PackedBlocksOf(stream, 5));
  for (size_t b = 0; b < blocks.size(); ++b) {
    const auto in = ref.Input(static_cast<int64_t>(b)),
               target = ref.Target(static_cast<int64_t>(b));
    EXPECT_EQ(Column(blocks[b], "input"), std::vector<int64_t>(in.begin(), in.end())) << b;
    EXPECT_EQ(Column(blocks[b], "target"), std::vector<int64_t>(target.begin(), target.end())) << b;
  }
  // A block has the id of the document its first token comes from.
  EXPECT_EQ(blocks[0].id, 0);
  EXPECT_EQ(blocks[1].id, 2);
  for (const size_t cut : {size_t{1}, size_t{3}}) {
    ExpectResumesExactly(ds, blocks, cut, {"input", "target"});
  }
  ExpectHas(ErrorText([] { Sequences({1}).PackSequences({.feature = "seq", .block = 0}); }),
            "needs a block >= 1");
}

// ---- [data] tokenizer inputs ----

// `calls`: decode (and tokenize) threads; 0 on the consumer's thread.
InputSpec Parse(const std::string& body, int calls = 0) {
  ConfigSchema schema;
  InputSpec spec;
  RegisterDataOptions(schema, "data", &spec);
  schema.ParseString(
      "[data]\nparallel_calls = " + std::to_string(calls) + "\nprefetch = 0\nepochs = 1\n" + body,
      "exp.ini");
  return spec;
}

// Documents of 0..29 words ("w0 w1 ..."), each with its index as the label, as JSON lines.
std::vector<std::string> Documents() {
  std::vector<std::string> docs;
  for (int i = 0; i < 40; ++i) {
    std::string d;
    for (int w = 0; w < (i * 7) % 30; ++w) d += (w ? " w" : "w") + std::to_string(w % 9);
    docs.push_back(d);
  }
  return docs;
}

// Every rank's batches for world = 1..4: each document once, its tokens the lookup of its
// words cut to max_tokens, CountLocalBatches = the batches yielded.
void ExpectEveryDocumentOnce(const InputSpec& spec, const std::vector<std::string>& docs,
                             int64_t pad_id) {
  for (int world = 1; world <= 4; ++world) {
    std::map<int64_t, std::vector<int64_t>> seen;
    for (int rank = 0; rank < world; ++rank) {
      const auto batches = Drain(BuildInputPipeline(spec, rank, world));
      EXPECT_EQ(CountLocalBatches(spec, rank, world), static_cast<int64_t>(batches.size()))
          << "rank " << rank << "/" << world;
      for (const Element& b : batches) {
        const Tensor& tokens = b.Get(kTokensFeature);
        const int64_t rows = tokens.dim(0), width = tokens.dim(1);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t label = b.Get("label").data<int64_t>()[r];
          const int64_t length = b.Get(kLengthFeature).data<int64_t>()[r];
          const int64_t* row = tokens.data<int64_t>() + r * width;
          EXPECT_TRUE(seen.emplace(label, std::vector<int64_t>(row, row + length)).second);
          for (int64_t c = length; c < width; ++c) EXPECT_EQ(row[c], pad_id);
        }
      }
    }
    ASSERT_EQ(seen.size(), docs.size()) << "world " << world;
    for (const auto& [label, ids] : seen) {
      const std::string& d = docs[static_cast<size_t>(label)];
      const int64_t words = d.empty() ? 0 : std::count(d.begin(), d.end(), ' ') + 1;
      ASSERT_EQ(static_cast<int64_t>(ids.size()), std::min<int64_t>(words, 16)) << label;
      for (size_t k = 0; k < ids.size(); ++k) EXPECT_EQ(ids[k], static_cast<int64_t>(k % 9));
    }
  }
}

struct Corpus {
  shardflow::testing::ScratchDir dir{"text_pipeline"};
  std::vector<std::string> docs = Documents();
  std::string vocab;
  Corpus() {
    vocab = (dir / "vocab.txt").string();
    std::string v;
    for (int w = 0; w < 9; ++w) v += "w" + std::to_string(w) + "\n";
    WriteFile(vocab, v);
  }
};

TEST(TextInput, JsonLinesLookupBucketedExactlyOnceAndCounted) {
  Corpus c;
  for (int f = 0; f < 3; ++f) {
    std::string lines;
    for (size_t i = static_cast<size_t>(f); i < c.docs.size(); i += 3) {
      lines += "{\"text\": \"" + c.docs[i] + "\", \"label\": " + std::to_string(i) + "}\n";
    }
    WriteFile((c.dir / ("d" + std::to_string(f) + ".jsonl")).string(), lines);
  }
  const std::string common = "files = " + (c.dir / "*.jsonl").string() +
                             "\nformat = jsonl\njson_schema = text:bytes, label:int64\n"
                             "tokenizer = lookup\nlookup_vocab = " +
                             c.vocab + "\noov_buckets = 2\nmax_tokens = 16\n";
  InputSpec bucketed = Parse(common +
                             "shard_policy = record\nbucket_boundaries = 5, 10\n"
                             "bucket_batch_sizes = 4, 3, 2\n");
  ExpectEveryDocumentOnce(bucketed, c.docs, 9 + 2 + 1);  // words, buckets, end
  // Tokenized on 2 map threads (the tokenizer and its counts are shared): the same batches.
  const std::string bucket_keys =
      "shard_policy = record\nbucket_boundaries = 5, 10\nbucket_batch_sizes = 4, 3, 2\n";
  const auto serial = Drain(BuildInputPipeline(bucketed, 0, 1));
  const auto threaded = Drain(BuildInputPipeline(Parse(common + bucket_keys, 2), 0, 1));
  ASSERT_EQ(threaded.size(), serial.size());
  for (size_t i = 0; i < serial.size(); ++i) {
    EXPECT_EQ(Column(threaded[i], kTokensFeature), Column(serial[i], kTokensFeature)) << i;
  }
  // Batches of one bucket hold lengths of that bucket only; pad_to = max pads them to 16.
  for (const Element& b : Drain(BuildInputPipeline(bucketed, 0, 1))) {
    EXPECT_EQ(b.Get(kTokensFeature).dim(1), 16);
    std::set<int64_t> buckets;
    for (const int64_t n : Column(b, kLengthFeature)) buckets.insert(BucketOf({5, 10}, n));
    EXPECT_EQ(buckets.size(), 1u);
  }
  // Unbucketed, padded to the batch's longest, with a mask.
  InputSpec padded = Parse(common + "batch_size = 6\npad_to = batch\nmask = true\n");
  ExpectEveryDocumentOnce(padded, c.docs, 12);
  const auto batches = Drain(BuildInputPipeline(padded, 0, 1));
  for (const Element& b : batches) {
    const auto lengths = Column(b, kLengthFeature);
    EXPECT_EQ(b.Get(kTokensFeature).dim(1), *std::max_element(lengths.begin(), lengths.end()));
    EXPECT_EQ(b.Get("tokens_mask").shape(), b.Get(kTokensFeature).shape());
  }
  // too_long = fail names the file and the line.
  InputSpec strict = Parse(common + "too_long = fail\nshuffle_buffer = 0\n");
  const std::string error = ErrorText([&] { Drain(BuildInputPipeline(strict, 0, 1)); });
  ExpectHas(error, "tokens, more than max_tokens = 16");
  ExpectHas(error, ".jsonl");
  ExpectHas(error, "data.too_long");
}

TEST(TextInput, TextLinesAndTfrecordBytesOfAnyLength) {
  Corpus c;
  std::string lines;
  for (const std::string& d : c.docs) lines += d + "\n";
  WriteFile((c.dir / "docs.txt").string(), lines);
  const InputSpec text = Parse("files = " + (c.dir / "docs.txt").string() +
                               "\nformat = text\ntokenizer = byte\nmax_tokens = 64\n"
                               "batch_size = 7\nshuffle_buffer = 0\n");
  std::vector<std::string> got;
  for (const Element& b : Drain(BuildInputPipeline(text, 0, 1))) {
    EXPECT_EQ(b.Get(kTokensFeature).shape(), (Shape{b.Get(kTokensFeature).dim(0), 64}));
    for (int64_t r = 0; r < b.Get(kTokensFeature).dim(0); ++r) {
      std::string s;
      const int64_t n = b.Get(kLengthFeature).data<int64_t>()[r];
      for (int64_t k = 0; k < n; ++k) {
        s += static_cast<char>(b.Get(kTokensFeature).data<int64_t>()[r * 64 + k]);
      }
      got.push_back(s);
    }
  }
  ASSERT_EQ(got.size(), c.docs.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], c.docs[i].substr(0, 64));

  {
    io::TFRecordWriter out((c.dir / "docs.tfrecord").string());
    for (size_t i = 0; i < c.docs.size(); ++i) {
      io::ExampleBuilder b;
      b.AddBytes("body", {c.docs[i]}).AddInt64("label", {static_cast<int64_t>(i)});
      out.Write(b.Serialize());
    }
  }
  const std::string tf = "files = " + (c.dir / "docs.tfrecord").string() +
                         "\nfeatures = body:bytes:uint8:*, label:int64:int64:scalar\n"
                         "text_feature = body\nlookup_vocab = " +
                         c.vocab + "\nmax_tokens = 16\n";
  ExpectEveryDocumentOnce(Parse(tf + "tokenizer = lookup\nshard_policy = record\nbatch_size = 5\n"),
                          c.docs, 11);
  // Without a tokenizer a bytes feature of any length cannot be batched: one line naming it.
  const std::string untokenized =
      ErrorText([&] { BuildInputPipeline(Parse(tf + "tokenizer = none\n"), 0, 1); });
  ExpectHas(untokenized, "bytes feature 'body' has any length");
}

TEST(TextInput, PackedLanguageModelBlocksFromJsonLines) {
  Corpus c;
  std::string lines;
  for (const std::string& d : c.docs) lines += "{\"text\": \"" + d + "\"}\n";
  WriteFile((c.dir / "lm.jsonl").string(), lines);
  const InputSpec spec = Parse("files = " + (c.dir / "lm.jsonl").string() +
                               "\nformat = jsonl\njson_schema = text:bytes\ntokenizer = byte\n"
                               "pack = 16\nbatch_size = 3\nshuffle_buffer = 0\n"
                               "shard_policy = record\n");
  // One rank, file order: convert's packing of the same documents (byte ids, end id 256).
  std::vector<std::vector<int64_t>> docs;
  for (const std::string& d : c.docs) docs.emplace_back(d.begin(), d.end());
  const text::PackedBlocks ref = text::PackForLanguageModel(docs, 256, 16);
  std::vector<int64_t> got;
  for (const Element& b : Drain(BuildInputPipeline(spec, 0, 1))) {
    EXPECT_EQ(b.Get("input").dim(1), 16);
    const auto t = Column(b, "target");
    got.insert(got.end(), t.begin(), t.end());
  }
  ASSERT_EQ(static_cast<int64_t>(got.size()), ref.count * 16);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), ref.stream.begin() + 1));
  // Every rank count: the batches each rank yields are the ones it counted.
  for (int world = 1; world <= 4; ++world) {
    for (int rank = 0; rank < world; ++rank) {
      EXPECT_EQ(CountLocalBatches(spec, rank, world),
                static_cast<int64_t>(Drain(BuildInputPipeline(spec, rank, world)).size()))
          << rank << "/" << world;
    }
  }
}

TEST(TextInput, OptionCombinationsNameTheirKey) {
  auto error = [](const std::string& body) {
    return ErrorText(
        [&] { Parse("files = x.jsonl\nformat = jsonl\njson_schema = text:bytes\n" + body); });
  };
  ExpectHas(error("tokenizer = byte\n"), "data.max_tokens");
  ExpectHas(error("tokenizer = byte\nmax_tokens = 8\nbucket_boundaries = 4\n"),
            "data.bucket_batch_sizes");
  ExpectHas(error("tokenizer = byte\nmax_tokens = 8\nbucket_boundaries = 4, 12\n"
                  "bucket_batch_sizes = 1, 2, 3\n"),
            "data.bucket_boundaries");
  ExpectHas(error("tokenizer = byte\nmax_tokens = 8\nbucket_boundaries = 4\n"
                  "bucket_batch_sizes = 1, 2\npad_to = bucket\n"),
            "data.pad_to");
  ExpectHas(error("max_tokens = 8\nbucket_boundaries = 4\nbucket_batch_sizes = 1, 2\n"),
            "buckets need a tokenizer");
  ExpectHas(error("tokenizer = byte\npack = 8\nmax_tokens = 8\n"), "data.pack");
  ExpectHas(
      ErrorText([] { Parse("files = x.h5\nformat = hdf5\ntokenizer = byte\nmax_tokens = 8\n"); }),
      "has no text feature");
}

}  // namespace text_pipeline_test
}  // namespace shardflow::pipeline

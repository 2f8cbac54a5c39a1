// Text documents for a language model (input.format = documents): text files cut into documents
// (input.documents: line | file | a delimiter line such as %, io/text/documents.hpp), tokenized
// (preprocess.tokenizer = byte, io/text/byte_tokenizer.hpp; wordpiece over a BERT vocab.txt,
// io/text/wordpiece.hpp, [SEP] ending documents; or bpe, io/text/bpe.hpp: learned
// from the training documents to preprocess.vocabulary tokens and written as PREFIX.vocab.json +
// PREFIX.merges.txt, or read from preprocess.bpe_vocab and bpe_merges), every document but the
// held-out ones packed into blocks of preprocess.pack tokens with next-token targets
// (io/text/lm_packing.hpp), written as PREFIX-train-SSSSS-of-NNNNN.tfrecord; the held-out
// documents (preprocess.holdout of them, evenly spread: document i when floor((i + 1) h) >
// floor(i h)) packed alike into PREFIX-heldout-*. Example features:
//   input   int64 [T]  the block's tokens
//   target  int64 [T]  the next token of each
//   id      int64      the block's index
// Files are read in sorted name order; every rank reads every document (the corpus is held in
// memory) and writes its own shards, so the files are the same for any rank count. PREFIX.meta.json
// records the counts, the vocabulary, the [data] features line, and the held-out cross-entropy of
// a unigram and a bigram model fitted on the training blocks (nats per token; the baselines a
// trained model is judged against), which rank 0 also prints.
#pragma once

#include "apps/convert/convert_options.hpp"
#include "comm/communicator.hpp"
#include "core/mpi_env.hpp"

namespace shardflow::convert {

// Converts input.files' documents into the train and held-out shards. Collective over `comm`.
int RunDocuments(MpiEnvironment& env, const ConvertOptions& options, comm::Communicator& comm);

}  // namespace shardflow::convert

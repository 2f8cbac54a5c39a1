// cache(memory | file): the first complete pass records every element; later passes replay
// them without touching the input.
//
// Memory: elements (deep copies, so later in-place changes cannot alter the cache) are kept in
// the node, shared by all iterators of the pipeline; a pass that stops early is discarded.
// File: a pass writes `path.tmp`, and on completion renames it to `path`, so a crash never
// leaves a half cache that looks whole. The file starts with a magic, a version and the key:
// the hash of the input's description — file names, sizes and mtimes, and every stage below
// the cache. A later run (or pass) with the same key replays the file; a different key (inputs
// changed, or a different pipeline) logs why, ignores the file and refills it. In-memory tensor
// sources are described by names, dtypes and shapes only, so a file cache over them does not
// notice changed values (use a memory cache there).
// File layout: "SFCACHE1" u64(key) then per element u64(length) + element bytes
// (StateWriter::WriteElement encoding), then u64(0xFFFFFFFFFFFFFFFF) u64(count) as trailer.
// State: a replaying iterator saves its element index; a filling iterator saves its input's
// state and, when restored, finishes the pass without writing (the cache fills next pass).
#include <cstdio>
#include <fstream>

#include "core/logging.hpp"
#include "core/thread_annotations.hpp"
#include "io/pipeline/nodes.hpp"
#include "io/pipeline/stage_error.hpp"

namespace shardflow::pipeline {
namespace {

constexpr char kMagic[] = "SFCACHE1";
constexpr uint64_t kTrailer = ~uint64_t{0};

Element DeepCopy(const Element& e) {
  Element c;
  c.id = e.id;
  c.where = e.where;
  for (const auto& [name, t] : e.features) c.features.emplace_back(name, t.Clone());
  return c;
}

struct MemoryCache {
  Mutex mu;
  bool complete GUARDED_BY(mu) = false;
  std::vector<Element> elements GUARDED_BY(mu);
};

class CacheNode : public DatasetNode {
 public:
  CacheNode(NodePtr input, std::string path)
      : input_(std::move(input)),
        path_(std::move(path)),
        key_(HashString(input_->Describe())),
        memory_(std::make_shared<MemoryCache>()) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override { return "cache<-" + input_->Describe(); }
  int64_t Cardinality() const override { return input_->Cardinality(); }

  NodePtr input_;
  std::string path_;
  uint64_t key_;
  std::shared_ptr<MemoryCache> memory_;
};

// Reads a complete cache file; returns false (with the reason) when absent, stale or partial.
bool ValidCacheFile(const std::string& path, uint64_t key, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = "no cache file yet";
    return false;
  }
  std::string header(16, '\0');
  in.read(header.data(), 16);
  if (!in || header.compare(0, 8, kMagic, 8) != 0) {
    *why = "not a shardflow cache file";
    return false;
  }
  StateReader r(header);
  r.ReadU64();  // magic
  if (r.ReadU64() != key) {
    *why = "inputs or pipeline changed since the cache was written";
    return false;
  }
  return true;
}

class CacheIterator : public SequentialIterator {
 public:
  CacheIterator(const IteratorContext& ctx, const CacheNode* node)
      : SequentialIterator(ctx, "cache"), node_(node), ctx_(ctx) {
    if (node_->path_.empty()) {
      MutexLock lock(node_->memory_->mu);
      replay_ = node_->memory_->complete;
    } else {
      std::string why;
      replay_ = ValidCacheFile(node_->path_, node_->key_, &why);
      if (!replay_ && why != "no cache file yet") {
        SF_LOG(Info) << "cache " << node_->path_ << " refilled: " << why;
      }
    }
    if (!replay_) {
      input_ = node_->input_->MakeIterator(ctx);
      writing_ = true;
    }
  }
  ~CacheIterator() override {
    if (out_.is_open()) {
      out_.close();
      std::remove(TempPath().c_str());
    }
  }

  bool NextImpl(Element* out) override {
    if (replay_) return Replay(out);
    if (!Pull(input_.get(), out)) {
      if (writing_) Commit();
      return false;
    }
    if (writing_) Record(*out);
    return true;
  }

  void Save(StateWriter* w) override {
    w->WriteTag("cache");
    w->WriteBool(replay_);
    if (replay_) {
      w->WriteI64(index_);
    } else {
      input_->Save(w);
    }
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("cache");
    const bool replay = r->ReadBool();
    if (replay) {
      if (!replay_) {
        throw Error(ErrorCode::kInvalidArgument,
                    "stage 'cache': the saved state replays a cache that no longer exists",
                    {.file = node_->path_});
      }
      const int64_t target = r->ReadI64();
      Element skip;
      while (index_ < target && Replay(&skip)) {
      }
    } else {
      replay_ = false;
      writing_ = false;  // a partial pass cannot complete the cache
      if (out_.is_open()) {
        out_.close();
        std::remove(TempPath().c_str());
      }
      memory_fill_.clear();
      if (!input_) input_ = node_->input_->MakeIterator(ctx_);
      input_->Restore(r);
    }
  }

 private:
  std::string TempPath() const { return node_->path_ + ".tmp"; }

  bool Replay(Element* out) {
    if (node_->path_.empty()) {
      MutexLock lock(node_->memory_->mu);
      if (index_ >= static_cast<int64_t>(node_->memory_->elements.size())) return false;
      *out = node_->memory_->elements[index_++];
      return true;
    }
    if (!in_.is_open()) {
      in_.open(node_->path_, std::ios::binary);
      in_.seekg(16);
    }
    char len_bytes[8];
    in_.read(len_bytes, 8);
    if (!in_) {
      throw Error(ErrorCode::kDataLoss, "stage 'cache': cache file is truncated",
                  {.file = node_->path_, .record = index_, .hint = "delete it to rebuild"});
    }
    const std::string len_field(len_bytes, 8);
    StateReader lr(len_field);
    const uint64_t len = lr.ReadU64();
    if (len == kTrailer) return false;
    std::string bytes(len, '\0');
    in_.read(bytes.data(), static_cast<std::streamsize>(len));
    if (!in_) {
      throw Error(ErrorCode::kDataLoss, "stage 'cache': cache file is truncated",
                  {.file = node_->path_, .record = index_, .hint = "delete it to rebuild"});
    }
    StateReader er(bytes);
    *out = er.ReadElement();
    ++index_;
    return true;
  }

  void Record(const Element& e) {
    if (node_->path_.empty()) {
      memory_fill_.push_back(DeepCopy(e));
      return;
    }
    OpenOut();
    StateWriter ew;
    ew.WriteElement(e);
    StateWriter lw;
    lw.WriteU64(ew.data().size());
    out_.write(lw.data().data(), 8);
    out_.write(ew.data().data(), static_cast<std::streamsize>(ew.data().size()));
    ++written_;
  }

  void OpenOut() {
    if (!out_.is_open()) {
      out_.open(TempPath(), std::ios::binary | std::ios::trunc);
      if (!out_) {
        throw Error(ErrorCode::kIo, "stage 'cache': cannot create the cache file",
                    {.file = TempPath()});
      }
      StateWriter h;
      h.WriteU64(0);
      h.WriteU64(node_->key_);
      std::string header = h.Release();
      header.replace(0, 8, kMagic, 8);
      out_.write(header.data(), static_cast<std::streamsize>(header.size()));
    }
  }

  void Commit() {
    writing_ = false;
    if (node_->path_.empty()) {
      MutexLock lock(node_->memory_->mu);
      if (!node_->memory_->complete) {
        node_->memory_->elements = std::move(memory_fill_);
        node_->memory_->complete = true;
      }
      return;
    }
    OpenOut();  // an empty input still gets a (header and trailer only) file
    StateWriter t;
    t.WriteU64(kTrailer);
    t.WriteU64(written_);
    out_.write(t.data().data(), 16);
    out_.close();
    if (!out_ || std::rename(TempPath().c_str(), node_->path_.c_str()) != 0) {
      throw Error(ErrorCode::kIo, "stage 'cache': cannot write the cache file",
                  {.file = node_->path_});
    }
  }

  const CacheNode* node_;
  IteratorContext ctx_;
  std::unique_ptr<Iterator> input_;
  bool replay_ = false, writing_ = false;
  int64_t index_ = 0, written_ = 0;
  std::vector<Element> memory_fill_;
  std::ofstream out_;
  std::ifstream in_;
};

std::unique_ptr<Iterator> CacheNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<CacheIterator>(ctx, this);
}

}  // namespace

NodePtr MakeCacheNode(NodePtr input, const std::string& path) {
  return std::make_shared<CacheNode>(std::move(input), path);
}

}  // namespace shardflow::pipeline

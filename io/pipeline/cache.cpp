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
// File layout (little-endian): header "SFCACHE2" u64(key) i64(fill epoch) u32(crc32c of those
// 24 bytes) u32(0); then blocks of whole elements, each u64(payload bytes) u64(elements)
// u32(crc32c of the payload) u32(crc32c of the 20 bytes before), payload = per element
// u64(length) + element bytes (StateWriter::WriteElement encoding); then a trailer block with
// u64(0xFFFFFFFFFFFFFFFF) as its payload size and the element total as its count. Every block
// is checked as it is replayed: damage (a flipped byte, a truncated or foreign file) is never
// replayed. It is a data-loss error naming the file, offset and element, or, when the node was
// made with refill_damaged (data.on_corrupt = skip), a warning and a refill from the input.
// State: a replaying iterator saves its element index and the epoch its cache was filled in; a
// filling iterator saves its input's state and, when restored, finishes the pass without
// writing (the cache fills next pass). Restoring a replaying state where the cache is gone (a
// memory cache in a new process, a deleted file) refills it first with one pass of a fresh
// input iterator of the fill epoch, which yields what the cache held. Every fill runs its input
// as the first pass (epoch 0) does, so a pass that fills late yields what the first would have.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/logging.hpp"
#include "core/thread_annotations.hpp"
#include "io/crc32c.hpp"
#include "io/pipeline/nodes.hpp"
#include "io/pipeline/stage_error.hpp"

namespace shardflow::pipeline {
namespace {

constexpr char kMagic[] = "SFCACHE2";
constexpr char kOldMagic[] = "SFCACHE1";
constexpr uint64_t kTrailer = ~uint64_t{0};
constexpr size_t kHeaderBytes = 32;
constexpr size_t kBlockHeaderBytes = 24;
constexpr size_t kBlockTarget = size_t{1} << 20;  // payload bytes per block (whole elements)

Element DeepCopy(const Element& e) {
  Element c;
  c.id = e.id;
  c.where = e.where;
  for (const auto& [name, t] : e.features) c.features.emplace_back(name, t.Clone());
  return c;
}

uint64_t U64At(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint32_t U32At(const char* p) {  // four bytes only: a CRC may end its header
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
void PutU64(std::string* s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void PutU32(std::string* s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

struct MemoryCache {
  Mutex mu;
  bool complete GUARDED_BY(mu) = false;
  int64_t fill_epoch GUARDED_BY(mu) = 0;
  std::vector<Element> elements GUARDED_BY(mu);
};

class CacheNode : public DatasetNode {
 public:
  CacheNode(NodePtr input, std::string path, bool refill_damaged)
      : input_(std::move(input)),
        path_(std::move(path)),
        refill_damaged_(refill_damaged),
        key_(HashString(input_->Describe())),
        memory_(std::make_shared<MemoryCache>()) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override { return "cache<-" + input_->Describe(); }
  int64_t Cardinality() const override { return input_->Cardinality(); }

  NodePtr input_;
  std::string path_;
  bool refill_damaged_;
  uint64_t key_;
  std::shared_ptr<MemoryCache> memory_;
};

// Checks a cache file's header; returns false (with the reason) when absent, stale or not a
// cache of this version. Sets *fill_epoch when valid.
bool ValidCacheFile(const std::string& path, uint64_t key, int64_t* fill_epoch, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = "no cache file yet";
    return false;
  }
  char h[kHeaderBytes];
  in.read(h, kHeaderBytes);
  if (in && std::string(h, 8) == kOldMagic) {
    *why = "written by an older shardflow (no checksums)";
    return false;
  }
  if (!in || std::string(h, 8) != kMagic || io::crc32c::Value(h, 24) != U32At(h + 24)) {
    *why = "not a shardflow cache file, or its header is damaged";
    return false;
  }
  if (U64At(h + 8) != key) {
    *why = "inputs or pipeline changed since the cache was written";
    return false;
  }
  *fill_epoch = static_cast<int64_t>(U64At(h + 16));
  return true;
}

class CacheIterator : public SequentialIterator {
 public:
  CacheIterator(const IteratorContext& ctx, const CacheNode* node)
      : SequentialIterator(ctx, "cache"), node_(node), ctx_(ctx) {
    if (node_->path_.empty()) {
      MutexLock lock(node_->memory_->mu);
      replay_ = node_->memory_->complete;
      if (replay_) fill_epoch_ = node_->memory_->fill_epoch;
    } else {
      std::string why;
      replay_ = ValidCacheFile(node_->path_, node_->key_, &fill_epoch_, &why);
      if (!replay_ && why != "no cache file yet") {
        SF_LOG(Info) << "cache " << node_->path_ << " refilled: " << why;
      }
    }
    if (!replay_) {
      input_ = node_->input_->MakeIterator(FillContext());
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

  // Replaying: 2 + fill epoch in place of the flag (states saved before the fill epoch was
  // recorded hold 1, read as epoch 0), then the element index.
  void Save(StateWriter* w) override {
    w->WriteTag("cache");
    w->WriteU64(replay_ ? 2 + static_cast<uint64_t>(fill_epoch_) : 0);
    if (replay_) {
      w->WriteI64(index_);
    } else {
      input_->Save(w);
    }
  }
  void Restore(StateReader* r) override {
    r->ExpectTag("cache");
    const uint64_t flag = r->ReadU64();
    if (flag != 0) {
      const int64_t target = r->ReadI64();
      if (!replay_) {
        fill_epoch_ = flag >= 2 ? static_cast<int64_t>(flag - 2) : 0;
        Refill("resuming a pass that replays it");
      }
      SkipTo(target);
    } else {
      replay_ = false;
      writing_ = false;  // a partial pass cannot complete the cache
      if (out_.is_open()) {
        out_.close();
        std::remove(TempPath().c_str());
      }
      memory_fill_.clear();
      if (!input_) input_ = node_->input_->MakeIterator(FillContext());
      input_->Restore(r);
    }
  }

 private:
  std::string TempPath() const { return node_->path_ + ".tmp"; }

  IteratorContext FillContext() const {
    IteratorContext fill_ctx = ctx_;
    fill_ctx.epoch = fill_epoch_;
    return fill_ctx;
  }

  void SkipTo(int64_t target) {
    Element skip;
    while (index_ < target && Replay(&skip)) {
    }
  }

  // Fills the cache again from one complete pass of a fresh input iterator of the fill epoch,
  // then replays from its start.
  void Refill(const std::string& why) {
    SF_LOG(Info) << "cache" << (node_->path_.empty() ? "" : " " + node_->path_)
                 << ": refilling from its input (" << why << ")";
    input_ = node_->input_->MakeIterator(FillContext());
    writing_ = true;
    memory_fill_.clear();
    written_ = 0;
    Element e;
    while (Pull(input_.get(), &e)) Record(e);
    Commit();
    input_.reset();
    if (in_.is_open()) in_.close();
    block_.clear();
    block_at_ = 0;
    replay_ = true;
    index_ = 0;
  }

  bool Replay(Element* out) {
    if (node_->path_.empty()) {
      MutexLock lock(node_->memory_->mu);
      if (index_ >= static_cast<int64_t>(node_->memory_->elements.size())) return false;
      *out = node_->memory_->elements[index_++];
      return true;
    }
    if (block_at_ == block_.size() && !ReadBlock()) return false;
    // The block's element lengths were checked when it was read.
    const uint64_t len = U64At(block_.data() + block_at_);
    const std::string bytes = block_.substr(block_at_ + 8, len);
    block_at_ += 8 + len;
    StateReader er(bytes);
    *out = er.ReadElement();
    ++index_;
    return true;
  }

  // Reads and checks the next block into block_; false at the trailer. Damage refills the
  // cache (refill_damaged) and reads the block holding index_ from the new file, or throws.
  bool ReadBlock() {
    if (!in_.is_open()) {
      in_.open(node_->path_, std::ios::binary);
      in_.seekg(static_cast<std::streamoff>(kHeaderBytes));
      file_bytes_ = std::filesystem::file_size(node_->path_);
    }
    const uint64_t at = static_cast<uint64_t>(in_.tellg());
    std::string why;
    uint64_t count = 0;
    if (ReadCheckedBlock(at, &count, &why)) return true;
    if (why.empty()) return false;  // the trailer
    const std::string what = "cache file is damaged: " + why;
    if (!node_->refill_damaged_) {
      throw Error(ErrorCode::kDataLoss, "stage 'cache': " + what,
                  {.file = node_->path_,
                   .offset = at,
                   .record = index_,
                   .hint = "delete it to rebuild it, or data.on_corrupt = skip refills it"});
    }
    SF_LOG(Warn) << "stage 'cache': " << what << " [file=" << node_->path_ << " offset=" << at
                 << " record=" << index_ << "]; refilling it";
    const int64_t target = index_;
    Refill("it was damaged");
    SkipTo(target);
    return block_at_ < block_.size() || ReadBlock();
  }

  // Reads the block at `at` into block_ (block_at_ = 0). Returns false with *why empty at the
  // trailer, or with *why set when the block is damaged.
  bool ReadCheckedBlock(uint64_t at, uint64_t* count, std::string* why) {
    block_.clear();
    block_at_ = 0;
    char h[kBlockHeaderBytes];
    in_.read(h, kBlockHeaderBytes);
    if (!in_) return *why = "it ends inside a block header (truncated)", false;
    if (io::crc32c::Value(h, 20) != U32At(h + 20))
      return *why = "a block header fails its CRC", false;
    const uint64_t bytes = U64At(h);
    *count = U64At(h + 8);
    if (bytes == kTrailer) {
      if (*count != static_cast<uint64_t>(index_)) *why = "the trailer's element count differs";
      return false;
    }
    if (bytes > file_bytes_ - at - kBlockHeaderBytes) {
      return *why = "a block runs past the end of the file (truncated)", false;
    }
    block_.resize(bytes);
    in_.read(block_.data(), static_cast<std::streamsize>(bytes));
    if (!in_) return *why = "it ends inside a block (truncated)", false;
    if (io::crc32c::Value(block_.data(), bytes) != U32At(h + 16)) {
      return *why = "a block's data fails its CRC", false;
    }
    uint64_t seen = 0;
    for (uint64_t p = 0; p < bytes; ++seen) {
      if (bytes - p < 8 || U64At(block_.data() + p) > bytes - p - 8) {
        return *why = "a block's element lengths do not add up", false;
      }
      p += 8 + U64At(block_.data() + p);
    }
    if (seen != *count || seen == 0) return *why = "a block's element count differs", false;
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
    PutU64(&pending_, ew.data().size());
    pending_ += ew.data();
    ++pending_count_;
    ++written_;
    if (pending_.size() >= kBlockTarget) FlushBlock();
  }

  void WriteBlock(uint64_t bytes, uint64_t count, const std::string& payload) {
    std::string h;
    PutU64(&h, bytes);
    PutU64(&h, count);
    PutU32(&h, io::crc32c::Value(payload.data(), payload.size()));
    PutU32(&h, io::crc32c::Value(h.data(), h.size()));
    out_.write(h.data(), static_cast<std::streamsize>(h.size()));
    out_.write(payload.data(), static_cast<std::streamsize>(payload.size()));
  }

  void FlushBlock() {
    if (pending_count_ == 0) return;
    WriteBlock(pending_.size(), pending_count_, pending_);
    pending_.clear();
    pending_count_ = 0;
  }

  void OpenOut() {
    if (out_.is_open()) return;
    const std::filesystem::path folder = std::filesystem::path(node_->path_).parent_path();
    std::error_code ignored;  // a folder that cannot be made fails the open below
    if (!folder.empty()) std::filesystem::create_directories(folder, ignored);
    errno = 0;
    out_.open(TempPath(), std::ios::binary | std::ios::trunc);
    if (!out_) {
      throw Error(ErrorCode::kIo,
                  std::string("stage 'cache': cannot create the cache file: ") +
                      (errno != 0 ? std::strerror(errno) : "open failed"),
                  {.file = TempPath()});
    }
    std::string header(kMagic, 8);
    PutU64(&header, node_->key_);
    PutU64(&header, static_cast<uint64_t>(fill_epoch_));
    PutU32(&header, io::crc32c::Value(header.data(), header.size()));
    PutU32(&header, 0);
    out_.write(header.data(), static_cast<std::streamsize>(header.size()));
    pending_.clear();
    pending_count_ = 0;
  }

  void Commit() {
    writing_ = false;
    if (node_->path_.empty()) {
      MutexLock lock(node_->memory_->mu);
      if (!node_->memory_->complete) {
        node_->memory_->elements = std::move(memory_fill_);
        node_->memory_->fill_epoch = fill_epoch_;
        node_->memory_->complete = true;
      }
      return;
    }
    OpenOut();  // an empty input still gets a (header and trailer only) file
    FlushBlock();
    WriteBlock(kTrailer, static_cast<uint64_t>(written_), "");
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
  // The epoch the input runs as when it fills the cache: always the first pass's (0), so a map
  // below the cache that depends on the epoch yields the same elements whichever pass fills it
  // (a resumed run fills it a pass late). Saved states carry it.
  int64_t fill_epoch_ = 0;
  std::vector<Element> memory_fill_;
  std::ofstream out_;
  std::string pending_;  // the block being written
  uint64_t pending_count_ = 0;
  std::ifstream in_;
  uint64_t file_bytes_ = 0;
  std::string block_;  // the block being replayed, checked
  size_t block_at_ = 0;
};

std::unique_ptr<Iterator> CacheNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<CacheIterator>(ctx, this);
}

}  // namespace

NodePtr MakeCacheNode(NodePtr input, const std::string& path, bool refill_damaged) {
  return std::make_shared<CacheNode>(std::move(input), path, refill_damaged);
}

std::string RankCacheFile(const std::string& path, int rank, int num_ranks) {
  return path + ".rank" + std::to_string(rank) + "-of-" + std::to_string(num_ranks);
}

}  // namespace shardflow::pipeline

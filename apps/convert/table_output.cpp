#include "apps/convert/table_output.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "apps/convert/shard_plan.hpp"
#include "apps/convert/table_input.hpp"
#include "core/logging.hpp"
#include "core/progress.hpp"
#include "io/example.hpp"
#include "io/tfrecord_writer.hpp"
#include "io/vocabulary_file.hpp"

namespace shardflow::convert {
namespace {

namespace fs = std::filesystem;
using pipeline::CsvColumnType;

bool HasOwnId(const pipeline::CsvSourceOptions& o) {
  for (const auto& c : o.columns) {
    if (c.name == "id" && c.type == CsvColumnType::kInt64) return true;
  }
  return false;
}

// Per string column: value -> vocabulary index.
using Indices = std::vector<std::unordered_map<std::string, int64_t>>;

void BuildExample(const TableInput& in, const Indices& indices, const pipeline::Element& e,
                  int64_t id, io::ExampleBuilder* b) {
  b->Clear();
  for (size_t i = 0; i < in.options.columns.size(); ++i) {
    const auto& spec = in.options.columns[i];
    const Tensor& t = e.features[i].second;
    switch (spec.type) {
      case CsvColumnType::kString: {
        const std::string value(static_cast<const char*>(t.raw_data()), t.byte_size());
        b->AddInt64(spec.name, {indices[i].at(value)});
        break;
      }
      case CsvColumnType::kInt64:
        b->AddInt64(spec.name, {t.data<int64_t>()[0]});
        break;
      case CsvColumnType::kFloat32:
        b->AddFloat(spec.name, {t.data<float>()[0]});
        break;
      case CsvColumnType::kFloat64:
        b->AddFloat(spec.name, {static_cast<float>(t.data<double>()[0])});
        break;
    }
  }
  if (!HasOwnId(in.options)) b->AddInt64("id", {id});
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw Error(ErrorCode::kIo, "cannot write", {.file = path});
}

void WriteSideFiles(const ConvertOptions& o, const TableInput& in, const ShardPlan& plan) {
  io::WriteTableStats(o.out_path + ".stats.json", in.stats);
  for (const auto& c : in.stats.columns) {
    if (!c.categorical) continue;
    io::WriteVocabularyFile(o.out_path + ".vocab." + c.name + ".txt", c.Vocabulary());
  }
  nlohmann::json meta{{"kind", "table"},
                      {"records", plan.records()},
                      {"shards", plan.shards()},
                      {"compression", o.compression},
                      {"source", in.source->FormatDescription()},
                      {"features", TableFeaturesLine(o)},
                      {"stats", fs::path(o.out_path + ".stats.json").filename().string()}};
  nlohmann::json shards = nlohmann::json::array();
  for (int64_t s = 0; s < plan.shards(); ++s) {
    shards.push_back(
        {{"file",
          fs::path(ShardFileName(o.out_path, s, plan.shards(), o.compression)).filename().string()},
         {"first_id", plan.ShardRecords(s).begin},
         {"records", plan.ShardRecords(s).size()}});
  }
  meta["files"] = shards;
  WriteText(o.out_path + ".meta.json", meta.dump(2) + "\n");
}

}  // namespace

std::string TableFeaturesLine(const ConvertOptions& o) {
  const auto columns = pipeline::ParseCsvColumns(o.table_columns, "input.columns");
  std::string line;
  for (const auto& c : columns) {
    if (!line.empty()) line += ", ";
    const bool is_float = c.type == CsvColumnType::kFloat32 || c.type == CsvColumnType::kFloat64;
    line += c.name + (is_float ? ":float:float32:scalar" : ":int64:int64:scalar");
  }
  bool own_id = false;
  for (const auto& c : columns)
    own_id = own_id || (c.name == "id" && c.type == CsvColumnType::kInt64);
  if (!own_id) line += ", id:int64:int64:scalar";
  return line;
}

int RunTable(MpiEnvironment& env, const ConvertOptions& o, comm::Communicator& comm) {
  TableInput in = OpenTableInput(o);
  GatherTableStats(comm, o.categorical, &in);
  const size_t chunks = in.chunks.size();
  std::vector<int64_t> first(chunks + 1, 0);  // global id of each chunk's first record
  for (size_t c = 0; c < chunks; ++c) first[c + 1] = first[c] + in.chunk_rows[c];
  const int64_t n = o.limit >= 0 ? std::min(o.limit, first[chunks]) : first[chunks];
  const ShardPlan plan(n, o.shards, env.rank(), env.size());
  const io::RowRange mine = plan.MyRecords();
  SF_LOG0(Info) << "converting " << n << " rows (table, " << in.source->Files().size() << " files, "
                << chunks << " chunks) into " << plan.shards() << " shards on " << env.size()
                << " ranks";
  Indices indices(in.options.columns.size());
  for (size_t i = 0; i < in.options.columns.size(); ++i) {
    if (in.options.columns[i].type != CsvColumnType::kString) continue;
    const auto vocab = in.stats.columns[i].Vocabulary();
    for (size_t k = 0; k < vocab.size(); ++k) indices[i][vocab[k]] = static_cast<int64_t>(k);
  }
  RecordCursor cursor(first, mine.begin, [&](size_t c) {
    return in.source->Open(in.chunks[c].file, in.chunks[c].range);
  });
  ProgressReporter progress(mine.size(), {.label = "convert", .unit = "rows"});
  io::ExampleBuilder builder;
  std::string serialized;
  pipeline::Element e;
  for (int64_t s = plan.MyShards().begin; s < plan.MyShards().end; ++s) {
    io::TFRecordWriter writer(ShardFileName(o.out_path, s, plan.shards(), o.compression));
    const io::RowRange ids = plan.ShardRecords(s);
    for (int64_t i = ids.begin; i < ids.end; ++i) {
      cursor.Next(&e);
      BuildExample(in, indices, e, i, &builder);
      serialized.clear();
      builder.SerializeTo(&serialized);
      writer.Write(serialized);
      progress.Advance(1, 1);
    }
    writer.Close();
  }
  progress.Finish();
  if (env.rank() == 0) {
    WriteSideFiles(o, in, plan);
    std::printf("table: %lld rows; read the shards with\n  features = %s\n  assemble_stats = %s\n",
                static_cast<long long>(n), TableFeaturesLine(o).c_str(),
                (o.out_path + ".stats.json").c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace shardflow::convert

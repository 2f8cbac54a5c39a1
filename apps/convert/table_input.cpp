#include "apps/convert/table_input.hpp"

#include <algorithm>

#include "comm/collectives.hpp"
#include "io/pipeline/list_files.hpp"
#include "io/pipeline/sources/csv_options.hpp"
#include "io/pipeline/sources/json_lines_source.hpp"

namespace shardflow::convert {
namespace {

// Chunk JSONs travel concatenated, separated by this byte (escaped inside JSON strings).
constexpr char kSeparator = '\x1e';

// The statistics of one chunk: every column of every record whose first byte lies in it.
io::TableStats ChunkStats(const TableInput& in, const TableChunk& chunk,
                          const std::vector<std::string>& categorical) {
  io::TableStats stats;
  for (const auto& c : in.options.columns) {
    io::ColumnStats s{.name = c.name, .type = pipeline::CsvColumnTypeName(c.type)};
    s.categorical = c.type == pipeline::CsvColumnType::kString ||
                    std::find(categorical.begin(), categorical.end(), c.name) != categorical.end();
    stats.columns.push_back(std::move(s));
  }
  auto reader = in.source->Open(chunk.file, chunk.range);
  pipeline::Element e;
  while (reader->Next(&e)) {
    ++stats.rows;
    for (size_t i = 0; i < stats.columns.size(); ++i) {
      io::ColumnStats& s = stats.columns[i];
      const Tensor& t = e.features[i].second;
      if (e.features.size() > stats.columns.size() && e.features.back().second.data<uint8_t>()[i]) {
        ++s.missing;  // the CSV source's kCsvMissingFeature: this value is the column's default
      }
      switch (t.dtype()) {
        case DType::kUInt8:
          ++s.values[std::string(static_cast<const char*>(t.raw_data()), t.byte_size())];
          break;
        case DType::kInt64: {
          const int64_t v = t.data<int64_t>()[0];
          s.numeric.Add(static_cast<double>(v));
          if (s.categorical) ++s.values[std::to_string(v)];
          break;
        }
        case DType::kFloat32:
          s.numeric.Add(t.data<float>()[0]);
          break;
        default:
          s.numeric.Add(t.data<double>()[0]);
          break;
      }
    }
  }
  return stats;
}

}  // namespace

pipeline::CsvSourceOptions TableCsvOptions(const ConvertOptions& o) {
  pipeline::CsvConfig config;
  config.columns = o.table_columns;
  config.skip_lines = o.header_lines;  // metadata before the header (scikit-learn's CSVs)
  config.header = o.table_header;
  config.column_names = o.column_names;
  config.delimiter = o.delimiter;
  config.na_values = o.na_values;
  return pipeline::MakeCsvSourceOptions(config, {}, io::Compression::kAuto, "input", "");
}

TableInput OpenTableInput(const ConvertOptions& o) {
  TableInput in;
  in.options = TableCsvOptions(o);
  in.options.mark_missing = true;  // counted in the statistics (ChunkStats)
  if (o.table_format == "jsonl") {
    std::vector<pipeline::JsonField> schema;
    for (auto& c : in.options.columns) {
      if (c.default_value) {
        throw Error(ErrorCode::kInvalidArgument,
                    "column '" + c.name + "': defaults apply to CSV tables, not JSON lines",
                    {.key = "input.columns"});
      }
      if (c.type == pipeline::CsvColumnType::kFloat64) c.type = pipeline::CsvColumnType::kFloat32;
      schema.push_back({.name = c.name,
                        .dtype = c.type == pipeline::CsvColumnType::kInt64    ? DType::kInt64
                                 : c.type == pipeline::CsvColumnType::kString ? DType::kUInt8
                                                                              : DType::kFloat32});
    }
    in.source = pipeline::OpenJsonLinesSource(pipeline::ListFiles(o.files),
                                              {.schema = schema, .header_lines = o.header_lines});
  } else {
    in.source =
        std::make_shared<pipeline::CsvStreamSource>(pipeline::ListFiles(o.files), in.options);
  }
  const uint64_t chunk = static_cast<uint64_t>(o.chunk_mb) << 20;
  const auto& files = in.source->Files();
  for (size_t f = 0; f < files.size(); ++f) {
    if (!in.source->SupportsByteRanges()) {
      in.chunks.push_back({.file = f});
      continue;
    }
    const uint64_t size = files[f].size_bytes;
    for (uint64_t begin = 0; begin == 0 || begin < size; begin += chunk) {
      in.chunks.push_back(
          {.file = f, .range = {begin, begin + chunk >= size ? UINT64_MAX : begin + chunk}});
    }
  }
  return in;
}

void GatherTableStats(comm::Communicator& comm, const std::vector<std::string>& categorical,
                      TableInput* in) {
  const size_t n = in->chunks.size();
  const auto p = static_cast<size_t>(comm.size());
  std::string mine;
  in->chunk_rows.assign(n, 0);
  for (size_t c = static_cast<size_t>(comm.rank()); c < n; c += p) {
    const io::TableStats stats = ChunkStats(*in, in->chunks[c], categorical);
    in->chunk_rows[c] = stats.rows;
    mine += io::TableStatsToJson(stats);
    mine += kSeparator;
  }
  comm::AllreduceInt64(comm, in->chunk_rows.data(), n, comm::ReduceOp::kSum);
  const auto blobs = comm::GatherBytes(comm, mine.data(), mine.size());
  std::string merged;
  if (comm.rank() == 0) {
    // Chunk c came from rank c % P as its (c / P)-th JSON: merge in chunk order.
    std::vector<std::vector<std::string>> parts(p);
    for (size_t r = 0; r < p; ++r) {
      const std::string text(blobs[r].begin(), blobs[r].end());
      size_t start = 0;
      for (size_t sep; (sep = text.find(kSeparator, start)) != std::string::npos; start = sep + 1) {
        parts[r].push_back(text.substr(start, sep - start));
      }
    }
    io::TableStats total;
    for (size_t c = 0; c < n; ++c) {
      total.Merge(io::TableStatsFromJson(parts[c % p].at(c / p), "chunk " + std::to_string(c)));
    }
    merged = io::TableStatsToJson(total);
  }
  comm::BroadcastString(comm, &merged);
  in->stats = io::TableStatsFromJson(merged, "merged statistics");
}

}  // namespace shardflow::convert

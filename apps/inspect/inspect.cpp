#include "apps/inspect/inspect.hpp"

#include <algorithm>
#include <cstdio>

#include "apps/inspect/format_handler.hpp"
#include "apps/inspect/json_text.hpp"
#include "core/error.hpp"

namespace shardflow::inspect {

const std::vector<std::unique_ptr<FormatHandler>>& Handlers() {
  static const auto handlers = [] {
    std::vector<std::unique_ptr<FormatHandler>> h;
    // More specific handlers (e.g. HDF5, recognised by its signature) go before TFRecord,
    // which has no magic number and takes every other file.
    h.push_back(MakeHdf5Handler());
    h.push_back(MakeTFRecordHandler());
    return h;
  }();
  return handlers;
}

namespace {

const FormatHandler& HandlerFor(const std::string& path) {
  for (const auto& h : Handlers()) {
    if (h->Handles(path)) return *h;
  }
  throw Error(ErrorCode::kInvalidArgument, "no reader for this file format", {.file = path});
}

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitDataLoss = 3;

int Worse(int a, int b) {
  // Unreadable/usage (2) wins over data loss (3): the report is incomplete.
  if (a == kExitUsage || b == kExitUsage) return kExitUsage;
  return std::max(a, b);
}

int ExitFor(const Error& e) {
  return e.code() == ErrorCode::kDataLoss ? kExitDataLoss : kExitUsage;
}

int RunVerify(const InspectOptions& o, std::ostream& out, std::ostream& err) {
  int rc = kExitOk;
  for (const std::string& file : o.files) {
    try {
      const VerifyReport r = HandlerFor(file).Verify(file);
      if (r.loss) {
        const Status& s = *r.loss;
        if (!s.context().offset && !s.context().key.empty()) {
          out << file << ": data loss in dataset " << s.context().key << ": " << s.message()
              << "\n";
        } else if (!s.context().offset) {
          out << file << ": data loss: " << s.message() << "\n";
        } else {
          out << file << ": data loss at byte " << s.context().offset.value_or(0) << " (record "
              << s.context().record.value_or(-1) << "): " << s.message() << "\n";
        }
        rc = Worse(rc, kExitDataLoss);
      } else {
        out << file << ": ok, " << r.records << " " << r.unit << ", " << r.bytes << " bytes\n";
      }
    } catch (const Error& e) {
      err << "error: " << e.what() << "\n";
      rc = Worse(rc, ExitFor(e) == kExitDataLoss ? kExitDataLoss : kExitUsage);
    }
  }
  return rc;
}

int RunCat(const InspectOptions& o, std::ostream& out, std::ostream& err) {
  int rc = kExitOk;
  for (const std::string& file : o.files) {
    try {
      HandlerFor(file).Cat(file, out);
    } catch (const Error& e) {
      out.flush();
      err << "error: " << e.what() << "\n";
      rc = Worse(rc, ExitFor(e));
    }
  }
  return rc;
}

std::string DatasetSum(const DatasetTotals& d) {
  if (!d.summed) return "";
  return d.is_integer ? std::to_string(d.int_sum) : JsonFloat(d.float_sum);
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

void PrintDatasetsJson(const StatsTotals& t, std::ostream& out) {
  if (t.datasets.empty()) return;
  out << ", \"datasets\": [";
  for (size_t i = 0; i < t.datasets.size(); ++i) {
    const DatasetTotals& d = t.datasets[i];
    out << (i ? ", " : "") << "{\"file\": " << JsonString(d.file)
        << ", \"name\": " << JsonString(d.name) << ", \"dtype\": " << JsonString(d.dtype)
        << ", \"shape\": " << ShapeText(d.shape) << ", \"elements\": " << d.elements;
    if (d.summed) out << ", \"sum\": " << DatasetSum(d);
    out << "}";
  }
  out << "]";
}

void PrintDatasetsText(const StatsTotals& t, std::ostream& out) {
  if (t.datasets.empty()) return;
  char line[512];
  std::snprintf(line, sizeof(line), "%-32s %-8s %-20s %12s %24s\n", "dataset", "dtype", "shape",
                "elements", "sum");
  out << line;
  for (const DatasetTotals& d : t.datasets) {
    const std::string name = t.files > 1 ? d.file + ":" + d.name : d.name;
    std::snprintf(line, sizeof(line), "%-32s %-8s %-20s %12lld %24s\n", name.c_str(),
                  d.dtype.c_str(), ShapeText(d.shape).c_str(), static_cast<long long>(d.elements),
                  d.summed ? DatasetSum(d).c_str() : "-");
    out << line;
  }
}

void PrintStats(const StatsTotals& t, bool json, std::ostream& out) {
  if (json) {
    out << "{\"files\": " << t.files << ", \"records\": " << t.records << ", \"features\": {";
    bool first = true;
    for (const auto& [key, f] : t.features) {
      out << (first ? "" : ", ") << JsonString(key.first)
          << ": {\"kind\": " << JsonString(key.second) << ", \"examples\": " << f.examples
          << ", \"values\": " << f.values;
      if (key.second == "int64") out << ", \"sum\": " << Int128ToString(f.int_sum);
      if (key.second == "float") out << ", \"sum\": " << JsonFloat(f.float_sum);
      if (key.second == "bytes") {
        out << ", \"byte_length\": " << f.byte_length << ", \"byte_sum\": " << f.byte_sum;
      }
      out << "}";
      first = false;
    }
    out << "}";
    PrintDatasetsJson(t, out);
    out << "}\n";
    return;
  }
  out << "files: " << t.files << "\nrecords: " << t.records << "\n";
  PrintDatasetsText(t, out);
  if (!t.datasets.empty() && t.features.empty()) return;
  char line[256];
  std::snprintf(line, sizeof(line), "%-24s %-6s %10s %12s %24s\n", "feature", "kind", "examples",
                "values", "sum");
  out << line;
  for (const auto& [key, f] : t.features) {
    std::string sum;
    if (key.second == "int64") sum = Int128ToString(f.int_sum);
    if (key.second == "float") sum = JsonFloat(f.float_sum);
    if (key.second == "bytes") {
      sum = std::to_string(f.byte_sum) + " (" + std::to_string(f.byte_length) + " bytes)";
    }
    std::snprintf(line, sizeof(line), "%-24s %-6s %10lld %12lld %24s\n", key.first.c_str(),
                  key.second.c_str(), static_cast<long long>(f.examples),
                  static_cast<long long>(f.values), sum.c_str());
    out << line;
  }
}

int RunStats(const InspectOptions& o, std::ostream& out, std::ostream& err) {
  StatsTotals totals;
  int rc = kExitOk;
  for (const std::string& file : o.files) {
    try {
      HandlerFor(file).Stats(file, &totals);
    } catch (const Error& e) {
      err << "error: " << e.what() << "\n";
      rc = Worse(rc, ExitFor(e));
    }
  }
  if (rc == kExitOk) PrintStats(totals, o.json, out);
  return rc;
}

}  // namespace

std::string Usage() {
  return "usage: shardflow-inspect verify FILE...\n"
         "       shardflow-inspect cat FILE...\n"
         "       shardflow-inspect stats [--json] FILE...\n"
         "Files: TFRecord (plain, .gz, .zlib) and HDF5 (by signature or .h5/.hdf5: verify reads\n"
         "every dataset; stats gives dtype, shape and sum per dataset; cat is TFRecord only).\n"
         "Exit: 0 clean, 3 data loss, 2 usage/unreadable.\n";
}

InspectOptions ParseArgs(const std::vector<std::string>& args) {
  InspectOptions o;
  if (args.empty()) throw Error(ErrorCode::kInvalidArgument, "missing command");
  o.command = args[0];
  if (o.command != "verify" && o.command != "cat" && o.command != "stats") {
    throw Error(ErrorCode::kInvalidArgument, "unknown command '" + o.command + "'");
  }
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--json" && o.command == "stats") {
      o.json = true;
    } else if (args[i].size() > 1 && args[i][0] == '-') {
      throw Error(ErrorCode::kInvalidArgument, "unknown flag '" + args[i] + "' for " + o.command);
    } else {
      o.files.push_back(args[i]);
    }
  }
  if (o.files.empty()) throw Error(ErrorCode::kInvalidArgument, "no files given");
  return o;
}

int Run(const InspectOptions& o, std::ostream& out, std::ostream& err) {
  if (o.command == "verify") return RunVerify(o, out, err);
  if (o.command == "cat") return RunCat(o, out, err);
  return RunStats(o, out, err);
}

}  // namespace shardflow::inspect

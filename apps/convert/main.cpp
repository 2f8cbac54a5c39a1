// shardflow-convert: offline conversion of IDX, tables, CSV series, HDF5, text, JSON lines,
// fixed-length records and image folders into TFRecord shards or one HDF5 file, SPMD under
// mpirun (apps/convert/convert.hpp).
#include <cstdio>
#include <cstring>

#include "apps/convert/convert.hpp"
#include "apps/convert/convert_options.hpp"
#include "core/cli.hpp"
#include "core/mpi_env.hpp"

int main(int argc, char** argv) {
  using namespace shardflow;
  convert::ConvertOptions options;
  ConfigSchema schema;
  convert::RegisterConvertOptions(schema, &options);
  AppSpec app("shardflow-convert",
              "converts IDX images, tables (CSV or JSON lines), per-asset CSV series, HDF5 "
              "datasets, text lines, JSON lines, fixed-length records and image folders into "
              "TFRecord shards (or one HDF5 file), SPMD under mpirun");
  return RunMain(
      argc, argv,
      [&](MpiEnvironment& env) {
        for (int i = 1; i < argc; ++i) {
          if (std::strcmp(argv[i], "--") == 0) break;
          if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            if (env.rank() == 0) {
              std::fputs((CommandLineHelp(schema, app) + convert::ConvertHelpEpilogue()).c_str(),
                         stdout);
              std::fflush(stdout);
            }
            throw EarlyExit{0};
          }
        }
        ParseCommandLine(argc, argv, schema, app);
      },
      [&](MpiEnvironment& env) { return convert::Run(env, options); });
}

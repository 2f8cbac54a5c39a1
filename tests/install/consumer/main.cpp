// A downstream program built against an installed shardflow.
#include <shardflow/core/error.hpp>  // the installed layout: <prefix>/include/shardflow/core/...

#include <cstdio>

int main() {
  const shardflow::Error e(shardflow::ErrorCode::kDataLoss, "bad CRC", {.file = "x", .offset = 3});
  std::printf("consumer: %s\n", e.what());
  return 0;
}

// libFuzzer target: shardflow-serve's HTTP/1.1 request parser (apps/serve/http_message.hpp) on
// arbitrary bytes, up to four pipelined requests. The first byte says how the bytes arrive: all
// at once, or in pieces of 1 to 255 bytes, as a connection's reads cut them. Whatever the
// pieces, the parser must see the same requests (method, target, path, headers, body,
// keep-alive) and the same refusals (status) as when everything arrives at once, never consume
// more than it was given, and never crash.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "apps/serve/http_message.hpp"

using shardflow::serve::HttpRequest;
using shardflow::serve::RequestParser;

namespace {

std::string Summary(const HttpRequest& r) {
  std::string s = r.method + '\n' + r.target + '\n' + r.path + '\n' +
                  std::to_string(r.minor_version) + (r.keep_alive ? " keep\n" : " close\n");
  for (const auto& [name, value] : r.headers) s += name + ": " + value + '\n';
  return s + std::to_string(r.body.size()) + '\n' + r.body;
}

std::vector<std::string> ParseAll(std::string_view input, size_t piece) {
  RequestParser parser(/*max_body_bytes=*/1 << 16);
  std::string buffer;
  size_t fed = 0;
  std::vector<std::string> out;
  while (out.size() < 4) {
    size_t consumed = 0;
    const RequestParser::Status s = parser.Feed(buffer, &consumed);
    if (consumed > buffer.size()) std::abort();
    buffer.erase(0, consumed);
    if (s == RequestParser::Status::kComplete) {
      out.push_back(Summary(parser.TakeRequest()));
      continue;
    }
    if (s == RequestParser::Status::kError) {
      const int status = parser.error().status;
      if (status < 400 || status > 505 || parser.error().message.empty()) std::abort();
      out.push_back("error " + std::to_string(status));
      break;
    }
    if (fed == input.size()) {
      out.push_back("need more");
      break;
    }
    const size_t n = piece == 0 ? input.size() - fed : std::min(piece, input.size() - fed);
    buffer.append(input.substr(fed, n));
    fed += n;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (ParseAll(input, 0) != ParseAll(input, data[0] == 0 ? 1 : data[0])) std::abort();
  return 0;
}

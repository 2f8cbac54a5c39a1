// HTTP/1.1 messages for shardflow-serve: an incremental request parser and the response writer.
//
// RequestParser reads one request at a time from a connection's bytes as they arrive: the
// request line and headers (at most kMaxHeaderBytes, ending with an empty line), then the body
// framed by Content-Length or by Transfer-Encoding: chunked. It consumes only the bytes of the
// request it is parsing, so a connection's next (pipelined) request stays in its buffer. The
// Content-Type is not looked at: a body is JSON whatever the header says (TensorFlow Serving
// reads it the same way; curl -d and urllib send application/x-www-form-urlencoded).
// A request that cannot be read gets one error, with the status and a one-line message naming
// what was wrong and where (a malformed request line as soon as that line is whole):
//   400 a malformed request line or header, a Content-Length that is not a byte count (e.g.
//       `bad Content-Length header "abc": expected a decimal byte count`), both
//       Content-Length and Transfer-Encoding, a malformed chunk;
//   413 a body over max_body_bytes, naming both sizes (known from Content-Length before the
//       body is read, or counted while chunks arrive);
//   431 a header block over kMaxHeaderBytes; 501 a transfer coding other than chunked;
//   505 an HTTP version other than 1.0 and 1.1.
// After an error the connection is answered and closed: nothing after it can be framed.
// Thread-safety: none; one parser per connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardflow::serve {

constexpr size_t kMaxHeaderBytes = 64 << 10;

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: path and query
  std::string path;    // the target's path, percent-decoded, without the query
  int minor_version = 1;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  bool keep_alive = true;  // HTTP/1.1 unless "Connection: close"; 1.0 only with keep-alive

  // The first header of that (lower-case) name, or nullptr.
  const std::string* Header(std::string_view lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;  // more headers (Retry-After, ...)
  std::string body;
  bool close = false;  // close the connection after it (the request could not be framed)
};

struct HttpError {
  int status = 400;
  std::string message;
};

class RequestParser {
 public:
  enum class Status { kNeedMore, kComplete, kError };

  explicit RequestParser(int64_t max_body_bytes) : max_body_bytes_(max_body_bytes) {}

  // `data` is the connection's unconsumed input (what earlier calls did not consume, then
  // what arrived since). Consumes from its front what belongs to the current request
  // (*consumed bytes) and says whether the request is complete. After kError it consumes
  // nothing more.
  Status Feed(std::string_view data, size_t* consumed);
  // The complete request; the parser starts on the next one. REQUIRES: Feed said kComplete.
  HttpRequest TakeRequest();
  const HttpError& error() const { return error_; }
  // The target of the request being read ("" before its request line).
  const std::string& target() const { return request_.target; }

  // The headers are read, the body is not, and the client waits for "100 Continue" before it
  // sends the body (Expect: 100-continue).
  bool expects_continue() const {
    return expect_continue_ && phase_ != Phase::kHeaders && phase_ != Phase::kDone &&
           phase_ != Phase::kError;
  }
  // Some bytes of a request were consumed (its headers are read).
  bool started() const { return phase_ != Phase::kHeaders; }

 private:
  enum class Phase { kHeaders, kBody, kChunkSize, kChunkData, kChunkEnd, kTrailers, kDone, kError };

  Status Fail(int status, std::string message);
  Status ParseHead(std::string_view head);
  Status ParseRequestLine(std::string_view line);
  Status ParseHeaderLine(std::string_view line);
  Status Frame();  // decides how the body is framed, once the headers are read
  Status FeedHeaders(std::string_view data, size_t* consumed);
  Status FeedChunked(std::string_view data, size_t* consumed);

  const int64_t max_body_bytes_;
  Phase phase_ = Phase::kHeaders;
  size_t scanned_ = 0;         // header bytes already searched for the end of the headers
  bool line_checked_ = false;  // the request line was checked before the headers' end
  HttpRequest request_;
  int64_t body_left_ = 0;  // kBody and kChunkData: bytes of the body or chunk still to come
  bool chunked_ = false;
  bool expect_continue_ = false;
  HttpError error_;
};

// The status line, headers and body of `response`, with Content-Length, Content-Type and
// "Connection: keep-alive" or "close".
std::string SerializeResponse(const HttpResponse& response, bool keep_alive);
// "OK", "Bad Request", ... ("Error" for a status it does not know).
const char* ReasonPhrase(int status);

}  // namespace shardflow::serve

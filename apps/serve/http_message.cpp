#include "apps/serve/http_message.hpp"

#include <algorithm>
#include <cctype>

namespace shardflow::serve {
namespace {

constexpr size_t kMaxChunkLine = 1024;

// `text` quoted for an error message: at most 60 bytes, control bytes as '?'.
std::string Quoted(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size() && i < 60; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    out.push_back(c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c));
  }
  return out + (text.size() > 60 ? "...\"" : "\"");
}

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::string_view StripCr(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// RFC 9110 token characters (method and header names).
bool IsToken(std::string_view text) {
  if (text.empty()) return false;
  return std::all_of(text.begin(), text.end(), [](char ch) {
    const unsigned char c = static_cast<unsigned char>(ch);
    return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(ch) != std::string::npos;
  });
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The path of a request target (origin form "/p?q" or absolute form "http://h/p?q"),
// percent-decoded, without the query.
std::string TargetPath(std::string_view target) {
  if (const size_t scheme = target.find("://");
      scheme != std::string_view::npos && target.substr(0, 1) != "/") {
    const size_t slash = target.find('/', scheme + 3);
    target = slash == std::string_view::npos ? "/" : target.substr(slash);
  }
  target = target.substr(0, target.find_first_of("?#"));
  std::string path;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == '%' && i + 2 < target.size() && HexValue(target[i + 1]) >= 0 &&
        HexValue(target[i + 2]) >= 0) {
      path.push_back(static_cast<char>(HexValue(target[i + 1]) * 16 + HexValue(target[i + 2])));
      i += 2;
    } else {
      path.push_back(target[i]);
    }
  }
  return path;
}

// A Content-Length value: 1 to 18 decimal digits, or -1.
int64_t ParseLength(std::string_view text) {
  if (text.empty() || text.size() > 18) return -1;
  int64_t n = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace

const std::string* HttpRequest::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

RequestParser::Status RequestParser::Fail(int status, std::string message) {
  phase_ = Phase::kError;
  error_ = HttpError{status, std::move(message)};
  return Status::kError;
}

RequestParser::Status RequestParser::ParseRequestLine(std::string_view line) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target =
      sp2 == std::string_view::npos ? std::string_view() : line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = sp2 == std::string_view::npos ? "" : line.substr(sp2 + 1);
  const size_t scheme = target.find("://");
  const bool target_ok = !target.empty() && (target[0] == '/' || target == "*" ||
                                             (scheme != std::string_view::npos && scheme > 0));
  if (!IsToken(method) || !target_ok || version.find(' ') != std::string_view::npos ||
      version.substr(0, 5) != "HTTP/") {
    return Fail(400,
                "malformed request line " + Quoted(line) + ": expected METHOD TARGET HTTP/1.1");
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return Fail(505, "HTTP version " + Quoted(version) + " not supported: 1.1 or 1.0");
  }
  request_.method = method;
  request_.target = target;
  request_.path = TargetPath(target);
  request_.minor_version = version == "HTTP/1.1" ? 1 : 0;
  return Status::kNeedMore;
}

RequestParser::Status RequestParser::ParseHeaderLine(std::string_view line) {
  if (line.front() == ' ' || line.front() == '\t') {
    return Fail(400, "header line " + Quoted(line) +
                         " continues the previous one (obsolete "
                         "line folding): put each header on one line");
  }
  const size_t colon = line.find(':');
  const std::string_view name = line.substr(0, colon);
  if (colon == std::string_view::npos || !IsToken(name)) {
    return Fail(400, "malformed header line " + Quoted(line) + ": expected NAME: VALUE");
  }
  request_.headers.emplace_back(Lower(name), std::string(Trim(line.substr(colon + 1))));
  return Status::kNeedMore;
}

RequestParser::Status RequestParser::ParseHead(std::string_view head) {
  bool first = true;
  while (!head.empty()) {
    const size_t nl = head.find('\n');
    const std::string_view line = StripCr(head.substr(0, nl));
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    if (line.empty()) break;  // the end of the headers
    const Status s = first ? ParseRequestLine(line) : ParseHeaderLine(line);
    if (s == Status::kError) return s;
    first = false;
  }
  return Frame();
}

RequestParser::Status RequestParser::Frame() {
  request_.keep_alive = request_.minor_version >= 1;
  std::string length_text;
  std::string codings;
  for (const auto& [name, value] : request_.headers) {
    if (name == "connection") {
      const std::string v = Lower(value);
      if (v.find("close") != std::string::npos) request_.keep_alive = false;
      if (v.find("keep-alive") != std::string::npos && request_.minor_version == 0) {
        request_.keep_alive = true;
      }
    } else if (name == "expect") {
      expect_continue_ = Lower(value) == "100-continue";
    } else if (name == "transfer-encoding") {
      codings += (codings.empty() ? "" : ", ") + value;
    } else if (name == "content-length") {
      if (ParseLength(value) < 0) {
        return Fail(
            400, "bad Content-Length header " + Quoted(value) + ": expected a decimal byte count");
      }
      if (!length_text.empty() && ParseLength(length_text) != ParseLength(value)) {
        return Fail(400, "conflicting Content-Length headers " + Quoted(length_text) + " and " +
                             Quoted(value));
      }
      length_text = value;
    }
  }
  if (!codings.empty()) {
    if (!length_text.empty()) {
      return Fail(400, "both Content-Length and Transfer-Encoding headers: send one of them");
    }
    if (Lower(codings) != "chunked") {
      return Fail(501, "Transfer-Encoding " + Quoted(codings) + " not supported: only chunked");
    }
    chunked_ = true;
    phase_ = Phase::kChunkSize;
    return Status::kNeedMore;
  }
  body_left_ = length_text.empty() ? 0 : ParseLength(length_text);
  if (body_left_ > max_body_bytes_) {
    return Fail(413, "request body of " + std::to_string(body_left_) +
                         " bytes (Content-Length) exceeds serve.max_body_bytes (" +
                         std::to_string(max_body_bytes_) + " bytes)");
  }
  request_.body.reserve(static_cast<size_t>(std::min<int64_t>(body_left_, 1 << 20)));
  phase_ = body_left_ > 0 ? Phase::kBody : Phase::kDone;
  return Status::kNeedMore;
}

RequestParser::Status RequestParser::FeedHeaders(std::string_view data, size_t* consumed) {
  // Empty lines before a request line are skipped (RFC 9112, 2.2).
  size_t skip = 0;
  if (scanned_ == 0) {
    while (skip < data.size() && (data[skip] == '\r' || data[skip] == '\n')) ++skip;
  }
  *consumed += skip;
  data.remove_prefix(skip);
  // The request line is checked as soon as it is whole: garbage is refused at once rather than
  // after the rest of a header block that will never come.
  if (!line_checked_) {
    const size_t nl = data.find('\n');
    if (nl != std::string_view::npos && nl <= kMaxHeaderBytes) {
      line_checked_ = true;
      if (ParseRequestLine(StripCr(data.substr(0, nl))) == Status::kError) return Status::kError;
    }
  }
  size_t pos = scanned_;
  for (;;) {
    const size_t nl = data.find('\n', pos);
    if (nl == std::string_view::npos || nl + 1 >= data.size()) {
      scanned_ = nl == std::string_view::npos ? data.size() : nl;
      break;
    }
    size_t end = 0;  // one past the blank line that ends the headers
    if (data[nl + 1] == '\n') end = nl + 2;
    if (data[nl + 1] == '\r') {
      if (nl + 2 >= data.size()) {
        scanned_ = nl;
        break;
      }
      if (data[nl + 2] == '\n') end = nl + 3;
    }
    if (end == 0) {
      pos = nl + 1;
      continue;
    }
    if (end > kMaxHeaderBytes) break;
    scanned_ = 0;
    *consumed += end;
    return ParseHead(data.substr(0, end));
  }
  if (data.size() > kMaxHeaderBytes) {
    return Fail(431,
                "request line and headers exceed " + std::to_string(kMaxHeaderBytes) + " bytes");
  }
  return Status::kNeedMore;
}

RequestParser::Status RequestParser::FeedChunked(std::string_view data, size_t* consumed) {
  const auto take = [&](size_t n) {
    data.remove_prefix(n);
    *consumed += n;
  };
  for (;;) {
    if (phase_ == Phase::kChunkData) {
      const size_t n = std::min(static_cast<size_t>(body_left_), data.size());
      request_.body.append(data.data(), n);
      body_left_ -= static_cast<int64_t>(n);
      take(n);
      if (body_left_ > 0) return Status::kNeedMore;
      phase_ = Phase::kChunkEnd;
    }
    const size_t nl = data.find('\n');
    if (nl == std::string_view::npos) {
      if (phase_ == Phase::kTrailers && data.size() > kMaxHeaderBytes) {
        return Fail(431,
                    "chunked body: trailers over " + std::to_string(kMaxHeaderBytes) + " bytes");
      }
      if (phase_ != Phase::kTrailers && data.size() > kMaxChunkLine) {
        return Fail(400, "chunked body: a chunk size line over " + std::to_string(kMaxChunkLine) +
                             " bytes");
      }
      return Status::kNeedMore;
    }
    if (phase_ != Phase::kTrailers && nl > kMaxChunkLine) {  // as when it arrives in pieces
      return Fail(
          400, "chunked body: a chunk size line over " + std::to_string(kMaxChunkLine) + " bytes");
    }
    const std::string_view line = StripCr(data.substr(0, nl));
    take(nl + 1);
    if (phase_ == Phase::kChunkEnd) {
      if (!line.empty()) return Fail(400, "chunked body: chunk data longer than its size");
      phase_ = Phase::kChunkSize;
    } else if (phase_ == Phase::kTrailers) {
      scanned_ += line.size() + 2;
      if (scanned_ > kMaxHeaderBytes) return Fail(431, "chunked body: trailers too long");
      if (line.empty()) {
        scanned_ = 0;
        phase_ = Phase::kDone;
        return Status::kComplete;
      }
    } else {  // kChunkSize: HEX[;extensions]
      const std::string_view hex = Trim(line.substr(0, line.find(';')));
      int64_t size = hex.empty() || hex.size() > 15 ? -1 : 0;  // 15 digits fit in int64
      for (size_t i = 0; i < hex.size() && size >= 0; ++i) {
        size = HexValue(hex[i]) < 0 ? -1 : size * 16 + HexValue(hex[i]);
      }
      if (size < 0) {
        return Fail(
            400, "chunked body: bad chunk size " + Quoted(line) + ": expected hexadecimal digits");
      }
      if (static_cast<int64_t>(request_.body.size()) + size > max_body_bytes_) {
        return Fail(413, "request body of at least " +
                             std::to_string(static_cast<int64_t>(request_.body.size()) + size) +
                             " bytes (chunked) exceeds serve.max_body_bytes (" +
                             std::to_string(max_body_bytes_) + " bytes)");
      }
      body_left_ = size;
      phase_ = size == 0 ? Phase::kTrailers : Phase::kChunkData;
    }
  }
}

RequestParser::Status RequestParser::Feed(std::string_view data, size_t* consumed) {
  *consumed = 0;
  if (phase_ == Phase::kError) return Status::kError;
  if (phase_ == Phase::kHeaders) {
    const Status s = FeedHeaders(data, consumed);
    if (s == Status::kError || phase_ == Phase::kHeaders) return s;
    data.remove_prefix(*consumed);
  }
  if (phase_ == Phase::kBody) {
    const size_t n = std::min(static_cast<size_t>(body_left_), data.size());
    request_.body.append(data.data(), n);
    body_left_ -= static_cast<int64_t>(n);
    *consumed += n;
    if (body_left_ == 0) phase_ = Phase::kDone;
  } else if (chunked_ && phase_ != Phase::kDone) {
    size_t more = 0;
    const Status s = FeedChunked(data, &more);
    *consumed += more;
    if (s == Status::kError) return s;
  }
  return phase_ == Phase::kDone ? Status::kComplete : Status::kNeedMore;
}

HttpRequest RequestParser::TakeRequest() {
  HttpRequest out = std::move(request_);
  request_ = HttpRequest();
  phase_ = Phase::kHeaders;
  scanned_ = 0;
  body_left_ = 0;
  chunked_ = false;
  expect_continue_ = false;
  line_checked_ = false;
  return out;
}

const char* ReasonPhrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 422:
      return "Unprocessable Content";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

std::string SerializeResponse(const HttpResponse& response, bool keep_alive) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " " +
                    ReasonPhrase(response.status) + "\r\nContent-Type: " + response.content_type +
                    "\r\nContent-Length: " + std::to_string(response.body.size()) +
                    (keep_alive ? "\r\nConnection: keep-alive\r\n" : "\r\nConnection: close\r\n");
  for (const auto& [name, value] : response.headers) out += name + ": " + value + "\r\n";
  out += "\r\n";
  out += response.body;
  return out;
}

}  // namespace shardflow::serve

// Reads RESP replies (the Redis protocol) from a connected blocking socket
// whose receive timeout is set, landing bulk strings in place: a string of
// the size a Landing expects goes straight from the socket into the
// caller's buffers, checksummed as it arrives, with no copy in between.
// Only the short lines around it (the "$N" header, statuses, errors,
// integers) pass through the reader's own small buffer.
//
// Arrays are not read (the data path never asks for one): they are a
// protocol error, after which the connection is unusable.
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"
#include "remote/connector.h"

namespace impress {

struct RespReply {
  enum Type { kNil, kString, kInteger, kStatus, kError };
  Type type = kNil;
  long long integer = 0;
  size_t len = 0;       // a string's length, landed or not
  bool landed = false;  // the string went to the landing
  std::string text;     // a status, an error, or a string that did not land
};

class RespReader {
 public:
  explicit RespReader(int fd) : fd_(fd) {}
  // The next reply. A string of exactly landing's size lands there (when
  // `landing` is not null); any other string is kept in text. Errors:
  // IOError for a closed or failed socket (timed_out() says whether the
  // receive timeout ran out) or a malformed reply.
  Status Next(Landing* landing, RespReply* out);
  // Whether bytes past the last reply were received (a protocol error, as
  // nothing is sent unasked).
  bool buffered() const { return pos_ < end_; }
  bool timed_out() const { return timed_out_; }

 private:
  Status Line(std::string* line);            // up to and without the CRLF
  Status Exact(void* dst, size_t n, uint32_t* crc);  // n bytes into dst
  Status Fill();                             // more bytes into buf_

  int fd_;
  static constexpr size_t kBuf = 512;  // a header line and the next reply's start
  char buf_[kBuf];
  size_t pos_ = 0, end_ = 0;
  bool timed_out_ = false;
};

}  // namespace impress

#include "remote/resp_reader.h"

#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/crc32c.h"

namespace impress {
namespace {

Status Malformed(const std::string& why) { return Status::IOError("malformed reply: " + why); }

}  // namespace

Status RespReader::Fill() {
  if (pos_ == end_) {
    pos_ = end_ = 0;
  } else if (pos_ > 0 && end_ > kBuf / 2) {  // keep room for a whole receive
    std::memmove(buf_, buf_ + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
  }
  if (end_ == kBuf) return Malformed("a line longer than " + std::to_string(kBuf) + " bytes");
  for (;;) {
    const ssize_t got = ::recv(fd_, buf_ + end_, kBuf - end_, 0);
    if (got > 0) {
      end_ += static_cast<size_t>(got);
      return Status::OK();
    }
    if (got == 0) return Status::IOError("connection closed by the server");
    if (errno == EINTR) continue;
    timed_out_ = errno == EAGAIN || errno == EWOULDBLOCK;
    return Status::IOError(timed_out_ ? "reply timed out" : std::string("receive failed: ") + std::strerror(errno));
  }
}

Status RespReader::Line(std::string* line) {
  for (size_t scanned = pos_;;) {
    const void* lf = scanned < end_ ? std::memchr(buf_ + scanned, '\n', end_ - scanned) : nullptr;
    if (lf != nullptr) {
      const size_t at = static_cast<const char*>(lf) - buf_;
      if (at == pos_ || buf_[at - 1] != '\r') return Malformed("a line not ended by CRLF");
      line->assign(buf_ + pos_, at - 1 - pos_);
      pos_ = at + 1;
      return Status::OK();
    }
    const size_t kept = end_ - pos_;
    RETURN_IF_ERROR(Fill());
    scanned = pos_ + kept;  // Fill may have moved the unscanned bytes to the front
  }
}

Status RespReader::Exact(void* dst, size_t n, uint32_t* crc) {
  auto* out = static_cast<char*>(dst);
  const size_t have = std::min(n, end_ - pos_);
  std::memcpy(out, buf_ + pos_, have);
  pos_ += have;
  if (crc != nullptr) *crc = Crc32c(out, have, *crc);
  for (size_t done = have; done < n;) {
    const ssize_t got = ::recv(fd_, out + done, n - done, MSG_WAITALL);
    if (got > 0) {
      if (crc != nullptr) *crc = Crc32c(out + done, static_cast<size_t>(got), *crc);  // while the bytes are in cache
      done += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) return Status::IOError("connection closed by the server");
    if (errno == EINTR) continue;
    timed_out_ = errno == EAGAIN || errno == EWOULDBLOCK;
    return Status::IOError(timed_out_ ? "reply timed out" : std::string("receive failed: ") + std::strerror(errno));
  }
  return Status::OK();
}

Status RespReader::Next(Landing* landing, RespReply* out) {
  *out = RespReply();
  std::string line;
  RETURN_IF_ERROR(Line(&line));
  if (line.empty()) return Malformed("an empty line");
  const char kind = line[0];
  line.erase(0, 1);
  if (kind == '+' || kind == '-') {
    out->type = kind == '+' ? RespReply::kStatus : RespReply::kError;
    out->text = std::move(line);
    return Status::OK();
  }
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(line.c_str(), &end, 10);
  if (line.empty() || *end != '\0' || errno != 0) return Malformed("'" + line + "' is not a number");
  if (kind == ':') {
    out->type = RespReply::kInteger;
    out->integer = n;
    return Status::OK();
  }
  if (kind != '$') return Malformed(std::string("reply type '") + kind + "' is not read here");
  if (n < 0) return Status::OK();  // nil
  out->type = RespReply::kString;
  out->len = static_cast<size_t>(n);
  if (landing != nullptr && out->len == landing->head_bytes + landing->body_bytes) {
    RETURN_IF_ERROR(Exact(landing->head, landing->head_bytes, nullptr));
    landing->body_crc = 0;
    RETURN_IF_ERROR(Exact(landing->body, landing->body_bytes, &landing->body_crc));
    out->landed = true;
  } else {
    out->text.resize(out->len);
    RETURN_IF_ERROR(Exact(out->text.data(), out->len, nullptr));
  }
  char crlf[2];
  RETURN_IF_ERROR(Exact(crlf, 2, nullptr));
  if (crlf[0] != '\r' || crlf[1] != '\n') return Malformed("a string not ended by CRLF");
  return Status::OK();
}

}  // namespace impress

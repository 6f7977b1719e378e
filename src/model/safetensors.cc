#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace impress {
namespace {

// A header larger than this is treated as corrupt (real ones are < 10 MB).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

bool ParseDType(const std::string& s, DType* d) {
  static const std::map<std::string, DType> kNames = {
      {"F32", DType::kF32}, {"F16", DType::kF16}, {"BF16", DType::kBF16},
      {"I64", DType::kI64}, {"I32", DType::kI32}, {"I8", DType::kI8},
      {"U8", DType::kU8},   {"BOOL", DType::kBool}, {"F64", DType::kF64}};
  auto it = kNames.find(s);
  if (it == kNames.end()) return false;
  *d = it->second;
  return true;
}

}  // namespace

int DTypeSize(DType d) {
  switch (d) {
    case DType::kF64: case DType::kI64: return 8;
    case DType::kF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: return 2;
    case DType::kI8: case DType::kU8: case DType::kBool: return 1;
  }
  return 0;
}

const char* DTypeName(DType d) {
  switch (d) {
    case DType::kF32: return "F32";
    case DType::kF16: return "F16";
    case DType::kBF16: return "BF16";
    case DType::kI64: return "I64";
    case DType::kI32: return "I32";
    case DType::kI8: return "I8";
    case DType::kU8: return "U8";
    case DType::kBool: return "BOOL";
    case DType::kF64: return "F64";
  }
  return "?";
}

namespace {

// One header entry: its dtype, shape and byte range, checked against each
// other and against the `data_size` bytes that follow the header.
Status ParseEntry(const nlohmann::json& e, uint64_t data_size, TensorView* v,
                  std::pair<uint64_t, uint64_t>* range) {
  auto bad = [](const std::string& what) { return Status::InvalidArgument(what); };
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
    return bad("entry needs dtype, shape and data_offsets");
  if (!e["dtype"].is_string()) return bad("dtype is not a string");
  if (!ParseDType(e["dtype"].get<std::string>(), &v->dtype))
    return bad("unknown dtype '" + e["dtype"].get<std::string>() + "'");
  if (!e["shape"].is_array()) return bad("shape is not an array");
  uint64_t numel = 1;
  for (const auto& d : e["shape"]) {
    if (!d.is_number_unsigned()) return bad("shape has a negative or non-integer dimension");
    uint64_t n = d.get<uint64_t>();
    if (n != 0 && numel > (UINT64_MAX / 16) / n) return bad("shape overflows");
    numel *= n;
    v->shape.push_back(static_cast<int64_t>(n));
  }
  const auto& off = e["data_offsets"];
  if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    return bad("data_offsets must be two non-negative integers");
  uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
  if (b > en) return bad("data_offsets begin " + std::to_string(b) + " is after end " + std::to_string(en));
  if (en > data_size)
    return bad("data_offsets end " + std::to_string(en) + " is past the end of the data (" +
               std::to_string(data_size) + " bytes; file truncated?)");
  if (en - b != numel * DTypeSize(v->dtype))
    return bad("data_offsets span " + std::to_string(en - b) + " bytes but shape and dtype need " +
               std::to_string(numel * DTypeSize(v->dtype)));
  v->nbytes = en - b;
  *range = {b, en};
  return Status::OK();
}

// No two non-empty tensors share bytes.
Status CheckNoOverlap(const std::vector<std::pair<uint64_t, uint64_t>>& ranges, const std::vector<std::string>& names) {
  std::vector<size_t> order(ranges.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a] < ranges[b]; });
  for (size_t i = 1; i < order.size(); ++i) {
    const auto& prev = ranges[order[i - 1]];
    const auto& cur = ranges[order[i]];
    if (cur.first < prev.second && cur.second > cur.first)
      return Status::InvalidArgument("tensors '" + names[order[i - 1]] + "' and '" + names[order[i]] +
                                     "' have overlapping data_offsets");
  }
  return Status::OK();
}

}  // namespace

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  auto err = [&](const std::string& what) { return Status::InvalidArgument(path + ": " + what); };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return err(std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return err(std::string("cannot stat: ") + std::strerror(errno));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    return err("truncated: " + std::to_string(size) + " bytes, no 8-byte header length");
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) return err(std::string("cannot mmap: ") + std::strerror(errno));

  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->map_ = map;
  f->size_ = size;
  const auto* base = static_cast<const uint8_t*>(map);

  uint64_t header_len = 0;
  std::memcpy(&header_len, base, 8);  // little-endian on every supported host
  if (header_len > kMaxHeaderBytes) return err("header length " + std::to_string(header_len) + " is implausibly large");
  if (8 + header_len > size)
    return err("truncated: header length " + std::to_string(header_len) + " runs past the end of the " +
               std::to_string(size) + "-byte file");
  const uint64_t data_size = size - 8 - header_len;

  nlohmann::json header;
  try {
    header = nlohmann::json::parse(base + 8, base + 8 + header_len);
  } catch (const std::exception& e) {
    return err(std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) return err("header is not a JSON object");

  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // data offsets [begin, end) of each tensor
  std::vector<std::string> range_names;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    TensorView v;
    std::pair<uint64_t, uint64_t> range;
    const Status st = ParseEntry(it.value(), data_size, &v, &range);
    if (!st.ok()) return err("tensor '" + it.key() + "': " + st.message());
    v.data = base + 8 + header_len + range.first;
    v.file = &f->path_;
    ranges.push_back(range);
    range_names.push_back(it.key());
    f->tensors_.emplace(it.key(), std::move(v));
  }
  const Status overlap = CheckNoOverlap(ranges, range_names);
  if (!overlap.ok()) return err(overlap.message());
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(map_, size_);
}

StatusOr<std::unique_ptr<TensorSet>> TensorSet::OpenDir(const std::string& dir) {
  namespace fs = std::filesystem;
  auto set = std::make_unique<TensorSet>();
  std::vector<std::string> shard_paths;
  const std::string index_path = dir + "/model.safetensors.index.json";
  const std::string single_path = dir + "/model.safetensors";
  nlohmann::json weight_map;
  if (fs::exists(index_path)) {
    std::ifstream in(index_path);
    nlohmann::json index;
    try {
      index = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      return Status::InvalidArgument(index_path + ": not valid JSON: " + e.what());
    }
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      return Status::InvalidArgument(index_path + ": missing object 'weight_map'");
    weight_map = index["weight_map"];
    for (auto& [name, file] : weight_map.items()) {
      if (!file.is_string()) return Status::InvalidArgument(index_path + ": weight_map['" + name + "'] is not a file name");
      std::string p = dir + "/" + file.get<std::string>();
      if (std::find(shard_paths.begin(), shard_paths.end(), p) == shard_paths.end()) shard_paths.push_back(p);
    }
  } else if (fs::exists(single_path)) {
    shard_paths.push_back(single_path);
  } else {
    return Status::InvalidArgument(dir + ": no model.safetensors or model.safetensors.index.json");
  }
  for (const auto& p : shard_paths) {
    ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open(p));
    for (const auto& [name, view] : file->tensors()) {
      if (set->index_.count(name)) return Status::InvalidArgument(p + ": tensor '" + name + "' also appears in another shard");
      set->index_[name] = &view;
    }
    set->files_.push_back(std::move(file));
  }
  for (auto& [name, file] : weight_map.items()) {
    if (!set->index_.count(name))
      return Status::InvalidArgument(index_path + ": lists tensor '" + name + "' but " + file.get<std::string>() +
                           " does not hold it");
  }
  return set;
}

const TensorView* TensorSet::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

std::vector<std::string> TensorSet::Names() const {
  std::vector<std::string> names;
  for (const auto& [n, v] : index_) names.push_back(n);
  return names;
}

size_t TensorSet::TotalBytes() const {
  size_t total = 0;
  for (const auto& [n, v] : index_) total += v->nbytes;
  return total;
}

}  // namespace impress

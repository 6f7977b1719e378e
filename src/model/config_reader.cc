#include "model/config_reader.h"

namespace impress {

Status ConfigReader::Int(const char* key, int* out, bool required) {
  if (Absent(key)) return required ? Status::InvalidArgument(path_ + ": missing field '" + key + "'") : Status::OK();
  if (!j_[key].is_number_integer()) return Mistyped(key, "an integer");
  long long v = j_[key].get<long long>();
  if (v < 0 || v > (1ll << 31) - 1) return Status::InvalidArgument(path_ + ": field '" + key + "' is out of range");
  *out = static_cast<int>(v);
  return Status::OK();
}

Status ConfigReader::Double(const char* key, double* out) {
  if (Absent(key)) return Status::OK();
  if (!j_[key].is_number()) return Mistyped(key, "a number");
  *out = j_[key].get<double>();
  return Status::OK();
}

Status ConfigReader::Bool(const char* key, bool* out) {
  if (Absent(key)) return Status::OK();
  if (!j_[key].is_boolean()) return Mistyped(key, "a boolean");
  *out = j_[key].get<bool>();
  return Status::OK();
}

Status ConfigReader::String(const char* key, std::string* out) {
  if (Absent(key)) return Status::OK();
  if (!j_[key].is_string()) return Mistyped(key, "a string");
  *out = j_[key].get<std::string>();
  return Status::OK();
}

}  // namespace impress

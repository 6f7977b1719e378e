// Typed reads of a config.json's fields, each error naming the file and the
// field: what LoadModelConfig and each architecture's own fields use.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace impress {

class ConfigReader {
 public:
  ConfigReader(const std::string& path, const nlohmann::json& j) : path_(path), j_(j) {}

  const std::string& path() const { return path_; }
  const nlohmann::json& json() const { return j_; }

  // Each leaves *out as it was when the field is absent or null; Int fails
  // then only when `required`. A present field of another type, or an
  // integer outside [0, 2^31), is an error.
  Status Int(const char* key, int* out, bool required);
  Status Double(const char* key, double* out);
  Status Bool(const char* key, bool* out);
  Status String(const char* key, std::string* out);

 private:
  bool Absent(const char* key) const { return !j_.contains(key) || j_[key].is_null(); }
  Status Mistyped(const char* key, const char* what) const {
    return Status::InvalidArgument(path_ + ": field '" + key + "' is not " + what);
  }

  const std::string& path_;
  const nlohmann::json& j_;
};

}  // namespace impress

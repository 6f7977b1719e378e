// Eviction policies: they rank cached entries and name victims; the caches
// free. Keys are opaque 64-bit ids.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"

namespace impress {

class CachePolicy {
 public:
  virtual ~CachePolicy() = default;
  virtual void Insert(uint64_t key) = 0;  // REQUIRES: key absent
  virtual void Touch(uint64_t key) = 0;   // an access; REQUIRES: key present
  virtual void Erase(uint64_t key) = 0;   // REQUIRES: key present
  // The entry to evict first among those `evictable` accepts; nullopt if none.
  virtual std::optional<uint64_t> Victim(const std::function<bool(uint64_t)>& evictable) const = 0;
  virtual size_t size() const = 0;
};

// "lru" or "lfu" (frequency, ties broken by recency).
StatusOr<std::unique_ptr<CachePolicy>> MakePolicy(const std::string& name);

}  // namespace impress

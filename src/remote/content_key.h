// Content-derived names for chunks in a shared tier: a chunk's key is a hash
// chain over the model's fingerprint and every token from the start of the
// prefix to the end of the chunk, so two machines that compute the same
// prefix name its chunks alike and a machine finds chunks it never computed.
//
// The hash is a 128-bit non-cryptographic mix: a cluster is trusted by the
// machines that share it, and every chunk's marker records its parent key and
// tokens, which a reader checks.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "codec/kv_codec.h"

namespace impress {

struct ContentKey {
  std::array<uint8_t, 16> bytes{};
  std::string Hex() const;  // 32 lowercase hex digits
  bool operator==(const ContentKey& o) const { return bytes == o.bytes; }
  bool operator!=(const ContentKey& o) const { return bytes != o.bytes; }
};

// The key before a prefix's first chunk: a function of the store fingerprint
// (model, KV dtype, chunk size), so different models never share a chunk.
ContentKey RootKey(const std::string& fingerprint);
// The root of a store's chunks: RootKey of its fingerprint, and of its KV
// codec when it has one (float16 stores keep RootKey(fingerprint)), so that
// stores with different codecs never name a chunk alike.
ContentKey StoreRootKey(const std::string& fingerprint, KvCodec codec);
// The key of a chunk of `n` tokens that follows the chunk keyed `parent`.
ContentKey NextKey(const ContentKey& parent, const int32_t* tokens, size_t n);
// Keys of chunks first..first+count-1 of `tokens` (chunk i is tokens
// [i*C, (i+1)*C)), where `parent` is the key of chunk first-1 (RootKey for 0).
// REQUIRES: tokens holds (first + count) * C tokens.
std::vector<ContentKey> ChainKeys(ContentKey parent, const std::vector<int32_t>& tokens, size_t first, size_t count,
                                  int chunk_tokens);
// Keys of the n chunks of a reordered copy of the node whose last original
// chunk is keyed `last`, packed by `order` (per layer: stored slot -> token
// index in the node): the same node packed the same way has the same keys.
std::vector<ContentKey> CopyKeys(const ContentKey& last, const std::vector<std::vector<int32_t>>& order, size_t n);

}  // namespace impress

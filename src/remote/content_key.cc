#include "remote/content_key.h"

#include <cstring>

namespace impress {
namespace {

uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t Fmix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

// Two 64-bit lanes over 16-byte blocks (the input zero-padded to a whole
// block), finished with the length: Murmur3's x64 128-bit mixing steps.
ContentKey Hash128(const uint8_t* data, size_t len, uint64_t seed) {
  const uint64_t c1 = 0x87c37b91114253d5ULL, c2 = 0x4cf5ad432745937fULL;
  uint64_t h1 = seed, h2 = seed;
  for (size_t off = 0; off < len; off += 16) {
    uint8_t block[16] = {0};
    std::memcpy(block, data + off, std::min<size_t>(16, len - off));
    uint64_t k1, k2;
    std::memcpy(&k1, block, 8);
    std::memcpy(&k2, block + 8, 8);
    k1 *= c1, k1 = Rotl(k1, 31), k1 *= c2, h1 ^= k1;
    h1 = Rotl(h1, 27), h1 += h2, h1 = h1 * 5 + 0x52dce729;
    k2 *= c2, k2 = Rotl(k2, 33), k2 *= c1, h2 ^= k2;
    h2 = Rotl(h2, 31), h2 += h1, h2 = h2 * 5 + 0x38495ab5;
  }
  h1 ^= len, h2 ^= len;
  h1 += h2, h2 += h1;
  h1 = Fmix(h1), h2 = Fmix(h2);
  h1 += h2, h2 += h1;
  ContentKey k;
  std::memcpy(k.bytes.data(), &h1, 8);
  std::memcpy(k.bytes.data() + 8, &h2, 8);
  return k;
}

constexpr uint64_t kSeed = 0x696d7072657373ULL;  // one seed for every machine: keys must agree

}  // namespace

std::string ContentKey::Hex() const {
  static const char* digits = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[2 * i] = digits[bytes[i] >> 4];
    s[2 * i + 1] = digits[bytes[i] & 15];
  }
  return s;
}

ContentKey RootKey(const std::string& fingerprint) {
  const std::string tagged = "impress-kv/1\n" + fingerprint;
  return Hash128(reinterpret_cast<const uint8_t*>(tagged.data()), tagged.size(), kSeed);
}

ContentKey StoreRootKey(const std::string& fingerprint, KvCodec codec) {
  return RootKey(codec == KvCodec::kNone ? fingerprint : fingerprint + "|kv-codec=" + KvCodecName(codec));
}

ContentKey NextKey(const ContentKey& parent, const int32_t* tokens, size_t n) {
  std::vector<uint8_t> buf(16 + 4 * n);
  std::memcpy(buf.data(), parent.bytes.data(), 16);
  for (size_t i = 0; i < n; ++i) {  // little-endian whatever the host
    const uint32_t t = static_cast<uint32_t>(tokens[i]);
    for (int b = 0; b < 4; ++b) buf[16 + 4 * i + b] = static_cast<uint8_t>(t >> (8 * b));
  }
  return Hash128(buf.data(), buf.size(), kSeed);
}

std::vector<ContentKey> ChainKeys(ContentKey parent, const std::vector<int32_t>& tokens, size_t first, size_t count,
                                  int chunk_tokens) {
  std::vector<ContentKey> out;
  out.reserve(count);
  for (size_t i = first; i < first + count; ++i) {
    parent = NextKey(parent, tokens.data() + i * chunk_tokens, static_cast<size_t>(chunk_tokens));
    out.push_back(parent);
  }
  return out;
}

std::vector<ContentKey> CopyKeys(const ContentKey& last, const std::vector<std::vector<int32_t>>& order, size_t n) {
  std::vector<int32_t> flat;
  for (const auto& o : order) {
    flat.push_back(static_cast<int32_t>(o.size()));
    flat.insert(flat.end(), o.begin(), o.end());
  }
  const ContentKey base = NextKey(last, flat.data(), flat.size());
  std::vector<ContentKey> out;
  for (size_t i = 0; i < n; ++i) {
    const int32_t index = static_cast<int32_t>(i);
    out.push_back(NextKey(base, &index, 1));
  }
  return out;
}

}  // namespace impress

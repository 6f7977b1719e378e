// Cost of the KV codecs (codec/kv_codec.h) on one core, per SmolLM2 chunk
// part (64 tokens x 3 KV heads x 64 dims): GB/s of decoded fp16 KV for int8
// and int4 decoding (and encoding), against a plain memcpy of the encoded
// bytes and of the fp16 bytes. `make bench` runs it.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "bench_provenance.h"
#include "codec/kv_codec.h"

namespace {

using impress::KvCodec;
using impress::KvRole;

constexpr int kTokens = 64, kHeads = 3, kDim = 64;
constexpr size_t kValues = size_t{kTokens} * kHeads * kDim;

std::vector<uint16_t> Part() {
  std::mt19937 rng(1);
  std::normal_distribution<float> n;
  std::vector<uint16_t> x(kValues);
  for (auto& v : x) v = impress::FloatToHalf(n(rng));
  return x;
}

void BM_Decode(benchmark::State& state, KvCodec c, KvRole r) {
  const std::vector<uint16_t> x = Part();
  std::vector<uint8_t> enc(impress::EncodedBytes(c, r, kTokens, kHeads, kDim));
  impress::EncodeKv(c, r, x.data(), kTokens, kHeads, kDim, enc.data());
  std::vector<uint16_t> out(kValues);
  for (auto _ : state) {
    impress::DecodeKv(c, r, enc.data(), kTokens, kHeads, kDim, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kValues * 2));  // decoded fp16 bytes
  state.counters["encoded_bytes"] = static_cast<double>(enc.size());
}

void BM_Encode(benchmark::State& state, KvCodec c, KvRole r) {
  const std::vector<uint16_t> x = Part();
  std::vector<uint8_t> enc(impress::EncodedBytes(c, r, kTokens, kHeads, kDim));
  for (auto _ : state) {
    impress::EncodeKv(c, r, x.data(), kTokens, kHeads, kDim, enc.data());
    benchmark::DoNotOptimize(enc.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kValues * 2));
}

// A plain copy of `bytes` (bytes_processed: the fp16 bytes they stand for, as above).
void BM_Memcpy(benchmark::State& state, size_t bytes) {
  std::vector<uint8_t> a(bytes, 1), b(bytes);
  for (auto _ : state) {
    std::memcpy(b.data(), a.data(), bytes);
    benchmark::DoNotOptimize(b.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kValues * 2));
  state.counters["copied_bytes"] = static_cast<double>(bytes);
}

}  // namespace

BENCHMARK_CAPTURE(BM_Memcpy, fp16, kValues * 2);
BENCHMARK_CAPTURE(BM_Memcpy, int8_encoded, impress::EncodedBytes(KvCodec::kInt8, KvRole::kKeys, kTokens, kHeads, kDim));
BENCHMARK_CAPTURE(BM_Memcpy, int4_encoded, impress::EncodedBytes(KvCodec::kInt4, KvRole::kValues, kTokens, kHeads, kDim));
BENCHMARK_CAPTURE(BM_Decode, int8, KvCodec::kInt8, KvRole::kKeys);
BENCHMARK_CAPTURE(BM_Decode, int4_keys, KvCodec::kInt4, KvRole::kKeys);
BENCHMARK_CAPTURE(BM_Decode, int4_values, KvCodec::kInt4, KvRole::kValues);
BENCHMARK_CAPTURE(BM_Encode, int8, KvCodec::kInt8, KvRole::kKeys);
BENCHMARK_CAPTURE(BM_Encode, int4_keys, KvCodec::kInt4, KvRole::kKeys);
BENCHMARK_CAPTURE(BM_Encode, int4_values, KvCodec::kInt4, KvRole::kValues);
int main(int argc, char** argv) { return impress::RunBenchmarksMain(argc, argv); }

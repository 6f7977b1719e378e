// Read bandwidth of the chunk store: one layer's chunk set (keys + values of
// --set chunks) per iteration, direct I/O through the store's thread pool,
// cycling through different sets so that no read repeats back to back.
//
//   impress_store_bench --dir DIR [--set 32] [--chunks 4096] [--threads 8]
// DIR must be on the file system to measure (not tmpfs). The store is built
// once (SmolLM2 geometry: 64 tokens x 3 KV heads x 64 dims, fp16) and reused.
// scripts/bench/bench_store.sh compares the result with fio on the same file.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <cstring>
#include <iostream>
#include <vector>

#include "bench_provenance.h"
#include "store/chunk_store.h"

namespace {

struct Flags {
  std::string dir = "build/bench_store";
  int set = 32;
  int chunks = 4096;
  int threads = 8;
};

impress::StoreOptions Options(const Flags& f) {
  impress::StoreOptions o;
  o.geometry = impress::ChunkGeometry{64, 1, 3, 64, 1, 2};
  o.fingerprint = "store-bench";
  o.io_threads = f.threads;
  return o;
}

void BM_ReadLayerChunkSet(benchmark::State& state, impress::ChunkStore* store, const Flags* f) {
  const size_t kb = store->geometry().KeyBytes();
  std::vector<uint8_t> buf(f->set * 2 * kb);
  uint64_t next = 0;
  for (auto _ : state) {
    std::vector<impress::ChunkRead> reads;
    for (int i = 0; i < f->set; ++i) {
      uint64_t id = (next++ * 2654435761u) % f->chunks;  // scattered ids
      reads.push_back({id, 0, impress::kKeys | impress::kValues, &buf[2 * i * kb], &buf[(2 * i + 1) * kb], nullptr});
    }
    impress::Status s = store->Read(&reads);
    if (!s.ok()) {
      state.SkipWithError(s.message().c_str());
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * f->set * 2 * kb);
}

}  // namespace

int main(int argc, char** argv) {
  impress::RecordCommandLine(argc, argv);
  Flags f;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto take = [&](const char* name, auto* dst) {
      if (a == name && i + 1 < argc) {
        std::string v = argv[++i];
        if constexpr (std::is_same_v<std::remove_pointer_t<decltype(dst)>, std::string>) *dst = v;
        else *dst = std::stoi(v);
        return true;
      }
      return false;
    };
    if (!take("--dir", &f.dir) && !take("--set", &f.set) && !take("--chunks", &f.chunks) &&
        !take("--threads", &f.threads))
      argv[out++] = argv[i];
  }
  argc = out;
  auto store = impress::ChunkStore::Open(f.dir, Options(f), nullptr);
  if (!store.ok()) {
    std::cerr << "impress_store_bench: error: " << store.status().message() << "\n";
    return 1;
  }
  if ((*store)->chunk_count() < static_cast<size_t>(f.chunks)) {
    const auto& g = (*store)->geometry();
    impress::EncodedChunk chunk;  // the same parts for every chunk
    chunk.bytes = {at::full({int64_t(g.KeyBytes())}, 1, at::kByte), at::full({int64_t(g.KeyBytes())}, 2, at::kByte),
                   at::full({int64_t(g.ProbeBytes())}, 3, at::kByte)};
    for (int first = static_cast<int>((*store)->chunk_count()); first < f.chunks; first += 256) {
      std::vector<impress::EncodedChunk> w;
      for (int id = first; id < std::min(f.chunks, first + 256); ++id) {
        chunk.chunk_id = uint64_t(id);
        w.push_back(chunk);
      }
      impress::Status s = (*store)->Commit(w, "{}");
      if (!s.ok()) {
        std::cerr << "impress_store_bench: error: " << s.message() << "\n";
        return 1;
      }
    }
  }
  benchmark::RegisterBenchmark("store/read_layer_chunk_set", BM_ReadLayerChunkSet, store->get(), &f)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(3.0)
      ->UseRealTime();
  impress::AddProvenanceContext("");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// Read throughput of the remote tier: one layer's chunk set (keys + values of
// --set chunks, pipelined GETs over the cluster's masters) per iteration,
// cycling through different sets, on one client thread as a request's layer
// read is.
//
//   impress_remote_bench --remote redis://HOST:PORT[,...] [--set 32] [--chunks 512]
// Publishes --chunks chunks (SmolLM2 geometry: 64 tokens x 3 KV heads x 64
// dims, fp16, one layer) first. scripts/bench/bench_remote.sh compares the result
// with redis-benchmark's GETs of the same value size on the same cluster.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <array>
#include <iostream>
#include <vector>

#include "bench_provenance.h"
#include "remote/remote_store.h"

namespace {

struct Flags {
  std::string remote;
  int set = 32;
  int chunks = 512;
};

const impress::ChunkGeometry kGeometry{64, 1, 3, 64, 1, 2};

impress::ContentKey KeyOf(int i) {
  const int32_t t = i;
  return impress::NextKey(impress::RootKey("remote-bench"), &t, 1);
}

void BM_ReadLayerChunkSet(benchmark::State& state, impress::RemoteStore* remote, const Flags* f) {
  const size_t kb = kGeometry.KeyBytes();
  std::vector<uint8_t> buf(f->set * 2 * kb);
  uint64_t next = 0;
  for (auto _ : state) {
    std::vector<impress::RemoteStore::Read> reads(f->set);
    for (int i = 0; i < f->set; ++i) {
      auto& r = reads[i];
      r.key = KeyOf(static_cast<int>((next++ * 2654435761u) % f->chunks));  // scattered chunks
      r.parts = impress::kKeys | impress::kValues;
      r.keys = &buf[2 * i * kb];
      r.values = &buf[(2 * i + 1) * kb];
    }
    remote->ReadParts(kGeometry, &reads);
    for (const auto& r : reads)
      if (!r.status.ok()) {
        state.SkipWithError(r.status.message().c_str());
        return;
      }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * f->set * 2 * kb);
  state.counters["gets_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * f->set * 2, benchmark::Counter::kIsRate);
}

}  // namespace

int main(int argc, char** argv) {
  impress::RecordCommandLine(argc, argv);
  Flags f;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--remote" && i + 1 < argc) f.remote = argv[++i];
    else if (a == "--set" && i + 1 < argc) f.set = std::stoi(argv[++i]);
    else if (a == "--chunks" && i + 1 < argc) f.chunks = std::stoi(argv[++i]);
    else argv[out++] = argv[i];
  }
  argc = out;
  auto remote = impress::RemoteStore::Connect(impress::RemoteOptions{f.remote});
  if (!remote.ok()) {
    std::cerr << "impress_remote_bench: error: " << remote.status().message() << "\n";
    return 1;
  }
  const auto part = [](size_t bytes) { return at::full({static_cast<int64_t>(bytes)}, 7, at::kByte); };
  const std::array<at::Tensor, 3> parts = {part(kGeometry.KeyBytes()), part(kGeometry.KeyBytes()),
                                           part(kGeometry.ProbeBytes())};
  std::vector<impress::RemoteStore::Chunk> chunks;
  for (int i = 0; i < f.chunks; ++i) {
    impress::RemoteStore::Chunk c;
    c.geometry = kGeometry;
    c.key = KeyOf(i);
    c.parent = impress::RootKey("remote-bench");
    c.tokens = {i};
    c.layers = {impress::EncodedChunk{static_cast<uint64_t>(i), 0, impress::KvCodec::kNone, parts, {}}};
    chunks.push_back(std::move(c));
  }
  (*remote)->WriteAsync(std::move(chunks));
  (*remote)->Flush();
  if ((*remote)->counters().write_errors > 0) {
    std::cerr << "impress_remote_bench: error: " << (*remote)->counters().write_errors << " writes failed\n";
    return 1;
  }
  benchmark::RegisterBenchmark("remote/read_layer_chunk_set", BM_ReadLayerChunkSet, remote->get(), &f)
      ->Unit(benchmark::kMillisecond)
      ->MinTime(3.0)
      ->UseRealTime();
  impress::AddProvenanceContext("");
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// Reader TTFT beside a writer whose fsync is slow. Requests on stored
// prefixes (the readers: each system in --systems, --requests each) run
// while another thread stores new prefixes, one every --write-every-ms,
// through an Env whose Sync sleeps --sync-ms before the file system's.
// Three conditions, each on a fresh store filled with the same KV:
//   alone   no writer;
//   writer  the writer, Sync as the file system does it;
//   slow    the writer, every Sync --sync-ms longer.
// Each of --rounds rounds runs the three in a rotated order (this machine is
// shared and noisy: the comparison is within one run). No caches, so every
// reader load reads the chunk store while the writer writes and syncs it.
// Prefixes and questions are PIQA's training text (data/piqa/train.jsonl);
// the stored KV is ComputeStoredKv's, computed once before the rounds. The
// readers' answers in each condition are compared bitwise with `alone`'s.
//
//   impress_sync_bench --model models/smollm2-135m --dir build/sync_bench --json OUT.json
#include <ATen/ATen.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/provenance.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "common/status.h"
#include "kvstore/prefix_store.h"
#include "request/request.h"
#include "request/stored_kv.h"
#include "request/systems.h"
#include "model/model.h"
#include "model/tokenizer.h"
#include "store/env.h"

namespace impress {
namespace {

struct Flags {
  std::string model = "models/smollm2-135m";
  std::string dir = "build/sync_bench";
  std::string json;
  std::vector<std::string> systems = {system_name::kAs, system_name::kH2oLru, system_name::kImpress};
  double retention = 0.25;
  int prefix_tokens = 1024;
  int question_tokens = 32;
  int readers = 2;        // stored prefixes the readers ask about
  int writes = 48;        // prefixes the writer can store (one per write)
  int requests = 8;       // per system, per condition and round
  int rounds = 3;
  int sync_ms = 1000;
  int write_every_ms = 500;
};

// Every file's Sync sleeps `sleep_ms` first (0: none); counts them.
class SlowSyncEnv final : public EnvWrapper {
 public:
  SlowSyncEnv() : EnvWrapper(Env::Default()) {}
  std::atomic<int> sleep_ms{0};
  std::atomic<int64_t> syncs{0};
  StatusOr<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    ASSIGN_OR_RETURN(std::unique_ptr<File> f, EnvWrapper::Open(path, mode));
    return std::unique_ptr<File>(new Slow(std::move(f), this));
  }

 private:
  class Slow final : public FileWrapper {
   public:
    Slow(std::unique_ptr<File> f, SlowSyncEnv* env) : FileWrapper(std::move(f)), env_(env) {}
    Status Sync() override {
      const int ms = env_->sleep_ms.load();
      if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      env_->syncs++;
      return FileWrapper::Sync();
    }

   private:
    SlowSyncEnv* env_;
  };
};

struct Prefix {
  std::vector<int32_t> tokens;
  std::unique_ptr<DenseKvCache> kv;
};

struct Sample {
  std::vector<double> ttft;         // per system, in request order, all rounds
  std::vector<at::Tensor> answers;  // first round's, per (system, request)
};

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const double at = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(at);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

class Bench {
 public:
  explicit Bench(const Flags& f) : f_(f) {}

  Status Prepare() {
    ASSIGN_OR_RETURN(model_, LoadModel(f_.model, LoadOptions{"cpu", "auto"}));
    ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, Tokenizer::FromFile(f_.model + "/tokenizer.json"));
    std::ifstream in("data/piqa/train.jsonl");
    if (!in) return Status::NotFound("data/piqa/train.jsonl: cannot open it (run from the repository root)");
    std::stringstream text;
    text << in.rdbuf();
    const size_t need = static_cast<size_t>((f_.readers + f_.writes) * f_.prefix_tokens +
                                            f_.requests * f_.question_tokens);
    ASSIGN_OR_RETURN(std::vector<int32_t> all, tok->Encode(text.str().substr(0, need * 8)));
    if (all.size() < need) return Status::InvalidArgument("data/piqa/train.jsonl: too little text for these sizes");
    auto slice = [&](size_t at, size_t n) { return std::vector<int32_t>(all.begin() + at, all.begin() + at + n); };
    size_t at = 0;
    for (int i = 0; i < f_.readers + f_.writes; ++i, at += f_.prefix_tokens) {
      Prefix p;
      p.tokens = slice(at, f_.prefix_tokens);
      p.kv = ComputeStoredKv(*model_, p.tokens, chunk_tokens_);
      (i < f_.readers ? readers_ : writes_).push_back(std::move(p));
    }
    for (int i = 0; i < f_.requests; ++i, at += f_.question_tokens) questions_.push_back(slice(at, f_.question_tokens));
    for (const std::string& name : f_.systems) {
      ASSIGN_OR_RETURN(System s, ParseSystem(name, f_.retention));
      systems_.push_back(s);
    }
    return Status::OK();
  }

  // One condition on a fresh store; appends TTFTs to `out` (answers the first time).
  Status RunCondition(const std::string& cond, Sample* out, nlohmann::json* writer_stats) {
    const std::string dir = f_.dir + "/" + cond;
    std::filesystem::remove_all(dir);
    SlowSyncEnv env;
    PrefixStoreOptions o;
    o.dir = dir;
    o.chunk_tokens = static_cast<int>(chunk_tokens_);
    o.tiers = TiersOver(CacheLevels({}));
    o.env = &env;
    ASSIGN_OR_RETURN(std::unique_ptr<PrefixStore> store, PrefixStore::Open(*model_, o));
    for (const Prefix& p : readers_) RETURN_IF_ERROR(store->Insert(p.tokens, *p.kv, 0).status());
    RETURN_IF_ERROR(Ask(*store, 0, nullptr));  // warm: one request per system
    env.sleep_ms = cond == "slow" ? f_.sync_ms : 0;
    const int64_t syncs0 = env.syncs.load();

    std::atomic<bool> stop{false};
    Status written = Status::OK();
    int inserts = 0;
    double insert_ms = 0;
    std::thread writer;
    if (cond != "alone") {
      writer = std::thread([&] {
        auto next = std::chrono::steady_clock::now();
        for (const Prefix& p : writes_) {
          std::this_thread::sleep_until(next);
          if (stop.load()) return;
          next += std::chrono::milliseconds(f_.write_every_ms);
          const auto t0 = std::chrono::steady_clock::now();
          auto n = store->Insert(p.tokens, *p.kv, 0);
          if (!n.ok()) {
            written = n.status();
            return;
          }
          insert_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
          ++inserts;
        }
      });
    }
    Status asked = Ask(*store, f_.requests, out);
    stop = true;
    if (writer.joinable()) writer.join();
    RETURN_IF_ERROR(asked);
    RETURN_IF_ERROR(written);
    if (inserts == static_cast<int>(writes_.size()))
      return Status::InvalidArgument("the writer ran out of prefixes before the readers finished: raise --writes");
    (*writer_stats)["inserts"] = writer_stats->value("inserts", 0) + inserts;
    (*writer_stats)["insert_ms_sum"] = writer_stats->value("insert_ms_sum", 0.0) + insert_ms;
    (*writer_stats)["syncs"] = writer_stats->value("syncs", int64_t{0}) + (env.syncs.load() - syncs0);
    return Status::OK();
  }

 private:
  // `requests` requests per system on the stored prefixes (one, untimed,
  // without `out`); with `out`, their TTFTs and first answers are kept.
  Status Ask(PrefixStore& store, int requests, Sample* out) {
    const int n = out == nullptr ? 1 : requests;
    for (size_t s = 0; s < systems_.size(); ++s)
      for (int i = 0; i < n; ++i) {
        const Prefix& p = readers_[static_cast<size_t>(i) % readers_.size()];
        std::vector<int32_t> ctx = p.tokens;
        ctx.insert(ctx.end(), questions_[static_cast<size_t>(i)].begin(), questions_[static_cast<size_t>(i)].end());
        std::unique_ptr<RewindableKv> kv;
        RequestTrace t;
        auto r = RunRequest(systems_[s], *model_, &store, ctx, f_.prefix_tokens, &kv, &t);
        if (!r.ok()) return r.status();
        if (t.reused_tokens != f_.prefix_tokens)
          return Status::Internal(f_.systems[s] + ": the stored prefix was not reused");
        if (out == nullptr) continue;
        out->ttft.push_back(t.ttft_ms);
        if (out->answers.size() < systems_.size() * static_cast<size_t>(requests)) out->answers.push_back(*r);
      }
    return Status::OK();
  }

  Flags f_;
  int64_t chunk_tokens_ = 64;
  std::unique_ptr<Model> model_;
  std::vector<Prefix> readers_, writes_;
  std::vector<std::vector<int32_t>> questions_;
  std::vector<System> systems_;
};

int Main(int argc, char** argv) {
  Flags f;
  CLI::App app{"Reader TTFT beside a writer whose fsync is slow"};
  app.add_option("--model", f.model, "Hugging Face model directory");
  app.add_option("--dir", f.dir, "where the stores are made (a file system that takes O_DIRECT)");
  app.add_option("--json", f.json, "write the result here");
  app.add_option("--systems", f.systems, "reader systems")->delimiter(',');
  app.add_option("--retention", f.retention);
  app.add_option("--prefix-tokens", f.prefix_tokens);
  app.add_option("--question-tokens", f.question_tokens);
  app.add_option("--readers", f.readers, "stored prefixes the readers ask about");
  app.add_option("--writes", f.writes, "prefixes the writer can store");
  app.add_option("--requests", f.requests, "per system, condition and round");
  app.add_option("--rounds", f.rounds);
  app.add_option("--sync-ms", f.sync_ms, "how long each Sync sleeps in the slow condition");
  app.add_option("--write-every-ms", f.write_every_ms, "the writer starts a new prefix this often");
  CLI11_PARSE(app, argc, argv);

  Bench bench(f);
  if (Status s = bench.Prepare(); !s.ok()) {
    std::cerr << "impress_sync_bench: " << s.message() << "\n";
    return 1;
  }
  const std::vector<std::string> conds = {"alone", "writer", "slow"};
  std::map<std::string, Sample> samples;
  std::map<std::string, nlohmann::json> writers;
  for (const std::string& c : conds) writers[c] = nlohmann::json::object();
  for (int r = 0; r < f.rounds; ++r)
    for (size_t k = 0; k < conds.size(); ++k) {
      const std::string& c = conds[(k + static_cast<size_t>(r)) % conds.size()];
      std::cerr << "round " << r + 1 << ": " << c << "\n";
      if (Status s = bench.RunCondition(c, &samples[c], &writers[c]); !s.ok()) {
        std::cerr << "impress_sync_bench: " << c << ": " << s.message() << "\n";
        return 1;
      }
    }
  nlohmann::json out;
  out["flags"] = {{"model", f.model},         {"systems", f.systems},   {"retention", f.retention},
                  {"prefix_tokens", f.prefix_tokens}, {"question_tokens", f.question_tokens},
                  {"readers", f.readers},     {"requests", f.requests}, {"rounds", f.rounds},
                  {"sync_ms", f.sync_ms},     {"write_every_ms", f.write_every_ms}, {"caches", "none"}};
  const size_t per_round = static_cast<size_t>(f.requests);
  std::printf("| condition | system | requests | TTFT mean ms | p50 | p99 | max | answers = alone's | writer: inserts, mean insert ms, syncs |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& c : conds) {
    const Sample& s = samples[c];
    const nlohmann::json& w = writers[c];
    const int inserts = w.value("inserts", 0);
    for (size_t k = 0; k < f.systems.size(); ++k) {
      std::vector<double> v;
      for (int r = 0; r < f.rounds; ++r)
        for (size_t i = 0; i < per_round; ++i)
          v.push_back(s.ttft[(static_cast<size_t>(r) * f.systems.size() + k) * per_round + i]);
      int equal = 0;
      for (size_t i = 0; i < per_round; ++i)
        equal += at::equal(s.answers[k * per_round + i], samples["alone"].answers[k * per_round + i]) ? 1 : 0;
      double mean = 0;
      for (double x : v) mean += x / static_cast<double>(v.size());
      nlohmann::json row = {{"requests", v.size()}, {"ttft_ms", v},  {"mean", mean},
                            {"p50", Quantile(v, 0.5)}, {"p99", Quantile(v, 0.99)}, {"max", Quantile(v, 1.0)},
                            {"answers_equal_to_alone", equal}, {"answers_compared", per_round}};
      out["conditions"][c]["systems"][f.systems[k]] = row;
      std::printf("| %s | %s | %zu | %.1f | %.1f | %.1f | %.1f | %d of %zu | %s |\n", c.c_str(), f.systems[k].c_str(),
                  v.size(), mean, Quantile(v, 0.5), Quantile(v, 0.99), Quantile(v, 1.0), equal, per_round,
                  c == "alone" ? "-"
                               : (std::to_string(inserts) + ", " +
                                  std::to_string(static_cast<int>(w.value("insert_ms_sum", 0.0) / std::max(1, inserts))) +
                                  ", " + std::to_string(w.value("syncs", int64_t{0})))
                                     .c_str());
    }
    out["conditions"][c]["writer"] = w;
  }
  if (!f.json.empty()) {
    std::ofstream o(f.json);
    o << WithProvenance(nlohmann::ordered_json::parse(out.dump()), f.model, false).dump(1) << "\n";
    if (!o) {
      std::cerr << "impress_sync_bench: " << f.json << ": cannot write it\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace impress

int main(int argc, char** argv) {
  impress::RecordCommandLine(argc, argv);
  return impress::Main(argc, argv);
}

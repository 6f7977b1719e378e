// One implementation of each selection method, two sources: selecting from
// the tiered store (`run`: StoreSource, read-ahead and all) and from memory
// (`eval`: SelectFromPrefix) choose the same tokens for every head of every
// layer on the same prefix and queries, and give the same logits. Full
// reuse (`as`) goes the same way: it keeps every token of every layer.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <map>

#include "request/request.h"
#include "model/model.h"
#include "model_store_fixture.h"
#include "select/importance.h"
#include "select/method.h"

namespace impress {
namespace {

using testing::TempDir;

// Each layer's choice as an [Hq, P] mask: which prefix tokens each query head attends to.
at::Tensor ChosenMask(const SelectedPrefix& s, int64_t heads) {
  if (s.kv.keep.defined()) return s.kv.keep.cpu();
  at::Tensor m = at::zeros({heads, s.total}, at::kBool);
  if (!s.used.defined()) return m.fill_(true);
  m.index_fill_(1, s.used, true);
  return m;
}

class Recorder final : public SelectionObserver {
 public:
  explicit Recorder(int64_t heads) : heads_(heads) {}
  void OnSelected(int layer, const SelectedPrefix& s) override {
    chosen[layer] = ChosenMask(s, heads_);
    probed[layer] = s.probed;
    fallback[layer] = s.fallback;
  }
  std::map<int, at::Tensor> chosen;
  std::map<int, bool> probed, fallback;

 private:
  int64_t heads_;
};

class SelectionPathsTest : public testing::ModelStoreTest {};

// The two paths attend over the same tokens held in different orders (the
// store's gathered chunks, the memory's dense prefix), so their logits agree
// to rounding, and how much rounding depends on how intra-op threads split
// the reductions: the test runs on one, whatever OMP_NUM_THREADS says.
TEST_P(SelectionPathsTest, StoreAndMemoryChooseTheSameTokens) {
  testing::OneIntraOpThread one_thread;
  const ModelConfig& c = model_->config();
  const int layers = c.num_layers;
  const int64_t p = 160;
  TempDir dir;
  PrefixStoreOptions o = Options(dir.path());
  o.kv_dtype = "float32";  // the memory path holds fp32 KV
  o.probe_layout = ProbeLayout::kSpread;  // copies the probe keys of either layout
  o.digests = DigestOptions().codec;       // and keeps the digest system's digests, as its selection reads them
  auto store = PrefixStore::Open(*model_, o);
  ASSERT_TRUE(store.ok()) << store.status().message();
  std::vector<int32_t> prefix = Tokens(p, 4), ctx = prefix, rest = Tokens(12, 77);
  ctx.insert(ctx.end(), rest.begin(), rest.end());
  std::unique_ptr<RewindableKv> kv;
  RequestTrace warm;
  ASSERT_TRUE(RunRequest(*ParseSystem("as"), *model_, store->get(), prefix, p, &kv, &warm).ok());
  DenseKvCache dense(layers);
  model_->Forward(prefix, 0, dense);

  int trusted = 0, fallbacks = 0;
  for (const char* name : {"as", "h2o-lru", "impress-itf", "digest"})
    for (double retention : {0.5, 0.25, 0.1})
      for (double alpha : {0.6, 1000.0})
        for (ItfUnit unit : {ItfUnit::kToken, ItfUnit::kChunk})
          for (ProbeLayout layout : {ProbeLayout::kFirst, ProbeLayout::kSpread}) {
            System sys = *ParseSystem(name, retention, alpha);
            if (sys.select.kind != SelectorKind::kItf &&
                (alpha != 0.6 || unit != ItfUnit::kToken || layout != ProbeLayout::kFirst))
              continue;  // H2O and full reuse have none of these knobs
            if (sys.select.kind == SelectorKind::kFull && retention != 0.5) continue;  // nor a retention
            sys.select.unit = unit;
            sys.select.probe_layout = layout;
            sys.select.chunk_tokens = o.chunk_tokens;
            const std::string what = std::string(name) + " retention " + std::to_string(retention) + " alpha " +
                                     std::to_string(alpha) + " unit " + ItfUnitNames()[static_cast<int>(unit)] +
                                     " probes " + ProbeLayoutNames()[static_cast<int>(layout)];

            Recorder from_store(c.num_heads);
            RequestOptions ro;
            ro.observer = &from_store;
            RequestTrace t;
            auto got = RunRequest(sys, *model_, store->get(), ctx, p, &kv, &t, ro);
            ASSERT_TRUE(got.ok()) << got.status().message();
            ASSERT_EQ(t.reused_tokens, p) << what;

            Recorder from_memory(c.num_heads);
            SelectedContextKv selected(layers, [&](const LayerQkv& qkv) {
              SelectedPrefix s = SelectFromPrefix(sys.select, qkv, dense.keys(qkv.layer), dense.values(qkv.layer));
              from_memory.OnSelected(qkv.layer, s);
              return s;
            });
            at::Tensor want = at::log_softmax(model_->Forward(rest, p, selected)[0], -1).cpu();

            for (int l = 0; l < layers; ++l) {
              ASSERT_TRUE(from_store.chosen.count(l) && from_memory.chosen.count(l)) << what << " layer " << l;
              EXPECT_TRUE(from_store.chosen[l].equal(from_memory.chosen[l])) << what << " layer " << l;
              EXPECT_EQ(from_store.fallback[l], from_memory.fallback[l]) << what << " layer " << l;
              const int64_t kept = sys.select.kind == SelectorKind::kFull ? p : RetainedTokens(retention, p);
              if (sys.select.kind == SelectorKind::kDigest)  // whole chunks: at least k tokens, every head the same
                EXPECT_GE(from_store.chosen[l].sum().item<int64_t>(), c.num_heads * kept) << what << " layer " << l;
              else
                EXPECT_EQ(from_store.chosen[l].sum().item<int64_t>(), c.num_heads * kept) << what << " layer " << l;
              trusted += from_store.probed[l] && !from_store.fallback[l];
              fallbacks += from_store.fallback[l];
            }
            EXPECT_LE((*got - want).abs().max().item<double>(), 1e-5) << what;
          }
  // Both ITF paths were compared: trusted layers and fallbacks to H2O.
  EXPECT_GT(trusted, 0);
  EXPECT_GT(fallbacks, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SelectionPathsTest,
                         ::testing::Values("tiny-llama-gqa", "tiny-opt-postln-proj", "smollm2"),
                         testing::ParamName);

}  // namespace
}  // namespace impress

// Which prefix KV each layer attends to: everything (AS), each head's own
// top-k by H2O importance, or IMPRESS's probe-head identification with the
// H2O path as its fallback. Selection runs per layer on the new tokens'
// queries. The methods themselves are behind select/method.h; this header
// holds their options, their result and the helpers around them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json_fwd.hpp>

#include "common/status.h"
#include "model/kv_provider.h"
#include "select/digest.h"
#include "select/importance.h"
#include "select/probe_heads.h"

namespace impress {

enum class SelectorKind { kFull, kH2O, kItf, kRandom, kStatic, kDigest };

// What IMPRESS's agreed set is made of when the probe heads are trusted:
// the k tokens the heads agree on (the paper), or k tokens packed into the
// chunks the probe heads' summed importance ranks best (this project's
// variant, AgreedChunkTokens: whole chunks and one partial one, so bytes
// read track k). Both keep exactly k tokens.
enum class ItfUnit { kToken, kChunk };
const std::vector<std::string>& ItfUnitNames();  // "token", "chunk": indexed by ItfUnit
StatusOr<ItfUnit> ParseItfUnit(const std::string& name);
// The importance shape of --importance-window W and --importance-pool P.
// Errors: a pool that is not an odd number >= 1.
StatusOr<ImportanceShape> ParseImportanceShape(int64_t window, int64_t pool);

// The project's own selection (select/digest.cc): chunks ranked by their key
// digests, with tokens every layer keeps whatever the ranking.
struct DigestOptions {
  int64_t sink_tokens = 64;    // the prefix's first tokens (their chunks) are always kept
  int64_t recent_tokens = 0;   // likewise its last tokens
  int dense_layers = 0;        // the first layers keep every token
  int64_t window = 0;          // chunks are scored by the last `window` query rows (0: every row)
  int64_t pool = 1;            // > 1 (odd): each token's score the max over `pool` neighbouring positions
  DigestScore score = DigestScore::kRowMax;
  DigestGroups groups = DigestGroups::kRank;
  DigestCodec codec = DigestCodec::kInt8;  // the digests' bits (a store keeps one codec's)
};
const std::vector<std::string>& DigestScoreNames();   // "keys", "bound": indexed by DigestScore
const std::vector<std::string>& DigestGroupsNames();  // "rank", "sum": indexed by DigestGroups
// {"sink_tokens", "recent_tokens", "dense_layers", "window", "pool", "score", "groups"} and "codec" when not
// int4 (records without it were made with int4 digests): what runs and evals record.
nlohmann::ordered_json DigestJson(const DigestOptions& d);
// Adds the importance shape to a run's, an eval's or a figure's record
// ("importance_window", "importance_pool") unless it is the papers'
// (exact()), so that records made with it stay as they were.
void AddImportanceJson(const ImportanceShape& shape, nlohmann::ordered_json* j);

struct SelectorOptions {
  SelectorKind kind = SelectorKind::kFull;
  double retention = 1.0;  // share of prefix tokens kept per head (k = ceil(retention * P))
  double alpha = 0.6;      // IMPRESS threshold exponent
  int probe_heads = 3;     // IMPRESS probe query heads
  ItfUnit unit = ItfUnit::kToken;
  int chunk_tokens = 64;   // chunk size of ItfUnit::kChunk when selecting from memory (a store uses its own)
  ProbeLayout probe_layout = ProbeLayout::kFirst;  // which query heads probe (probe_heads.h)
  uint64_t seed = 1234;    // the random control's draws (select/random.cc)
  // The rows and smoothing of H2O's and the probe heads' importance
  // (importance.h); the default is the papers' sum over every query row.
  ImportanceShape importance;
  DigestOptions digest;  // SelectorKind::kDigest's (it reads no `importance`)
};

// `opt` for one request whose context is `tokens`: the random control's
// seed mixed with the tokens, so that each request draws its own positions
// and the same request the same ones.
SelectorOptions ForRequest(const SelectorOptions& opt, const std::vector<int32_t>& tokens);

// The prefix KV one layer attends to, and how it was chosen.
struct SelectedPrefix {
  PrefixKv kv;             // keys/values [Hkv, U, d]; keep [Hq, U] when heads differ
  int64_t total = 0;       // prefix tokens available (P)
  int64_t kept = 0;        // tokens each head attends to (k, P, or the chosen chunks' tokens)
  bool probed = false;     // IMPRESS ran its probe test
  bool fallback = false;   // ... and fell back to the H2O path
  double similarity = 0;   // mean pairwise Jaccard of the probe heads
  // Positions (int64, host, ascending) that at least one head attends to;
  // undefined when every head attends to every position. A head's own set
  // is `kv.keep`'s row where keep is defined, else all of `used`.
  at::Tensor used;
};

// The probe heads' importance [probes, P], in ProbeQueryHeads order, from the
// prefix keys of KV heads 0..n-1 (`probe_keys` [n, P, d], n >= ProbeKvHeads),
// which have `room` rows free after each head's (PrefixImportance).
at::Tensor ProbeImportance(const SelectorOptions& opt, const LayerQkv& qkv, const at::Tensor& probe_keys,
                           int64_t room = 0);

// Selects from prefix keys/values held in memory ([Hkv, P, d]): the method
// of `opt` over a MemorySource (select/memory_source.h).
SelectedPrefix SelectFromPrefix(const SelectorOptions& opt, const LayerQkv& qkv, const at::Tensor& prefix_k,
                                const at::Tensor& prefix_v);

// Which prefix positions each of `heads` query heads attends to under `s`:
// [heads, s.total] bool, on the host.
at::Tensor HeadSets(const SelectedPrefix& s, int64_t heads);
// The paper's recall (Fig. 5) of `s` against `reference` (H2O's exact
// per-head top-k): per query head, |s's set ∩ reference's set| / |reference's
// set|, averaged over the heads.
double RecallAgainst(const SelectedPrefix& s, const SelectedPrefix& reference, int64_t heads);

// Per-layer tallies over many selections (Fig. 19: fallbacks and load ratio).
struct SelectionCounters {
  explicit SelectionCounters(int layers = 0) : probes(layers), fallbacks(layers), kept(layers), total(layers) {}
  void Add(int layer, const SelectedPrefix& s);
  // Adds one layer selection's recall of H2O's exact top-k (RecallAgainst).
  void AddRecall(double recall) { recall_sum += recall, ++recall_n; }
  double recall_sum = 0;
  int64_t recall_n = 0;
  double Recall() const { return recall_n > 0 ? recall_sum / static_cast<double>(recall_n) : 0.0; }
  // Adds another tally of the same number of layers (an empty one adds nothing).
  void Merge(const SelectionCounters& other);
  std::vector<int64_t> probes, fallbacks, kept, total;
  double similarity_sum = 0;
  int64_t similarity_n = 0;
  double FallbackShare() const;  // of probed layer selections
  double KeptShare() const;      // kept / total over all layers
};

// A request's KV: per layer, the selected prefix (chosen on the first call
// with that layer's queries) followed by every appended token; the keep mask
// extends over appended tokens as visible.
class SelectedContextKv final : public RewindableKv {
 public:
  using Source = std::function<SelectedPrefix(const LayerQkv&)>;
  SelectedContextKv(int layers, Source source);
  PrefixKv Prefix(const LayerQkv& qkv) override;
  void Append(const LayerQkv& qkv) override { tail_.Append(qkv); }
  Mark Save() const override { return tail_.Save(); }
  // Every appended token, from the first new token on.
  const DenseKvCache& tail() const { return tail_; }
  void Rewind(const Mark& mark) override { tail_.Rewind(mark); }

 private:
  Source source_;
  std::vector<PrefixKv> prefix_;
  std::vector<bool> chosen_;
  DenseKvCache tail_;
};

}  // namespace impress

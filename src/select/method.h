// The seam between a selection method and where the prefix KV lives.
//
// A SelectionMethod decides, per layer and from the new tokens' queries,
// which prefix tokens each head attends to. It reads the prefix KV through a
// PrefixSource: memory for `eval` (MemorySource), the tiered store for `run`
// (request/store_source.h). A method says up front which part of every chunk
// it reads whatever the queries are (ReadAhead), so a source can read that
// part before the queries exist; everything else it asks for on demand,
// naming the positions it chose, so a chunked source reads only the chunks
// holding them. What a selection computed (importance, the chosen set) goes
// to a SelectionObserver: reordering's history, counters, tests.
//
// Adding a method: one file implementing SelectionMethod with its maker
// declared below, a kind in SelectorKind and its row in the method table
// (SelectionMethods, method.cc), and a row in the system table
// (request/systems.cc). docs/design.md has the recipe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "codec/key_digest.h"
#include "common/status.h"
#include "model/kv_provider.h"
#include "select/selector.h"

namespace impress {

// One layer's prefix KV as a method reads it. Positions are token positions
// 0..P-1; every tensor a read returns is in token order, [Hkv, n, d], on the
// model's device and in its dtype. A source may hold the tokens in chunks in
// any stored order (reordered storage); ChunkOf says where each position is.
class PrefixSource {
 public:
  virtual ~PrefixSource() = default;
  virtual int64_t tokens() const = 0;  // P
  virtual int64_t chunks() const = 0;  // chunks the P tokens are stored in
  // The chunk holding each position of `layer`: [P] int64 on the host.
  virtual at::Tensor ChunkOf(int layer) = 0;
  // Every token's keys and values (full reuse).
  virtual Status All(int layer, at::Tensor* k, at::Tensor* v) = 0;
  // Every token's keys.
  virtual Status Keys(int layer, at::Tensor* k) = 0;
  // Every token's keys of KV heads 0..kv_heads-1: [kv_heads, P, d].
  virtual Status ProbeKeys(int layer, int64_t kv_heads, at::Tensor* k) = 0;
  // How many rows after each head's P rows, in the tensors Keys and
  // ProbeKeys return, a caller may overwrite until the next call for the
  // same layer (PrefixImportance's `room`); 0: none.
  virtual int64_t key_room() const { return 0; }
  // Values [Hkv, P, d], exact at every position of a chunk holding one of
  // `used` (int64 positions, host, ascending); elsewhere they may be zeros,
  // so a caller attends to `used` positions only.
  virtual Status Values(int layer, const at::Tensor& used, at::Tensor* v) = 0;
  // Keys and values of exactly `positions` (int64, host, ascending), in that
  // order: [Hkv, n, d].
  virtual Status Gather(int layer, const at::Tensor& positions, at::Tensor* k, at::Tensor* v) = 0;
  // Every token's keys as its chunk's digest gives them (codec/key_digest.h):
  // [Hkv, P, d], from what the source holds without reading any chunk.
  // Errors: a source that keeps no digests, or lacks a chunk's.
  virtual Status DigestKeys(int layer, at::Tensor* k) = 0;
  // The same keys as the int8 digest's codes and scales (codec/key_digest.h's
  // Int8Keys: [Hkv, P, d], [Hkv, P]), on the model's device.
  // Errors: as DigestKeys', and a source whose digests are not int8.
  virtual Status DigestInt8(int layer, Int8Keys* keys) = 0;
};

// The steps of a selection whose ends a method announces (OnStepEnd), so that
// whoever times selection can tell computing importance from deciding on it.
enum class SelectStep : uint8_t {
  kImportance,  // importance of the prefix tokens is computed (H2O's or the probe heads')
  kDecision,    // a decision on it is made (ITF's trust test), before any further importance
};

// What selections computed, for whoever keeps history or counts. Called on
// the thread that runs the layer, in layer order.
class SelectionObserver {
 public:
  virtual ~SelectionObserver() = default;
  // `step` of layer `layer`'s selection has just ended.
  virtual void OnStepEnd(int layer, SelectStep step) {}
  // Layer `layer`'s selection read a result back to the host (ReadBack): on
  // CUDA a host synchronisation.
  virtual void OnReadBack(int layer) {}
  // Importance [H, P] (token order) of `rows` query rows that a selection
  // ranked by: H2O's over every query head, ITF's over the probe heads.
  virtual void OnImportance(int layer, const at::Tensor& importance, int64_t rows) {}
  // The layer's selection, as attention will see it.
  virtual void OnSelected(int layer, const SelectedPrefix& s) {}
};

// What of every chunk a method reads before its queries exist.
// kNone: nothing; every read names its positions (Gather). kDigests: no
// chunk part, but the layer's resident digests put together as DigestInt8
// hands them out (an int8-digest store), so that it finds them ready.
enum class ReadAhead : uint8_t { kAll, kKeys, kProbeKeys, kNone, kDigests };

class SelectionMethod {
 public:
  virtual ~SelectionMethod() = default;
  // The query-independent part of a layer's read over a prefix of `p` tokens.
  virtual ReadAhead Ahead(int64_t p) const = 0;
  // The prefix KV layer `qkv.layer` attends to. A failed read is returned
  // as is (the caller decides whether to recompute). Reports to `observer`
  // (may be null) what it ranked by; OnSelected is the caller's.
  virtual StatusOr<SelectedPrefix> Select(const LayerQkv& qkv, PrefixSource& src,
                                          SelectionObserver* observer) const = 0;
};

// A method that keeps k = RetainedTokens(opt.retention, P) tokens per head,
// and every token (full reuse, exactly) when k covers the prefix; it reads
// `partial` ahead otherwise. Derived methods choose the k.
class RetainingMethod : public SelectionMethod {
 public:
  RetainingMethod(const SelectorOptions& opt, ReadAhead partial) : opt_(opt), partial_(partial) {}
  ReadAhead Ahead(int64_t p) const final;
  StatusOr<SelectedPrefix> Select(const LayerQkv& qkv, PrefixSource& src, SelectionObserver* observer) const final;

 protected:
  // REQUIRES: 1 <= k < src.tokens(); the new tokens are one causal sequence.
  virtual StatusOr<SelectedPrefix> SelectK(const LayerQkv& qkv, PrefixSource& src, int64_t k,
                                           SelectionObserver* observer) const = 0;
  const SelectorOptions opt_;

 private:
  ReadAhead partial_;
};

using MethodMaker = std::unique_ptr<SelectionMethod> (*)(const SelectorOptions& opt);

// One row per SelectorKind: its name and what callers ask of it.
struct SelectionMethodInfo {
  SelectorKind kind;
  std::string name;
  // Its maker; null where the caller selects (static needs the prefix's own
  // importance, which only eval/scorer.cc has).
  MethodMaker make;
  bool retaining;    // the retention changes what it computes
  bool probe_heads;  // it ranks by probe heads (alpha, agreed-set unit and probe layout matter)
  bool digests;      // it scores chunks by their key digests: its store must keep them
};
// The method table, one row per SelectorKind (method.cc).
const std::vector<SelectionMethodInfo>& SelectionMethods();
// The row of `kind`; a kind without a row is a programming error (checked).
const SelectionMethodInfo& MethodInfo(SelectorKind kind);
// The method's name: "full", "h2o", "itf", "random", "static", "digest".
const std::string& SelectorKindName(SelectorKind kind);
// The method of `opt.kind` with its options. REQUIRES: its row has a maker.
std::unique_ptr<SelectionMethod> MakeSelectionMethod(const SelectorOptions& opt);

// The methods, one file each (full.cc, h2o.cc, itf.cc, random.cc, digest.cc).
std::unique_ptr<SelectionMethod> MakeFullMethod(const SelectorOptions& opt);
std::unique_ptr<SelectionMethod> MakeH2OMethod(const SelectorOptions& opt);
std::unique_ptr<SelectionMethod> MakeItfMethod(const SelectorOptions& opt);
std::unique_ptr<SelectionMethod> MakeRandomMethod(const SelectorOptions& opt);
std::unique_ptr<SelectionMethod> MakeDigestMethod(const SelectorOptions& opt);

// Shared steps of the methods.
// What a selection ranks by, in host memory, where it decides. On CUDA this
// is the layer's host synchronisation, the only one a selection makes
// (kvstore/load_stream.h): everything it computes before stays on the
// device, everything after is host arithmetic and indices copied up without
// waiting. Told to `observer` on every device, so that the CPU path counts
// the waits CUDA would have.
at::Tensor ReadBack(const at::Tensor& t, int layer, SelectionObserver* observer);
// Every token, every head: what each method does when k covers the prefix.
StatusOr<SelectedPrefix> SelectAll(const LayerQkv& qkv, PrefixSource& src);
// Each query head keeps its own top-k by H2O importance; a KV head's values
// serve the union of its query heads' sets, and each query head sees only
// its own (docs/paper.md, GQA). Reads every key and the values of `used`.
// Importance over the rows `shape` names (every row: H2O's).
StatusOr<SelectedPrefix> SelectH2O(const LayerQkv& qkv, PrefixSource& src, int64_t k, const ImportanceShape& shape,
                                   SelectionObserver* observer);

}  // namespace impress

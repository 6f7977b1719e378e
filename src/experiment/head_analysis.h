// The paper's motivation measurements on real prefixes: how alike the heads'
// important-token sets are (observation 1, the head-by-head Jaccard heatmap),
// how that similarity moves with the selection ratio (observation 2), and
// how much of each chunk a selection reads is important (read amplification).
// All from H2O importance (select/importance.h) of documents behind a prefix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/status.h"
#include "data/task.h"

namespace impress {

class Model;
class Tokenizer;

struct HeadAnalysisOptions {
  std::vector<double> retentions = {0.05, 0.1, 0.25, 0.5, 0.75};  // similarity vs selection ratio
  double retention = 0.25;  // the heatmap's and the chunk shares' selection ratio
  int chunk_tokens = 64;
  int probe_heads = 3;      // IMPRESS's probe heads (the first query heads)
};

struct HeadAnalysis {
  int layers = 0, heads = 0, docs = 0;
  int64_t prefix_tokens = 0;
  // [layer][h1 * heads + h2]: Jaccard index of the two query heads' top-k
  // sets at `retention`, averaged over documents (1 on the diagonal).
  std::vector<std::vector<double>> jaccard;
  // Per entry of `retentions`, averaged over layers and documents: the mean
  // pairwise Jaccard of all heads, of the probe heads, and of two random
  // k-subsets ((k/n) / (2 - k/n)).
  std::vector<double> all_heads, probe_heads, random;
  // Chunks whose values a selection at `retention` reads (a chunk holds a
  // token some head kept), by the share of their tokens some head kept:
  // histogram[i] counts shares in (i/10, (i+1)/10].
  std::vector<int64_t> histogram = std::vector<int64_t>(10, 0);
  int64_t chunks_read = 0;
  double important_share_mean = 0;  // over chunks read
};

// Jaccard index of every pair of rows' top-k sets of `importance` [H, P]:
// [H, H] fp32, 1 on the diagonal.
at::Tensor PairwiseJaccard(const at::Tensor& importance, int64_t k);

// Runs `prefix` once, then each document behind it, and measures every
// layer's importance of the prefix tokens for the document's tokens.
// When a document's first token merges with the prefix's last, the prefix
// measured is the tokens all documents share.
StatusOr<HeadAnalysis> AnalyzeHeads(Model& model, const Tokenizer& tok, const std::string& prefix,
                                    const std::vector<Doc>& docs, const HeadAnalysisOptions& options);

}  // namespace impress

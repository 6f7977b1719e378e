// One request through a system (request/systems.h): match -> select and load
// -> compute -> (after the first token) store.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "common/status.h"
#include "kvstore/load_stream.h"
#include "kvstore/prefix_store.h"
#include "request/request_trace.h"
#include "request/systems.h"
#include "model/kv_provider.h"
#include "select/method.h"
#include "select/selector.h"

namespace impress {

class Model;

// Runs `context` (token ids) and returns the log-probabilities after its last
// token; `kv` ends holding what the context's tokens attend to, for scoring
// continuations. The first `storable` tokens (the shared prefix) may be
// reused, and their whole chunks are stored; the store holds one KV per
// prefix, ComputeStoredKv's (request/stored_kv.h), whichever path writes it:
//  - nothing stored: the prefix's chunks are computed as the store computes
//    them and the rest over them; the chunks are stored after the first token;
//  - a stored prefix: served by the system from the store; whole chunks past
//    the match are computed as the store computes them and stored after the
//    first token (never from the selected computation);
//  - a stored chunk that fails its checksum or is missing is never served:
//    the matched prefix is recomputed as the store computes it, the failed
//    chunks are written back (PrefixStore::Heal, counted in healed_chunks),
//    and the request is served again from the store: its answer is the one a
//    clean store gives, bit for bit (recomputed_after_error; the trace's
//    counts are the second attempt's). If writing back fails, or the second
//    attempt fails too, the whole context is recomputed.
// An I/O error reading the store is returned.
StatusOr<at::Tensor> RunRequest(const System& system, Model& model, PrefixStore* store,
                                const std::vector<int32_t>& context, int64_t storable,
                                std::unique_ptr<RewindableKv>* kv, RequestTrace* trace,
                                const RequestOptions& opt = {});

}  // namespace impress

// How a prefix store is written, from the model and the options: the KV
// dtype, the geometry and the fingerprint its MANIFEST records. A store
// opened with another identity is refused.
#pragma once

#include <string>
#include <vector>

#include <c10/core/ScalarType.h>

#include "common/status.h"
#include "store/manifest.h"

namespace impress {

class Model;
struct PrefixStoreOptions;

// "float16", "bfloat16" or "float32"; the error names the flag's choices.
StatusOr<at::ScalarType> KvDtype(const std::string& name);
// The names KvDtype takes (for the command line's checks), float16 first.
const std::vector<std::string>& KvDtypeNames();
// A store fingerprint: architecture, shapes, a checksum of the first MiB of
// the weights (read through Env), KV dtype and chunk size.
std::string StoreFingerprint(const Model& model, const std::string& kv_dtype, int chunk_tokens);
// How a store of `model` under `opt` is written: its geometry and
// fingerprint (what its MANIFEST says). Errors: a bad chunk size or KV dtype.
StatusOr<StoreIdentity> StoreIdentityFor(const Model& model, const PrefixStoreOptions& opt);

}  // namespace impress

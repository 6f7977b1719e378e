// A store's MANIFEST (docs/store.md, "On disk"): one JSON line, written once,
// saying how to read the other files: the format version, the geometry and
// the fingerprint of the model, dtype and chunk size that wrote them.
#pragma once

#include <string>

#include "common/status.h"
#include "store/chunk_layout.h"
#include "store/env.h"

namespace impress {

struct StoreIdentity {
  ChunkGeometry geometry;
  std::string fingerprint;
};

// The MANIFEST's text for `id`.
std::string ManifestText(const StoreIdentity& id);
// The geometry as the MANIFEST writes it (for messages).
std::string GeometryText(const ChunkGeometry& g);
// OK when every field of `g` is in range; else Corruption naming DIR/MANIFEST.
Status CheckGeometry(const std::string& dir, const ChunkGeometry& g);
// Reads DIR/MANIFEST. Errors: NotFound "DIR: no store here (MANIFEST
// missing)"; Corruption when it is not a manifest or its geometry is out of
// range; InvalidArgument for another format version.
StatusOr<StoreIdentity> ReadManifest(Env* env, const std::string& dir);

}  // namespace impress

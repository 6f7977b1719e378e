// A toy backend below the disk: one file per chunk part in a directory,
// named by a hash of the chunk's tokens from the root, so that another store
// pointed at the same directory finds the prefixes this one computed.
#pragma once

#include <string>

#include "engine/chunk_backend.h"

namespace impress {

BackendFactory DirBackendFactory(const std::string& dir);

}  // namespace impress

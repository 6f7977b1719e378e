#include "model/architecture.h"

#include "model/arch.h"

namespace impress {

const std::vector<Architecture>& Architectures() {
  static const std::vector<Architecture> table = {
      {"opt", &ParseOptConfig, &DescribeOpt, &CreateOptModel},
      {"llama", &ParseLlamaConfig, &DescribeLlama, &CreateLlamaModel},
  };
  return table;
}

const Architecture* FindArchitecture(const std::string& model_type) {
  for (const Architecture& a : Architectures())
    if (model_type == a.model_type) return &a;
  return nullptr;
}

std::string ArchitectureNames() {
  std::string out;
  for (const Architecture& a : Architectures()) out += (out.empty() ? "" : ", ") + std::string(a.model_type);
  return out;
}

}  // namespace impress

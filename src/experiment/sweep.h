// Parameter sweeps from the command line: "--alpha 0,0.3,0.6" runs one
// experiment per value, and several swept options run their cross product.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "select/selector.h"

namespace impress {

// The swept parameters; each list holds at least one value.
struct SweepAxes {
  std::vector<ItfUnit> itf_unit = {ItfUnit::kToken};
  std::vector<double> alpha = {0.6};
  std::vector<double> retention = {0.25};
  std::vector<int> chunk = {64};
  std::vector<int> pool = {8};

  size_t size() const { return itf_unit.size() * alpha.size() * retention.size() * chunk.size() * pool.size(); }
  bool swept() const { return size() > 1; }
};

struct SweepPoint {
  ItfUnit itf_unit;
  double alpha, retention;
  int chunk, pool;
  // Sets the selection knobs this point sweeps (ITF unit, alpha, retention) in `s`.
  void ApplyTo(SelectorOptions* s) const;
};

// Every combination, nested as ITF unit, alpha, retention, chunk, pool (pool fastest).
std::vector<SweepPoint> SweepPoints(const SweepAxes& axes);

// {"sweep": [results...]} for several points; the one result unchanged for one.
nlohmann::ordered_json SweepResult(std::vector<nlohmann::ordered_json> results);

}  // namespace impress

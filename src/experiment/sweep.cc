#include "experiment/sweep.h"

namespace impress {

std::vector<SweepPoint> SweepPoints(const SweepAxes& a) {
  std::vector<SweepPoint> points;
  for (ItfUnit unit : a.itf_unit)
    for (double alpha : a.alpha)
      for (double retention : a.retention)
        for (int chunk : a.chunk)
          for (int pool : a.pool) points.push_back({unit, alpha, retention, chunk, pool});
  return points;
}

void SweepPoint::ApplyTo(SelectorOptions* s) const {
  s->unit = itf_unit;
  s->alpha = alpha;
  s->retention = retention;
}

nlohmann::ordered_json SweepResult(std::vector<nlohmann::ordered_json> results) {
  if (results.size() == 1) return std::move(results[0]);
  nlohmann::ordered_json j;
  j["sweep"] = std::move(results);
  return j;
}

}  // namespace impress

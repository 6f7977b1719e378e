// The headlines `impress reproduce` records (experiment/figure_headline.h)
// against the tables scripts/tables/paper_vs_project.py made from the same JSONs
// when it computed them itself: every figure of the four committed runs
// whose JSONs name their columns (results/figures, and the re-measured
// figures at both units and 64 warm-up requests), line for line.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "experiment/figure_headline.h"
#include "experiment/figures.h"

namespace impress {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// figure -> the "this project" cell of a paper_vs_project.md table.
std::map<std::string, std::string> RecordedHeadlines(const std::string& md) {
  std::map<std::string, std::string> out;
  std::istringstream lines(md);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| ", 0) != 0 || line.rfind("| figure ", 0) == 0) continue;
    std::vector<std::string> cells;
    for (size_t at = 1; at < line.size();) {
      const size_t bar = line.find(" |", at);
      if (bar == std::string::npos) break;
      cells.push_back(line.substr(at + 1, bar - at - 1));
      at = bar + 2;
    }
    if (cells.size() >= 3) out[cells[0]] = cells[2];
  }
  return out;
}

TEST(FigureHeadline, ReproducesTheRecordedTables) {
  int compared = 0;
  for (const char* dir : {"results/figures", "results/remeasure/figures", "results/remeasure/figures-chunk",
                          "results/remeasure/figures-warm64"}) {
    const std::string base = std::string(IMPRESS_SOURCE_DIR) + "/" + dir + "/";
    const auto recorded = RecordedHeadlines(ReadFile(base + "paper_vs_project.md"));
    ASSERT_FALSE(recorded.empty()) << base;
    for (const auto& [name, want] : recorded) {
      const nlohmann::json j = nlohmann::json::parse(ReadFile(base + name + ".json"));
      EXPECT_EQ(FigureRunner::HeadlineOf(name, FigureFromJson(j)), want) << dir << " " << name;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 53);  // 17 + 17 + 12 + 7 figures
}

}  // namespace
}  // namespace impress

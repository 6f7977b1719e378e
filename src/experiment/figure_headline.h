// A figure's headline: the one line scripts/tables/paper_vs_project.py sets beside
// the paper's claim, computed from the figure's own rows (by column id) and
// notes. Each registry row (FigureRunner::Registry) names its function; a
// figure without one has an empty headline.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "experiment/figures.h"

namespace impress {

// A figure as `impress reproduce` recorded it (NAME.json): its name, columns
// (ids and labels), rows and notes, which are all a headline reads.
Figure FigureFromJson(const nlohmann::json& j);

std::string IoShareHeadline(const Figure& f);
std::string HeadJaccardHeadline(const Figure& f);
std::string SimilarityRatioHeadline(const Figure& f);
std::string ChunkImportanceHeadline(const Figure& f);
std::string SpiHeadline(const Figure& f);
std::string Fig15Headline(const Figure& f);
std::string Fig16Headline(const Figure& f);
std::string Fig17Headline(const Figure& f);
std::string TailHeadline(const Figure& f);
std::string Fig18Headline(const Figure& f);
std::string Fig19Headline(const Figure& f);
std::string Fig20Headline(const Figure& f);
std::string Fig21Headline(const Figure& f);
std::string Fig22Headline(const Figure& f);
std::string Fig23Headline(const Figure& f);
std::string Fig24Headline(const Figure& f);
std::string Fig25Headline(const Figure& f);

}  // namespace impress

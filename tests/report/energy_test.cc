// The report's energy: a table and a chart beside cost, and the one-line
// "energy" format, when the summaries carry energy figures (sim/energy.h);
// nothing of it when they do not.
#include <gtest/gtest.h>

#include "report/brief.h"
#include "report/formats.h"
#include "report/tables.h"
#include "tests/report/report_test_data.h"

namespace capplan::report {
namespace {

using test_data::Analyzed;
using test_data::KimiFiles;
using test_data::Loaded;

std::vector<Summary> WithEnergy() {
  std::vector<Summary> r = Loaded(KimiFiles());
  double j = 2.0;
  for (Summary& s : r) {
    s.joules_per_output_token = j;
    s.gpu_joules_per_output_token = j / 3;
    s.output_tokens_per_s_per_mw = 1e6 / j;
    s.peak_kw_per_node = 9.5;
    s.pue = 1.3;
    j /= 2;
  }
  return r;
}

const Table* Find(const std::vector<Table>& tables, const std::string& id) {
  for (const Table& t : tables) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

TEST(ReportEnergy, TableChartAndLineWhenTheSummariesHaveEnergy) {
  Analysis a = Analyzed(WithEnergy());
  const auto tables = BuildTables(a);
  const Table* t = Find(tables, "energy");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->rows.size(), a.points.size());
  EXPECT_EQ(t->rows[0][2], "2");
  EXPECT_EQ(t->rows[0][4], "9.5");
  const std::string html = RenderHtml(a, tables);
  EXPECT_NE(html.find("id=\"energy\""), std::string::npos);
  EXPECT_NE(html.find("data-chart=\"energy\""), std::string::npos);
  const std::string line = RenderEnergyBrief(a);
  EXPECT_EQ(line.rfind("Energy (J/out tok, out tok/s per MW, PUE 1.3): ", 0), 0u) << line;
  EXPECT_NE(line.find(a.configs[0].short_label + " "), std::string::npos) << line;
  EXPECT_NE(line.find(" 0.25, 4M"), std::string::npos) << line;
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line";
}

TEST(ReportEnergy, NothingWithoutEnergyFigures) {
  Analysis a = Analyzed(Loaded(KimiFiles()));
  const auto tables = BuildTables(a);
  EXPECT_EQ(Find(tables, "energy"), nullptr);
  EXPECT_EQ(RenderHtml(a, tables).find("data-chart=\"energy\""), std::string::npos);
  EXPECT_EQ(RenderEnergyBrief(a), "");
}

}  // namespace
}  // namespace capplan::report

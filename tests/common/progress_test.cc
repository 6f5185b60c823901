#include "common/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace capplan {
namespace {

TEST(ProgressTest, RendersRateAndEta) {
  EXPECT_EQ(ProgressBar::Render("sweep", 25, 100, 5.0, 10),
            "sweep [##........] 25/100  25% 5.0/s ETA 0:15");
  EXPECT_EQ(ProgressBar::Render("sweep", 0, 10, 0.0, 4), "sweep [....] 0/10   0% 0.0/s ETA ?");
  EXPECT_EQ(FormatDuration(3725), "1:02:05");
}

TEST(ProgressTest, SilentWithoutATerminalAndThrottled) {
  ProgressBar off(nullptr, 10, "x");
  off.Tick();
  off.Finish();
  std::ostringstream os;
  double now = 0;
  {
    ProgressBar bar(&os, 3, "x", [&] { return now; });
    bar.Tick();  // draws
    bar.Tick();  // within 0.1 s: skipped
    now = 1;
    bar.Tick();  // last one always draws
  }
  const std::string s = os.str();
  EXPECT_NE(s.find("1/3"), std::string::npos);
  EXPECT_EQ(s.find("2/3"), std::string::npos);
  EXPECT_NE(s.find("3/3"), std::string::npos);
  EXPECT_EQ(s.back(), '\n');
}

TEST(ProgressTest, UpdateSetsTheCountAndAnUndrawnBarStaysSilent) {
  std::ostringstream os;
  double now = 0;
  {
    ProgressBar quiet(&os, 5, "x", [&] { return now; });
    quiet.Finish();  // never drawn: a short run prints nothing
  }
  EXPECT_EQ(os.str(), "");
  {
    ProgressBar bar(&os, 100, "simulate", [&] { return now; });
    now = 2;
    bar.Update(40);
  }
  EXPECT_NE(os.str().find("40/100  40% 20.0/s ETA 0:03"), std::string::npos) << os.str();
}

}  // namespace
}  // namespace capplan

// The answer first: a few lines saying what changed between configurations
// and what binds, which the HTML and Markdown reports open with and the
// `brief` format prints alone (what `make run` ends with).
#ifndef CAPPLAN_REPORT_BRIEF_H_
#define CAPPLAN_REPORT_BRIEF_H_

#include <string>
#include <vector>

#include "report/analysis.h"

namespace capplan::report {

// One comparison of a configuration with what it is measured against: a PD
// result with its co-located twin (report/pd_compare.h), else a
// configuration at its highest offered load with its baseline at the nearest
// load. Indices into Analysis::points.
struct Comparison {
  int base = -1;
  int point = -1;
  bool pd = false;
};
std::vector<Comparison> Comparisons(const Analysis& a);

// "kv_cache bf16→fp8_e4m3": the deployment fields, model and GPU count that
// differ between two results, the usual levers first (at most three, then
// "+N more").
std::string WhatChanged(const Summary& base, const Summary& s);

// A comparison in words. lead: "<label> vs <baseline label> (<what
// changed>) at concurrency N", with `title` in place of the two labels when
// given. figures: "KV capacity 717K→1.43M tok (+100%); 1009→1546 out tok/s
// (+53%); $5.07→3.31 /M out tok (−35%); binds KV capacity → HBM bandwidth".
// Prefill-only pools count input tokens; open-loop runs add request rates.
struct BriefLine {
  std::string lead, figures;
};
BriefLine Compare(const Analysis& a, const Comparison& c, const std::string& title = "");
// "<lead>: <figures>".
std::string ComparisonLine(const Analysis& a, const Comparison& c);

// The report's opening: at most `max_lines` lines (one per comparison; when
// there are more, the last line counts the rest).
std::vector<std::string> SummaryLines(const Analysis& a, size_t max_lines = 5);

// The `brief` format: per comparison its lead, then its figures indented on
// a second line (a single configuration: its SummaryLines). With one
// comparison and a --title, the title leads.
std::string RenderBrief(const Analysis& a);

// One line of energy per output token and output tokens/s per provisioned
// MW for every configuration (its highest concurrency); "" without energy
// figures (a profile with no power model).
std::string RenderEnergyBrief(const Analysis& a);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_BRIEF_H_

// Number and text formatting shared by every report format, so HTML,
// Markdown and CSV print identical figures.
#ifndef CAPPLAN_REPORT_TEXT_UTIL_H_
#define CAPPLAN_REPORT_TEXT_UTIL_H_

#include <string>
#include <string_view>

namespace capplan::report {

// `digits` significant digits, no exponent for ordinary magnitudes, no
// trailing zeros: 1234.6 -> "1235" (digits 3 keeps integers whole), 0.01234
// -> "0.0123". Infinity prints "inf", NaN "n/a".
std::string FormatNumber(double v, int digits = 3);
// 0.713 -> "71%"; values under 10% keep one decimal ("4.5%").
std::string FormatPercent(double fraction);
// Bytes as GiB with two decimals ("87.66 GiB" without the unit).
std::string FormatGiB(double bytes);
// Signed percent change with a typographic minus: -0.31 -> "−31%".
std::string FormatChange(double change);

// Compact magnitude for one-line summaries: 716552 -> "717K",
// 1433104 -> "1.43M", 1545.7 -> "1546".
std::string FormatCompact(double v);

// True for "/..." (POSIX) and "C:\..." style paths.
bool IsAbsolutePath(std::string_view path);
// Replaces every absolute path inside `text` ("/home/u/x/summary.json") by
// its last component, so a report carries no directory of the machine that
// made it. Relative paths, as a user typed them, stay.
std::string ScrubAbsolutePaths(std::string_view text);

std::string HtmlEscape(std::string_view s);
// RFC 4180 field: quoted when it holds a comma, quote or newline.
std::string CsvField(std::string_view s);
// Markdown table cell: pipes escaped, newlines flattened.
std::string MarkdownCell(std::string_view s);

}  // namespace capplan::report

#endif  // CAPPLAN_REPORT_TEXT_UTIL_H_

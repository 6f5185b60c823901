// A capplan.measurements.v1 document around hand-made records, with the
// provenance fields the reader requires (a made-up H200 run).
#ifndef CAPPLAN_TESTS_TEST_UTIL_MEASUREMENT_DOC_H_
#define CAPPLAN_TESTS_TEST_UTIL_MEASUREMENT_DOC_H_

#include <nlohmann/json.hpp>

namespace capplan::test_util {

inline nlohmann::json MeasurementDoc(nlohmann::json records) {
  return {{"format", "capplan.measurements.v1"},
          {"gpu", "NVIDIA H200"},
          {"driver", "580.1"},
          {"cuda", "13.0"},
          {"commit", "abc1234"},
          {"date", "2026-11-29T23:10:00Z"},
          {"dry_run", false},
          {"records", std::move(records)}};
}

}  // namespace capplan::test_util

#endif  // CAPPLAN_TESTS_TEST_UTIL_MEASUREMENT_DOC_H_

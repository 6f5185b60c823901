// Splitmix64 (Steele, Lea, Flood 2014): a tiny seeded generator with good
// mixing, used wherever the engine needs reproducible randomness (synthetic
// weights and prompts, fault placement, page shuffles).
#ifndef CAPPLAN_ENGINE_SPLITMIX_H_
#define CAPPLAN_ENGINE_SPLITMIX_H_

#include <cstdint>

namespace capplan::engine {

inline uint64_t NextRandom(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace capplan::engine

#endif  // CAPPLAN_ENGINE_SPLITMIX_H_

// rlc_zoh: prints the exact ZOH matrices the plant uses, as JSON, for cross-checking
// against python-control (test/test_discretization.py).
//
//   rlc_zoh R L C h  ->  {"phi": [[..],[..]], "gamma": [..]}
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "netloop/rlc_model.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: rlc_zoh R L C h\n");
    return 2;
  }
  try {
    const netloop::RlcParams p{std::atof(argv[1]), std::atof(argv[2]), std::atof(argv[3])};
    const std::string err = netloop::validateRlcParams(p);
    if (!err.empty()) throw std::invalid_argument(err);
    const netloop::Zoh z = netloop::discretize(p, std::atof(argv[4]));
    std::printf("{\"phi\": [[%.17g, %.17g], [%.17g, %.17g]], \"gamma\": [%.17g, %.17g]}\n", z.phi[0][0],
                z.phi[0][1], z.phi[1][0], z.phi[1][1], z.gamma[0], z.gamma[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rlc_zoh: %s\n", e.what());
    return 2;
  }
  return 0;
}

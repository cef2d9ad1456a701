#include "netloop/rlc_model.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace netloop {

namespace {

Mat3 multiply(const Mat3& a, const Mat3& b) {
  Mat3 c{};
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 3; ++j) c[i][j] += a[i][k] * b[k][j];
  return c;
}

double normInf(const Mat3& m) {
  double n = 0.0;
  for (const auto& row : m) n = std::max(n, std::fabs(row[0]) + std::fabs(row[1]) + std::fabs(row[2]));
  return n;
}

}  // namespace

Mat3 expm3(const Mat3& m) {
  // Scale so that ||m / 2^s|| <= 0.25, sum the Taylor series, then square s times.
  int s = 0;
  double n = normInf(m);
  if (!std::isfinite(n)) throw std::invalid_argument("expm3: matrix has non-finite entries");
  while (n > 0.25) {
    n /= 2.0;
    ++s;
  }
  const double scale = std::ldexp(1.0, -s);
  Mat3 a{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) a[i][j] = m[i][j] * scale;

  Mat3 result{};
  Mat3 term{};
  for (int i = 0; i < 3; ++i) result[i][i] = term[i][i] = 1.0;
  for (int k = 1; k <= 18; ++k) {  // 0.25^19 / 19! is far below double precision
    term = multiply(term, a);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        term[i][j] /= k;
        result[i][j] += term[i][j];
      }
  }
  for (int i = 0; i < s; ++i) result = multiply(result, result);
  return result;
}

std::string validateRlcParams(const RlcParams& p) {
  std::ostringstream err;
  const struct { const char* name; double value; } fields[] = {{"R", p.R}, {"L", p.L}, {"C", p.C}};
  for (const auto& f : fields) {
    if (!std::isfinite(f.value) || f.value <= 0.0) {
      err << f.name << " must be a finite number > 0, got " << f.value;
      return err.str();
    }
  }
  return "";
}

Zoh discretize(const RlcParams& p, double h) {
  if (!(h >= 0.0) || !std::isfinite(h)) throw std::invalid_argument("discretize: interval must be >= 0");
  // Augmented matrix [[A, B], [0, 0]] * h with A = [[0, 1/C], [-1/L, -R/L]], B = [0, 1/L].
  Mat3 m{};
  m[0][1] = h / p.C;
  m[1][0] = -h / p.L;
  m[1][1] = -h * p.R / p.L;
  m[1][2] = h / p.L;
  const Mat3 e = expm3(m);
  Zoh z;
  z.phi = {{{e[0][0], e[0][1]}, {e[1][0], e[1][1]}}};
  z.gamma = {e[0][2], e[1][2]};
  return z;
}

RlcCircuit::RlcCircuit(const RlcParams& p, double vc0, double i0) : p_(p), x_{vc0, i0} {
  const std::string err = validateRlcParams(p);
  if (!err.empty()) throw std::invalid_argument(err);
  if (!std::isfinite(vc0) || !std::isfinite(i0)) throw std::invalid_argument("initial state must be finite");
}

void RlcCircuit::advance(double h, double u) {
  if (h < 0.0) throw std::invalid_argument("RlcCircuit::advance: negative interval");
  if (h == 0.0) return;
  const Zoh z = discretize(p_, h);
  const std::array<double, 2> x = x_;
  x_[0] = z.phi[0][0] * x[0] + z.phi[0][1] * x[1] + z.gamma[0] * u;
  x_[1] = z.phi[1][0] * x[0] + z.phi[1][1] * x[1] + z.gamma[1] * u;
}

}  // namespace netloop

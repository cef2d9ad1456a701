// Exact continuous-time simulation of the series RLC circuit of the Pound paper.
//
// The circuit is driven by a source voltage u [V]; the state is x = [Vc, i] (capacitor
// voltage [V], loop current [A]) and the output is y = Vc:
//
//     C dVc/dt = i
//     L di/dt  = u - R i - Vc
//
// Between events the input is held constant, so the state is advanced with the exact
// zero-order-hold solution over the real elapsed time h:
//
//     x(t+h) = Phi(h) x(t) + Gamma(h) u,   Phi(h) = e^{A h},   Gamma(h) = (int_0^h e^{A s} ds) B
//
// both read off the matrix exponential of the augmented matrix [[A, B], [0, 0]] h. There is
// no integration step, so stepping over any split of an interval equals one step over it.
#pragma once

#include <array>
#include <string>

namespace netloop {

using Mat3 = std::array<std::array<double, 3>, 3>;

/// Matrix exponential of a 3x3 matrix (scaling and squaring with a Taylor series;
/// accurate to a few ulp for the matrices met here).
Mat3 expm3(const Mat3& m);

struct RlcParams {
  double R = 1.0;   ///< resistance [ohm]
  double L = 0.1;   ///< inductance [H]
  double C = 0.1;   ///< capacitance [F]
};

/// Empty string when the parameters are valid, else a message naming the bad one.
std::string validateRlcParams(const RlcParams& p);

/// Zero-order-hold discretisation over an interval h: x+ = phi x + gamma u.
struct Zoh {
  std::array<std::array<double, 2>, 2> phi{};
  std::array<double, 2> gamma{};
};

/// Exact ZOH matrices of the circuit over an interval of h seconds (h >= 0).
Zoh discretize(const RlcParams& p, double h);

/// The circuit's state, advanced exactly between input changes.
class RlcCircuit {
 public:
  explicit RlcCircuit(const RlcParams& p, double vc0 = 0.0, double i0 = 0.0);

  /// Advance the state by h seconds with the input held at u. h < 0 is an error.
  void advance(double h, double u);

  double output() const { return x_[0]; }           ///< y = Vc [V]
  const std::array<double, 2>& state() const { return x_; }
  const RlcParams& params() const { return p_; }

 private:
  RlcParams p_;
  std::array<double, 2> x_;
};

}  // namespace netloop

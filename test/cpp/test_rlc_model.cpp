// Unit tests of the exact RLC simulation: the matrix exponential, the ZOH matrices and
// the property the plant relies on (any split of an interval equals one step over it).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "netloop/rlc_model.h"

using netloop::RlcCircuit;
using netloop::RlcParams;

TEST(Expm3, DiagonalMatrixGivesExponentials) {
  netloop::Mat3 m{};
  m[0][0] = 1.0;
  m[1][1] = -2.5;
  m[2][2] = 7.0;
  const netloop::Mat3 e = netloop::expm3(m);
  EXPECT_NEAR(e[0][0], std::exp(1.0), 1e-14 * std::exp(1.0));
  EXPECT_NEAR(e[1][1], std::exp(-2.5), 1e-15);
  EXPECT_NEAR(e[2][2], std::exp(7.0), 1e-12 * std::exp(7.0));
  EXPECT_EQ(e[0][1], 0.0);
}

TEST(Expm3, RotationGeneratorGivesCosSin) {
  netloop::Mat3 m{};
  m[0][1] = -3.0;  // rotation by 3 rad in the (0,1) plane
  m[1][0] = 3.0;
  const netloop::Mat3 e = netloop::expm3(m);
  EXPECT_NEAR(e[0][0], std::cos(3.0), 1e-14);
  EXPECT_NEAR(e[1][0], std::sin(3.0), 1e-14);
  EXPECT_NEAR(e[2][2], 1.0, 1e-15);
}

TEST(Discretize, ZeroIntervalIsIdentity) {
  const netloop::Zoh z = netloop::discretize(RlcParams{}, 0.0);
  EXPECT_EQ(z.phi[0][0], 1.0);
  EXPECT_EQ(z.phi[1][1], 1.0);
  EXPECT_EQ(z.phi[0][1], 0.0);
  EXPECT_EQ(z.gamma[0], 0.0);
}

TEST(Discretize, DcGainOfLongIntervalIsOne) {
  // After a long time with u held at 1 V the capacitor is charged to 1 V and no current flows.
  RlcCircuit c(RlcParams{}, 0.0, 0.0);
  c.advance(20.0, 1.0);
  EXPECT_NEAR(c.output(), 1.0, 1e-12);
  EXPECT_NEAR(c.state()[1], 0.0, 1e-12);
}

TEST(RlcCircuit, AnySplitOfAnIntervalEqualsOneStep) {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<double> frac(0.0, 1.0);
  for (int trial = 0; trial < 200; ++trial) {
    const double total = 0.001 + 0.2 * frac(rng);
    const double u = -5.0 + 10.0 * frac(rng);
    RlcCircuit whole(RlcParams{}, 0.3, -0.1);
    whole.advance(total, u);
    RlcCircuit split(RlcParams{}, 0.3, -0.1);
    double left = total;
    const int pieces = 1 + static_cast<int>(frac(rng) * 12);
    for (int i = 0; i < pieces - 1; ++i) {
      const double h = left * frac(rng);
      split.advance(h, u);
      left -= h;
    }
    split.advance(left, u);
    EXPECT_NEAR(split.state()[0], whole.state()[0], 1e-12) << "trial " << trial;
    EXPECT_NEAR(split.state()[1], whole.state()[1], 1e-12) << "trial " << trial;
  }
}

TEST(RlcCircuit, MatchesAnalyticStepResponse) {
  // zeta = 0.5, wn = 10 rad/s: Vc(t) = 1 - e^{-5t} (cos wd t + (5/wd) sin wd t), wd = sqrt(75).
  const double wd = std::sqrt(75.0);
  RlcCircuit c(RlcParams{}, 0.0, 0.0);
  double t = 0.0;
  for (int k = 0; k < 100; ++k) {
    c.advance(0.013, 1.0);
    t += 0.013;
    const double expected = 1.0 - std::exp(-5.0 * t) * (std::cos(wd * t) + 5.0 / wd * std::sin(wd * t));
    ASSERT_NEAR(c.output(), expected, 1e-12) << "t=" << t;
  }
}

TEST(RlcCircuit, RefusesInvalidParameters) {
  EXPECT_THROW(RlcCircuit(RlcParams{0.0, 0.1, 0.1}), std::invalid_argument);
  EXPECT_THROW(RlcCircuit(RlcParams{1.0, -0.1, 0.1}), std::invalid_argument);
  EXPECT_THROW(RlcCircuit(RlcParams{1.0, 0.1, NAN}), std::invalid_argument);
  EXPECT_NE(netloop::validateRlcParams(RlcParams{1.0, 0.1, 0.0}).find("C"), std::string::npos);
  RlcCircuit ok(RlcParams{});
  EXPECT_THROW(ok.advance(-0.001, 1.0), std::invalid_argument);
}

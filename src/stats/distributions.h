// Distribution functions the tests and intervals need. Out-of-domain arguments return NaN rather
// than throwing (Boost.Math's default policy would throw).
#pragma once

namespace dlbench::stats {

// Standard normal CDF, Phi(z). NaN -> NaN; +-inf -> 1, 0.
double NormalCdf(double z);
// Standard normal quantile, Phi^-1(p). p == 0 -> -inf, p == 1 -> +inf, outside [0, 1] -> NaN.
double NormalQuantile(double p);
// Student's t quantile with `dof` degrees of freedom (Boost.Math). dof must be > 0 (an infinite
// dof gives the normal quantile); p == 0 / 1 -> -inf / +inf; otherwise out of domain -> NaN.
double StudentTQuantile(double p, double dof);
// Student's t CDF with `dof` degrees of freedom; dof <= 0 or NaN -> NaN, infinite dof -> Phi(t).
double StudentTCdf(double t, double dof);

}  // namespace dlbench::stats

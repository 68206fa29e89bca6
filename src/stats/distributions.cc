#include "stats/distributions.h"

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <limits>

namespace dlbench::stats {

double NormalCdf(double z) {
  if (std::isnan(z)) return NAN;
  // erfc keeps full relative precision in the lower tail, where 1 - erf would cancel.
  return 0.5 * std::erfc(-z / std::sqrt(2.0));
}

double NormalQuantile(double p) {
  if (!(p >= 0.0 && p <= 1.0)) return NAN;
  if (p == 0.0) return -std::numeric_limits<double>::infinity();
  if (p == 1.0) return std::numeric_limits<double>::infinity();
  return boost::math::quantile(boost::math::normal_distribution<double>(0.0, 1.0), p);
}

double StudentTQuantile(double p, double dof) {
  if (!(p >= 0.0 && p <= 1.0) || !(dof > 0.0)) return NAN;
  if (std::isinf(dof)) return NormalQuantile(p);
  if (p == 0.0) return -std::numeric_limits<double>::infinity();
  if (p == 1.0) return std::numeric_limits<double>::infinity();
  return boost::math::quantile(boost::math::students_t_distribution<double>(dof), p);
}

double StudentTCdf(double t, double dof) {
  if (std::isnan(t) || !(dof > 0.0)) return NAN;
  if (std::isinf(dof)) return NormalCdf(t);
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  return boost::math::cdf(boost::math::students_t_distribution<double>(dof), t);
}

}  // namespace dlbench::stats

"""What src/load computes with, written out in Python (``dlbench_client.load``): SplitMix64
(src/common/hash.h), std::mt19937_64 and std::llround, so that the seeds and schedules match the
C++ ones for the same seed."""

from __future__ import annotations

import math

_MASK64 = (1 << 64) - 1


# -- generators -----------------------------------------------------------------------------------
def splitmix64(x: int) -> int:
    """SplitMix64's finaliser of ``x + gamma`` (src/common/hash.h)."""
    z = (x + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


class Mt19937_64:
    """std::mt19937_64 ([rand.predef]: the 10000th output from the default seed 5489 is
    9981545732273789042), so that schedules match the C++ generator's for the same seed."""

    _N, _M = 312, 156
    _MATRIX_A = 0xB5026F5AA96619E9
    _UPPER, _LOWER = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed: int = 5489) -> None:
        mt = [0] * self._N
        mt[0] = seed & _MASK64
        for i in range(1, self._N):
            prev = mt[i - 1]
            mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) & _MASK64
        self._mt = mt
        self._index = self._N

    def _twist(self) -> None:
        mt, n, m = self._mt, self._N, self._M
        upper, lower, matrix_a = self._UPPER, self._LOWER, self._MATRIX_A
        for k in range(n):
            x = (mt[k] & upper) | (mt[(k + 1) % n] & lower)
            xa = x >> 1
            if x & 1:
                xa ^= matrix_a
            mt[k] = mt[(k + m) % n] ^ xa
        self._index = 0

    def __call__(self) -> int:
        if self._index >= self._N:
            self._twist()
        y = self._mt[self._index]
        self._index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & _MASK64


def _llround(x: float) -> int:
    """std::llround for x >= 0: halves away from zero (Python's round() would round them to even)."""
    r = math.floor(x)
    return int(r) + (1 if x - r >= 0.5 else 0)

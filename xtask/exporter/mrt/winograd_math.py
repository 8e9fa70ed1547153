"""Winograd minimal-filtering transforms F(m, r) built from interpolation points (the Lavin-Gray / Toom-Cook
construction), exactly, in rational arithmetic. Pure Python + numpy: no tinygrad, so the tests can import it alone.

Correlation of a tile d (length n = m + r - 1) with a filter g (length r) gives m outputs y_i = sum_k g_k d_{i+k}:

    y = Aᵀ [ (G g) ⊙ (Bᵀ d) ]        2-D:  Y = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A

Construction (docs/cpu-kernels.md, "Winograd convolutions"): a linear *convolution* s = g * h (deg r-1 times deg m-1)
is recovered from n products g(p_j)·h(p_j) at n-1 finite points plus the point at infinity (leading coefficients):
s = V⁻¹ [(E_g g) ⊙ (E_h h)], with V the nxn evaluation (Vandermonde) matrix and E_g, E_h the evaluation matrices of
the two factors. Correlation is the same trilinear form with the roles of h and s swapped, so Aᵀ = E_hᵀ, G = E_g and
Bᵀ = (V⁻¹)ᵀ. Finally each row j of Bᵀ is scaled to a primitive integer vector and G's row j divided by the same factor
(the product is unchanged); G is applied once at export, so its fractions cost nothing at run time.
"""

from fractions import Fraction

import numpy as np

# F(4x4, 3x3): 6x6 input tiles. Points 0, ±1, ±2 (and infinity) give Bᵀ and Aᵀ small integer entries (at most 5 and 8)
# and, measured on random 64-channel tiles in float32, an error as small as the ±1/2 variants (docs/cpu-kernels.md).
M, R = 4, 3
N = M + R - 1
POINTS: tuple[Fraction, ...] = (Fraction(0), Fraction(1), Fraction(-1), Fraction(2), Fraction(-2))

Matrix = list[list[Fraction]]


def _inverse(a: Matrix) -> Matrix:
  """Exact Gauss-Jordan inverse of a square rational matrix (raises ValueError when singular)."""
  n = len(a)
  w = [list(row) + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(a)]
  for c in range(n):
    p = next((r for r in range(c, n) if w[r][c] != 0), None)
    if p is None:
      raise ValueError("the interpolation points are not distinct")
    w[c], w[p] = w[p], w[c]
    inv = 1 / w[c][c]
    w[c] = [x * inv for x in w[c]]
    for r in range(n):
      if r != c and w[r][c] != 0:
        f = w[r][c]
        w[r] = [x - f * y for x, y in zip(w[r], w[c])]
  return [row[n:] for row in w]


def _eval_rows(points, cols: int) -> Matrix:
  """Rows evaluating a polynomial with `cols` coefficients at each finite point, then at infinity (its leading one)."""
  return [[p**k for k in range(cols)] for p in points] + [[Fraction(int(k == cols - 1)) for k in range(cols)]]


def _gcd_lcm_scale(row: list[Fraction]) -> Fraction:
  """The factor that turns a rational row into a primitive integer row with a positive first non-zero entry."""
  from math import gcd, lcm

  den = lcm(*(x.denominator for x in row))
  nums = [int(x * den) for x in row]
  g = gcd(*nums) or 1
  lead = next((x for x in nums if x), 1)
  return Fraction(den, g) * (1 if lead > 0 else -1)


def transforms(m: int = M, r: int = R, points=POINTS) -> tuple[Matrix, Matrix, Matrix]:
  """(Aᵀ mxn, G nxr, Bᵀ nxn) for F(m, r) from n-1 distinct finite `points` plus infinity, exact."""
  n = m + r - 1
  pts = [Fraction(p) for p in points]
  if len(pts) != n - 1 or len(set(pts)) != len(pts):
    raise ValueError(f"F({m},{r}) needs {n - 1} distinct finite points, got {list(points)}")
  v_inv = _inverse(_eval_rows(pts, n))
  e_g, e_h = _eval_rows(pts, r), _eval_rows(pts, m)
  at = [[e_h[j][i] for j in range(n)] for i in range(m)]
  bt = [[v_inv[i][j] for i in range(n)] for j in range(n)]  # (V⁻¹)ᵀ
  g = [list(row) for row in e_g]
  for j in range(n):
    s = _gcd_lcm_scale(bt[j])
    bt[j] = [x * s for x in bt[j]]
    g[j] = [x / s for x in g[j]]
  return at, g, bt


def as_array(a: Matrix, dtype=np.float64) -> np.ndarray:
  return np.array([[float(x) for x in row] for row in a], dtype=dtype)


def fold_weights(w: np.ndarray, g: np.ndarray) -> np.ndarray:
  """Conv weights [K, C, 3, 3] -> transformed weights U [n*n, K, C] (U[i*n+j] = (G w Gᵀ)[i, j]), computed in float64
  and returned as float32: the weight transform done once at export."""
  u = np.einsum("ik,ockl,jl->ijoc", g, w.astype(np.float64), g)
  n = g.shape[0]
  return np.ascontiguousarray(u.reshape(n * n, w.shape[0], w.shape[1]).astype(np.float32))


def correlate_tile(at: np.ndarray, g: np.ndarray, bt: np.ndarray, filt: np.ndarray, tile: np.ndarray) -> np.ndarray:
  """Y = Aᵀ[(G f Gᵀ) ⊙ (Bᵀ d B)]A for one 2-D tile (the identity the tests check against direct correlation)."""
  return at @ ((g @ filt @ g.T) * (bt @ tile @ bt.T)) @ at.T

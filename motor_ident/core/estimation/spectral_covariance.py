"""Covariance of a least-squares estimate whose residuals are coloured noise: the sandwich in the frequency domain.

The residual-based sandwich (`motor_ident.core.estimation.covariance`) estimates the long-run covariance
of the p-dimensional scores from their own series. Its estimate has at most as many independent terms
as the series has independent blocks: a floating-base recording filtered at 5 Hz and moving at about
1 Hz holds a few dozen, for 200-330 base parameters, so most directions get no variance at all, and
the textbook floor below them (white residuals) is ~100 times too small at 1 kHz (the 5 Hz filter
leaves one independent residual per ~100 samples). On the simulated iCub the true base parameters were
then 250 times the number of parameters (in squared Mahalanobis distance) from the estimate.

Here the residuals are modelled as a stationary process independent of the regressor, whose n x n
cross-spectral density S_e(f) (the rows' noise and their correlation) is estimated from the residuals
themselves, a low-dimensional quantity even a short recording determines:

    Cov = H^-1 G H^-1,    G = (1/N) sum_f Yhat(f)^H W S_e(f) W Yhat(f)

(Whittle's frequency-domain form of the generalised least-squares covariance; Pintelon and Schoukens
2012), with Yhat(f) the discrete Fourier transform over time of the regressor (N, n, p), W the rows'
weights and H = sum_k Y_k' W Y_k. S_e is the residuals' periodogram averaged over `HALF_WIDTH` bins on
each side (Daniell). Only the frequencies where the measurements have power are summed (`band`); the
rest carry none of a low-pass filtered residual.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.errors import EstimationError

FloatArray = NDArray[np.float64]

HALF_WIDTH = 10
"""Periodogram bins averaged on each side of a frequency for the residuals' spectrum: the fit absorbs the
residuals at the motion's own frequencies, and neighbours restore their level (2, 5 and 10 bins put the
true parameters of a simulated reduced iCub 14, 7.6 and 4.8 times the parameter count from the estimate,
in squared Mahalanobis distance; 250 with the residual-based sandwich)."""

BAND_LEVEL = 1e-9
"""`band` keeps the frequencies up to the last one whose power exceeds this fraction of the largest."""


def band(measured: ArrayLike) -> int:
    """Number of DFT bins (from 0) where the measurements (N, n) have power: beyond the last bin whose
    (row-normalised, mean-removed) periodogram exceeds `BAND_LEVEL` of its largest, plus `HALF_WIDTH`."""
    y = np.asarray(measured, dtype=float)
    y = y - y.mean(axis=0)
    y = y / np.maximum(y.std(axis=0), 1e-300)
    power = np.sum(np.abs(np.fft.rfft(y, axis=0)) ** 2, axis=1)
    above = np.flatnonzero(power > BAND_LEVEL * power.max())
    last = int(above[-1]) if above.size else 0
    return int(min(last + 1 + HALF_WIDTH, power.size))


class LowFrequencyTransform:
    """Accumulates, chunk by chunk in time order, the DFT of a regressor at bins 0..K-1 and its residuals.

    Args:
        samples: N, the series' total length; bins: K (`band`); theta: the estimate (p,) the residuals are of.
    """

    def __init__(self, samples: int, bins: int, theta: ArrayLike) -> None:
        self.samples, self.bins = int(samples), int(bins)
        self.theta = np.asarray(theta, dtype=float)
        self.regressor: NDArray[np.complex128] | None = None
        self.residuals: list[FloatArray] = []
        self.seen = 0

    def add(self, Y: ArrayLike, measured: ArrayLike) -> None:
        """Next chunk: regressor (N_c, n, p) and measurements (N_c, n)."""
        Y = np.asarray(Y, dtype=float)
        count, n, p = Y.shape
        angle = 2.0 * np.pi * np.outer(np.arange(self.bins), np.arange(self.seen, self.seen + count)) / self.samples
        flat = Y.reshape(count, n * p)
        part = (np.cos(angle) @ flat - 1j * (np.sin(angle) @ flat)).reshape(self.bins, n, p)  # real products
        self.regressor = part if self.regressor is None else self.regressor + part
        self.residuals.append(np.asarray(measured, dtype=float) - Y @ self.theta)
        self.seen += count

    def passing(self, chunks: Iterable[tuple[FloatArray, FloatArray]]) -> Iterator[tuple[FloatArray, FloatArray]]:
        """The chunks unchanged, each added on the way (to share a pass with another consumer)."""
        for Y, measured in chunks:
            self.add(Y, measured)
            yield Y, measured


def coloured_noise_covariance(
    transform: LowFrequencyTransform, information: ArrayLike, weights: ArrayLike, *, half_width: int = HALF_WIDTH
) -> FloatArray:
    """``H^-1 G H^-1`` of the module docstring (p, p) from a completed `LowFrequencyTransform`.

    Args:
        information: H (p, p), ``sum_k Y_k' W Y_k``; weights: the rows' W (n,), 1 / sigma_j^2 for WLS.

    Raises:
        EstimationError: the transform has not seen all its samples.
    """
    if transform.regressor is None or transform.seen != transform.samples:
        raise EstimationError(f"the transform has seen {transform.seen} of {transform.samples} samples")
    root = np.sqrt(np.asarray(weights, dtype=float))
    N, K = transform.samples, transform.bins
    H_inv = np.linalg.inv(np.asarray(information, dtype=float))
    u = np.concatenate(transform.residuals) * root  # whitened residuals W^1/2 e
    Yhat = transform.regressor * root[None, :, None]  # W^1/2 Yhat, (K, n, p)
    spectrum = np.fft.rfft(u, axis=0)
    periodogram = np.einsum("fi,fj->fij", spectrum, spectrum.conj()) / N
    # the fit takes each row's residual at the regressor's frequencies out (its leverage there, summing to
    # p over all frequencies): the averaged periodogram is divided by the averaged share left
    leverage = np.zeros(periodogram.shape[:2])
    leverage[:K] = np.einsum("fia,ab,fib->fi", Yhat, H_inv, Yhat.conj()).real / N
    kept = np.clip(_daniell(1.0 - leverage, half_width), 0.1, None)
    S = (_daniell(periodogram, half_width) / np.sqrt(kept[:, :, None] * kept[:, None, :]))[:K]
    # two-sided sum: the bins above 0 (and below Nyquist) stand for their negative twins too
    twice = np.full(K, 2.0)
    twice[0] = 1.0
    if N % 2 == 0 and K == N // 2 + 1:
        twice[-1] = 1.0
    p = Yhat.shape[2]
    weighted = np.einsum("fij,fjb->fib", S, Yhat)  # S_u(f) W^1/2 Yhat(f), (K, n, p)
    G = ((Yhat.conj() * twice[:, None, None]).reshape(-1, p).T @ weighted.reshape(-1, p)).real / N
    out = H_inv @ G @ H_inv.T
    return np.asarray(0.5 * (out + out.T), dtype=float)


def at_least(covariance: ArrayLike, floor: ArrayLike) -> FloatArray:
    """``covariance`` (p, p) raised to ``floor`` (p, p, positive definite) in every direction where it is smaller.

    In the floor's metric (L^-1 C L^-T, L L' = floor) the eigenvalues below 1 become 1. Both are
    first scaled by the floor's standard deviations (base parameters span ten decades of units), and
    the floor's eigenvalues are kept above 1e-12 of its largest: a floor that is positive definite
    only up to rounding (an eigenvalue of -1e-12 relative, as on a 208-parameter humanoid) is taken
    as its positive part instead of failing.
    """
    C = np.asarray(covariance, dtype=float)
    B = np.asarray(floor, dtype=float)
    scale = np.sqrt(np.clip(np.diag(B), np.finfo(float).tiny, None))
    outer = np.outer(scale, scale)
    w, V = np.linalg.eigh((B + B.T) / (2.0 * outer))
    w = np.maximum(w, 1e-12 * max(float(w.max()), np.finfo(float).tiny))
    L, L_inv = V * np.sqrt(w), (V / np.sqrt(w)).T
    S = L_inv @ ((C + C.T) / (2.0 * outer)) @ L_inv.T
    values, vectors = np.linalg.eigh((S + S.T) / 2.0)
    LU = L @ vectors
    return np.asarray((LU * np.maximum(values, 1.0)) @ LU.T * outer, dtype=float)


def _daniell(x: NDArray[np.generic], half_width: int) -> NDArray[np.generic]:
    """Average over 2 m + 1 neighbouring frequencies (first axis), mirrored at 0 (a real series' spectrum is
    even; cross-spectra Hermitian) and at the last bin."""
    m = int(half_width)
    padded = np.concatenate([x[1 : m + 1][::-1].conj(), x, x[-m - 1 : -1][::-1].conj()])
    cumulative = np.concatenate([np.zeros((1, *padded.shape[1:]), dtype=padded.dtype), np.cumsum(padded, axis=0)])
    out: NDArray[np.generic] = (cumulative[2 * m + 1 :] - cumulative[: -2 * m - 1]) / (2 * m + 1)
    return out

"""Histogram observers (PaddleSlim's names): a histogram of ``|x|`` over every calibration batch,
from which ``cal_thresholds`` picks the abs-max that ``convert`` uses, clipping rare outliers:

- ``HistObserver(percent=0.999)``: the ``percent`` quantile of ``|x|``;
- ``KLObserver``: the threshold whose quantized distribution is closest to the observed one in KL
  divergence (TensorRT's entropy calibration);
- ``MSEObserver``: the threshold with the least mean squared quantization error.

The histogram has ``bins_count`` bins over ``[0, max|x| seen]``; when a batch exceeds the range,
the old counts are moved into the wider bins (each old bin's count to the bin holding its centre).
The statistics are numpy arrays read from the tensors, so these observers calibrate in eager mode
(under ``to_static`` the function falls back to eager, with to_static's warning).
"""

from __future__ import annotations

import numpy as np

import oar
from oar.errors import ArgumentError

from ..base import BaseObserver, SymmetricQuanter, qmax
from ..factory import ObserverFactory


def rebin(hist: np.ndarray, old_max: float, new_max: float) -> np.ndarray:
    """``hist`` over ``[0, old_max]`` moved onto as many bins over ``[0, new_max]``: each old bin's
    count goes to the new bin holding its centre."""
    bins = hist.size
    centres = (np.arange(bins) + 0.5) * (old_max / bins)
    index = np.minimum((centres / (new_max / bins)).astype(np.int64), bins - 1)
    return np.bincount(index, weights=hist, minlength=bins)


def kl_threshold_bins(hist: np.ndarray, levels: int) -> int:
    """How many of the histogram's first bins to keep (the threshold is that many bin widths):
    TensorRT's entropy calibration, searched from half the bins up as Paddle's ``cal_kl_threshold``. For each candidate ``i``, P is ``hist[:i]`` with the outliers
    added to its last bin, Q is ``hist[:i]`` merged into ``levels`` groups and spread evenly over
    each group's non-empty bins; the ``i`` with the least KL(P || Q) wins."""
    bins = hist.size
    if bins <= levels:
        return bins
    total = hist.sum()
    best, best_kl = bins, np.inf
    for i in range(max(levels, bins // 2), bins + 1):  # as Paddle: never clip more than half the range
        if hist[i - 1] == 0:
            continue
        p = hist[:i].astype(np.float64)
        p[-1] += hist[i:].sum()
        group = (np.arange(i) * levels) // i
        nonzero = (hist[:i] > 0).astype(np.float64)
        counts = np.bincount(group, weights=hist[:i], minlength=levels)
        sizes = np.bincount(group, weights=nonzero, minlength=levels)
        q = np.where(nonzero > 0, counts[group] / np.maximum(sizes[group], 1.0), 0.0)
        mask = p > 0
        pn, qn = p[mask] / total, q[mask] / q.sum()
        kl = float(np.sum(pn * np.log(pn / np.maximum(qn, 1e-12))))
        if kl < best_kl:
            best, best_kl = i, kl
    return best


def mse_threshold(hist: np.ndarray, hist_max: float, bits: int, candidates: int = 200) -> float:
    """The threshold among ``hist_max * k / candidates`` (k = 1..candidates) with the least squared
    error of symmetric quantization, each bin counted at its centre."""
    bins = hist.size
    centres = (np.arange(bins) + 0.5) * (hist_max / bins)
    q = qmax(bits)
    thresholds = hist_max * np.arange(1, candidates + 1) / candidates
    steps = thresholds / q
    fq = np.clip(np.rint(centres[None, :] / steps[:, None]), -q, q) * steps[:, None]
    errors = ((centres[None, :] - fq) ** 2 * hist[None, :]).sum(axis=1)
    return float(thresholds[int(np.argmin(errors))])


class BaseHistObserverLayer(SymmetricQuanter, BaseObserver):
    def __init__(self, layer, quant_bits: int = 8, bins_count: int = 2048):
        super().__init__()
        if bins_count < 2:
            raise ArgumentError(f"{type(self).__name__}: bins_count must be at least 2, got {bins_count}")
        self._bit_length = int(quant_bits)
        self._bins_count = int(bins_count)
        self._hist: np.ndarray | None = None
        self._hist_max = 0.0
        self._threshold: float | None = None

    def forward(self, input):
        # Reading the values: under to_static this makes the function run eagerly, with a warning.
        a = np.abs(np.asarray(input.detach().numpy(copy=False), dtype=np.float64)).ravel()
        self._threshold = None
        current = float(a.max()) if a.size else 0.0
        if self._hist is None:
            self._hist_max = current if current > 0 else 1e-8
            self._hist = np.zeros(self._bins_count, np.float64)
        elif current > self._hist_max:
            self._hist = rebin(self._hist, self._hist_max, current)
            self._hist_max = current
        self._hist += np.histogram(a, bins=self._bins_count, range=(0.0, self._hist_max))[0]
        return input

    def observed(self) -> bool:
        return self._hist is not None and self._hist.sum() > 0

    def _compute_threshold(self) -> float:
        raise NotImplementedError

    def cal_thresholds(self) -> None:
        if self.observed():
            self._threshold = max(self._compute_threshold(), 1e-8)

    def scales(self):
        if self._threshold is None:
            self.cal_thresholds()
        return None if self._threshold is None else oar.to_tensor(self._threshold, dtype="float32")


class HistObserver(ObserverFactory):
    """The ``percent`` quantile of ``|x|`` over the calibration data (PaddleSlim's ``HistObserver``),
    to a bin's width (the upper edge of the bin where the quantile falls).

    >>> import numpy as np, oar
    >>> from oar.quantization.observers import HistObserver
    >>> observer = HistObserver(percent=0.9, bins_count=100)._instance(None)
    >>> _ = observer(oar.to_tensor(np.arange(100, dtype="float32") + 0.5))
    >>> observer.cal_thresholds()
    >>> round(float(observer.scales()))
    90
    """

    def __init__(self, quant_bits: int = 8, bins_count: int = 2048, percent: float = 0.999):
        super().__init__(quant_bits=quant_bits, bins_count=bins_count, percent=percent)

    def _get_class(self):
        return HistObserverLayer


class HistObserverLayer(BaseHistObserverLayer):
    def __init__(self, layer, quant_bits: int = 8, bins_count: int = 2048, percent: float = 0.999):
        super().__init__(layer, quant_bits, bins_count)
        if not 0.0 < percent <= 1.0:
            raise ArgumentError(f"HistObserver: percent must be in (0, 1], got {percent}")
        self._percent = float(percent)

    def _compute_threshold(self) -> float:
        cdf = np.cumsum(self._hist) / self._hist.sum()
        index = int(np.searchsorted(cdf, self._percent - 1e-12))
        return (min(index, self._bins_count - 1) + 1) * self._hist_max / self._bins_count


class KLObserver(ObserverFactory):
    """The abs-max minimising the KL divergence between the observed and the quantized
    distribution of ``|x|`` (PaddleSlim's ``KLObserver``; TensorRT's entropy calibration), with
    ``qmax`` (127 for 8 bits) levels."""

    def __init__(self, quant_bits: int = 8, bins_count: int = 2048):
        super().__init__(quant_bits=quant_bits, bins_count=bins_count)

    def _get_class(self):
        return KLObserverLayer


class KLObserverLayer(BaseHistObserverLayer):
    def _compute_threshold(self) -> float:
        kept = kl_threshold_bins(self._hist, qmax(self._bit_length))
        return kept * self._hist_max / self._bins_count


class MSEObserver(ObserverFactory):
    """The abs-max, among 200 fractions of the largest ``|x|``, with the least mean squared
    quantization error over the calibration data (PaddleSlim's ``MSEObserver``)."""

    def __init__(self, quant_bits: int = 8, bins_count: int = 2048):
        super().__init__(quant_bits=quant_bits, bins_count=bins_count)

    def _get_class(self):
        return MSEObserverLayer


class MSEObserverLayer(BaseHistObserverLayer):
    def _compute_threshold(self) -> float:
        return mse_threshold(self._hist, self._hist_max, self._bit_length)

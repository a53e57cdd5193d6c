"""Op cases of the sequence ops: ``warprnnt`` (through ``rnnt_loss``) and ``gather_tree``.

The RNN-T reference sums the probability of every alignment, enumerated (which time step emits
each label); the gather_tree reference follows each beam's parents back one step at a time. Both
share no code with the kernels.
"""

from __future__ import annotations

import itertools

import numpy as np

import oar.nn.functional as F
from oar.testing import OpCase

RNG = np.random.default_rng(11)


def ref_rnnt_loss(log_probs, labels, input_lengths, label_lengths, blank=0, reduction="mean"):
    """-log of the summed probability of every alignment: label ``j`` emitted at time ``t_j``
    (``t_1 <= t_2 <= ...``), a blank closing every time step, ``log_probs`` used as given."""
    losses = []
    for b in range(log_probs.shape[0]):
        steps, count = int(input_lengths[b]), int(label_lengths[b])
        target = [int(c) for c in labels[b, :count]]
        total = 0.0
        for times in itertools.combinations_with_replacement(range(steps), count):
            log_p = sum(log_probs[b, t, j, target[j]] for j, t in enumerate(times))
            for t in range(steps):
                emitted = sum(1 for s in times if s <= t)
                log_p += log_probs[b, t, emitted, blank]
            total += np.exp(log_p)
        losses.append(-np.log(total))
    losses = np.array(losses)
    if reduction == "mean":
        return losses.sum() / log_probs.shape[0]
    return losses.sum() if reduction == "sum" else losses


def _log_softmax(x):
    shifted = x - x.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


RNNT_INPUT = _log_softmax(RNG.standard_normal((3, 4, 3, 4)))  # [B, T, U + 1, V]
RNNT_LABELS = np.array([[1, 2], [3, 3], [2, 0]], np.int32)
RNNT_INPUT_LENGTHS = np.array([4, 3, 2], np.int32)
RNNT_LABEL_LENGTHS = np.array([2, 2, 1], np.int32)
RNNT_DATA = [RNNT_INPUT, RNNT_LABELS, RNNT_INPUT_LENGTHS, RNNT_LABEL_LENGTHS]

CASES = [
    OpCase("warprnnt", lambda x, y, n, m, r=reduction: F.rnnt_loss(x, y, n, m, fastemit_lambda=0.0, reduction=r),
           lambda x, y, n, m, r=reduction: ref_rnnt_loss(x, y, n, m, reduction=r),
           RNNT_DATA, grad_inputs=[0], id=f"rnnt_loss_{reduction}")
    for reduction in ("mean", "sum", "none")
] + [
    OpCase("warprnnt", lambda x, y, n, m: F.rnnt_loss(x, y, n, m, blank=3, fastemit_lambda=0.0, reduction="none"),
           lambda x, y, n, m: ref_rnnt_loss(x, y, n, m, blank=3, reduction="none"),
           [RNNT_INPUT, np.array([[1, 2], [0, 0], [2, 1]], np.int32), RNNT_INPUT_LENGTHS, RNNT_LABEL_LENGTHS],
           grad_inputs=[0], id="rnnt_loss_blank_last"),
]


def ref_gather_tree(ids, parents):
    steps, batch, beam = ids.shape
    out = np.zeros_like(ids)
    for b in range(batch):
        for k in range(beam):
            index = k
            for t in range(steps - 1, -1, -1):
                out[t, b, k] = ids[t, b, index]
                index = parents[t, b, index]
    return out


CASES += [
    OpCase("gather_tree", F.gather_tree, ref_gather_tree,
           [RNG.integers(0, 9, (4, 2, 3)).astype(dtype), RNG.integers(0, 3, (4, 2, 3)).astype(dtype)],
           grad=False, dtypes=(dtype,), id=f"gather_tree_{dtype}")
    for dtype in ("int32", "int64")
]

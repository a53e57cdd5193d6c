"""Viterbi decoding of a linear-chain CRF: ``viterbi_decode`` and the ``ViterbiDecoder`` layer, as
``paddle.text``'s.

The score of a tag path ``y`` of a sequence of length ``L`` is
``sum(potentials[t, y[t]] for t < L) + sum(transitions[y[t-1], y[t]] for 1 <= t < L)``; with
``include_bos_eos_tag`` the last tag is the start tag and the second to last the stop tag, and the
score adds ``transitions[-1, y[0]]`` (start -> first) and ``transitions[-2, y[L-1]]`` -- the stop
tag's *row*, as Paddle 3.3.1's kernel reads it (a transition into the stop tag would be its column). The
decoder returns each sequence's best score and path; the path has ``max(lengths)`` columns and is 0
past each sequence's length.

The decoding is eager, written with oar ops, one step per time step over the whole batch, and has no
gradient (Paddle's has none either). Where oar differs from Paddle:

- the path's width is read from the values of ``lengths``, so there is no static-graph form;
- ``lengths`` may be of any integer dtype (Paddle takes only int64), and a length outside
  ``[1, sequence_length]`` raises ArgumentError where Paddle returns unspecified values or crashes.
"""

from __future__ import annotations

import numpy as np

import oar
from oar import Tensor
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.nn import Layer

_FLOATS = ("float32", "float64")


def _checked(potentials, transition_params, lengths) -> np.ndarray:
    """The values of ``lengths``, once the three inputs are known to fit together."""
    fn = "viterbi_decode"
    for arg, value in (("potentials", potentials), ("transition_params", transition_params), ("lengths", lengths)):
        if not isinstance(value, Tensor):
            raise ArgumentError(f"{fn}: {arg} must be a Tensor, got {type(value).__name__}")
    if potentials.ndim != 3:
        raise ShapeError(f"{fn}: potentials must be [batch_size, sequence_length, num_tags], got shape "
                         f"{list(potentials.shape)}")
    batch, steps, tags = potentials.shape
    if list(transition_params.shape) != [tags, tags]:
        raise ShapeError(f"{fn}: transition_params must be [num_tags, num_tags] = [{tags}, {tags}] for potentials "
                         f"of shape {list(potentials.shape)}, got {list(transition_params.shape)}")
    if list(lengths.shape) != [batch]:
        raise ShapeError(f"{fn}: lengths must be [batch_size] = [{batch}], got {list(lengths.shape)}")
    if potentials.dtype.name not in _FLOATS or transition_params.dtype != potentials.dtype:
        raise DTypeError(f"{fn}: potentials and transition_params must be float32 or float64 tensors of one dtype, "
                         f"got {potentials.dtype.name} and {transition_params.dtype.name}")
    values = lengths.numpy()
    if not np.issubdtype(values.dtype, np.integer):
        raise DTypeError(f"{fn}: lengths must be an integer tensor, got {lengths.dtype.name}")
    if batch == 0 or steps == 0:
        raise ShapeError(f"{fn}: potentials of shape {list(potentials.shape)} hold no sequence to decode")
    if values.min() < 1 or values.max() > steps:
        raise ArgumentError(f"{fn}: each length must be in [1, {steps}] (the sequence_length of potentials), "
                            f"got {values.tolist()}")
    return values


def viterbi_decode(potentials, transition_params, lengths, include_bos_eos_tag=True, name=None):
    """The highest scoring tag path of each sequence and its score: ``(scores, paths)``, ``scores``
    of shape [batch_size] and the dtype of ``potentials``, ``paths`` int64 of shape
    [batch_size, max(lengths)].

    ``potentials`` ([batch_size, sequence_length, num_tags]) are the emission scores,
    ``transition_params`` ([num_tags, num_tags]) the score of going from the row's tag to the
    column's, ``lengths`` ([batch_size]) each sequence's length. With ``include_bos_eos_tag`` the
    last tag is the start tag and the second to last the stop tag (see the module docstring).

    >>> import oar
    >>> potentials = oar.to_tensor([[[1.5, 0.0], [0.0, 1.0], [2.0, 0.0]]])
    >>> transitions = oar.to_tensor([[0.0, -5.0], [0.0, 0.0]])  # 0 -> 1 costs 5
    >>> scores, paths = oar.text.viterbi_decode(potentials, transitions, oar.to_tensor([3]), False)
    >>> scores.tolist(), paths.tolist()
    ([3.5], [[0, 0, 0]])
    """
    length_values = _checked(potentials, transition_params, lengths)
    lengths = oar.to_tensor(length_values.astype(np.int64))
    steps = int(length_values.max())
    with oar.no_grad():
        alpha = potentials[:, 0, :]  # [batch, tags]: the best score of a path ending in each tag
        if include_bos_eos_tag:
            alpha = alpha + transition_params[-1]
        transitions = oar.unsqueeze(transition_params, 0)  # [1, from, to]
        backpointers = []  # step t-1 holds, for each tag at step t, the best tag before it
        for t in range(1, steps):
            candidates = oar.unsqueeze(alpha, 2) + transitions  # [batch, from, to]
            backpointers.append(oar.argmax(candidates, axis=1))
            stepped = oar.max(candidates, axis=1) + potentials[:, t, :]
            alpha = oar.where(oar.unsqueeze(lengths > t, 1), stepped, alpha)  # a finished sequence keeps its scores
        if include_bos_eos_tag:
            alpha = alpha + transition_params[-2]
        scores = oar.max(alpha, axis=1)
        tag = oar.argmax(alpha, axis=1)  # the last tag of each sequence, carried back to its last step
        zeros = oar.zeros_like(tag)
        columns = []
        for t in range(steps - 1, 0, -1):
            inside = lengths > t
            columns.append(oar.where(inside, tag, zeros))
            previous = oar.take_along_axis(backpointers[t - 1], oar.unsqueeze(tag, 1), axis=1)[:, 0]
            tag = oar.where(inside, previous, tag)
        columns.append(tag)
        paths = oar.stack(columns[::-1], axis=1)
    return scores, paths


class ViterbiDecoder(Layer):
    """``viterbi_decode`` with its ``transitions`` held by a layer: ``decoder(potentials, lengths)``
    is ``(scores, paths)``. The transitions are a plain tensor attribute, not a parameter (as in
    Paddle: decoding has no gradient).

    >>> import oar
    >>> decoder = oar.text.ViterbiDecoder(oar.to_tensor([[0.0, -5.0], [0.0, 0.0]]), include_bos_eos_tag=False)
    >>> scores, paths = decoder(oar.to_tensor([[[2.0, 0.0], [0.0, 1.0]]]), oar.to_tensor([2]))
    >>> scores.tolist(), paths.tolist()
    ([2.0], [[0, 0]])
    """

    def __init__(self, transitions, include_bos_eos_tag=True, name=None):
        super().__init__()
        self.transitions = transitions
        self.include_bos_eos_tag = include_bos_eos_tag
        self.name = name

    def forward(self, potentials, lengths):
        return viterbi_decode(potentials, self.transitions, lengths, self.include_bos_eos_tag, self.name)

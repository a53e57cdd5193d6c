"""Beam search over an RNN cell, with Paddle's API: ``BeamSearchDecoder`` (one step of beam
search: the cell, the top ``beam_size`` continuations, finished beams kept at the end token) and
``dynamic_decode`` (runs any decoder until every sequence finishes or ``max_step_num``).

Decoding runs eagerly, one Python step per time step, as Paddle's dygraph does; the step
bookkeeping (scores, parents, lengths) composes core ops, and ``finalize`` walks the parents back
with ``F.gather_tree``.

>>> import oar
>>> cell = oar.nn.GRUCell(4, 4)
>>> decoder = oar.nn.BeamSearchDecoder(cell, start_token=0, end_token=1, beam_size=2,
...                                    embedding_fn=oar.nn.Embedding(5, 4), output_fn=oar.nn.Linear(4, 5))
>>> ids, states = oar.nn.dynamic_decode(decoder, cell.get_initial_states(oar.zeros([3, 4])), max_step_num=4)
>>> ids.shape[0], ids.shape[2]
(3, 2)
"""

from __future__ import annotations

from typing import NamedTuple

import oar
from oar.errors import ArgumentError
from oar.nn import functional as F
from oar.ops import Tensor

_NEG_INF = 1e9  # Paddle's "kinf": a large finite score, so that 0 * it stays 0


def _map(fn, *structures):
    """Apply ``fn`` leaf-wise over equally nested tuples/lists (named tuples too) of tensors."""
    first = structures[0]
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(_map(fn, *items) for items in zip(*structures)))
    if isinstance(first, (tuple, list)):
        return type(first)(_map(fn, *items) for items in zip(*structures))
    return fn(*structures)


class Decoder:
    """The interface ``dynamic_decode`` drives (Paddle's ``paddle.nn.decode.Decoder``):
    ``initialize(inits) -> (inputs, states, finished)``, ``step(time, inputs, states, **kwargs)
    -> (outputs, next_states, next_inputs, finished)`` and optionally ``finalize(outputs,
    final_states, sequence_lengths) -> (outputs, states)``."""

    def initialize(self, inits):
        raise NotImplementedError(f"{type(self).__name__} must define initialize")

    def step(self, time, inputs, states, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define step")

    def finalize(self, outputs, final_states, sequence_lengths):
        raise NotImplementedError

    @property
    def tracks_own_finished(self) -> bool:
        """Whether ``step`` keeps finished sequences finished itself (then ``dynamic_decode``
        reads the lengths from the states)."""
        return False


class BeamSearchDecoder(Decoder):
    """Beam search with ``cell`` (an RNN cell, ``(inputs, states) -> (outputs, new_states)``):
    each step feeds the last tokens (through ``embedding_fn``), turns the cell output into
    logits (``output_fn``), adds the log-softmax to each beam's score and keeps the best
    ``beam_size`` of all beam x token continuations. A beam that emitted ``end_token`` only
    continues with it, at no cost.

    The step outputs are ``OutputWrapper(scores, predicted_ids, parent_ids)`` and the states
    ``StateWrapper(cell_states, log_probs, finished, lengths)``, each ``[batch, beam_size, ...]``.

    >>> import oar
    >>> x = oar.ones([2, 3])
    >>> oar.nn.BeamSearchDecoder.tile_beam_merge_with_batch(x, 4).shape
    [8, 3]
    """

    class OutputWrapper(NamedTuple):
        scores: Tensor
        predicted_ids: Tensor
        parent_ids: Tensor

    class StateWrapper(NamedTuple):
        cell_states: Tensor
        log_probs: Tensor
        finished: Tensor
        lengths: Tensor

    def __init__(self, cell, start_token, end_token, beam_size, embedding_fn=None, output_fn=None):
        if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
            raise ArgumentError(f"BeamSearchDecoder: beam_size must be a positive int, got {beam_size!r}")
        self.cell = cell
        self.embedding_fn = embedding_fn
        self.output_fn = output_fn
        self.start_token = int(start_token)
        self.end_token = int(end_token)
        self.beam_size = beam_size

    @staticmethod
    def tile_beam_merge_with_batch(x: Tensor, beam_size: int) -> Tensor:
        """``[batch, ...] -> [batch * beam_size, ...]``, each sample repeated ``beam_size`` times
        in a row: how to give an encoder's output to every beam."""
        expanded = oar.tile(oar.unsqueeze(x, 1), [1, beam_size] + [1] * (x.ndim - 1))
        return oar.reshape(expanded, [-1] + list(x.shape[1:]))

    def _split_batch_beams(self, x: Tensor) -> Tensor:
        return oar.reshape(x, [-1, self.beam_size] + list(x.shape[1:]))

    def _merge_batch_beams(self, x: Tensor) -> Tensor:
        return oar.reshape(x, [-1] + list(x.shape[2:]))

    def _expand_to_beam_size(self, x: Tensor) -> Tensor:
        return oar.tile(oar.unsqueeze(x, 1), [1, self.beam_size] + [1] * (x.ndim - 1))

    def _mask_probs(self, probs: Tensor, finished: Tensor) -> Tensor:
        """A finished beam's next-token scores: 0 for the end token, -1e9 for every other."""
        finished = oar.unsqueeze(oar.cast(finished, probs.dtype), 2)
        return finished * self._noend_mask(probs) + probs * (1.0 - finished)

    def _noend_mask(self, probs: Tensor) -> Tensor:
        vocab_size = probs.shape[-1]
        ends = oar.equal(oar.arange(vocab_size), self.end_token)
        return oar.where(ends, oar.zeros([vocab_size], probs.dtype), oar.full([vocab_size], -_NEG_INF, probs.dtype))

    def _gather(self, x: Tensor, indices: Tensor, batch_size: int) -> Tensor:
        """``x[b, indices[b, k]]`` for each batch ``b`` and beam ``k``."""
        batch_pos = oar.tile(oar.unsqueeze(oar.arange(batch_size, dtype=indices.dtype), 1), [1, self.beam_size])
        return oar.gather_nd(x, oar.stack([batch_pos, indices], axis=2))

    def initialize(self, initial_cell_states):
        """The start: every sample's cell states copied to its beams, the start token as input,
        beam 0 alive (score 0) and the others at -1e9 so that the first step expands one beam."""
        state = _flatten(initial_cell_states)[0]
        batch_size = state.shape[0]
        dtype = state.dtype if state.dtype.is_floating else oar.get_default_dtype()
        cell_states = _map(self._expand_to_beam_size, initial_cell_states)
        inputs = oar.full([batch_size, self.beam_size], self.start_token, dtype="int64")
        if self.embedding_fn is not None:
            inputs = self.embedding_fn(inputs)
        first = oar.to_tensor([[0.0] + [-_NEG_INF] * (self.beam_size - 1)], dtype=dtype)
        log_probs = oar.tile(first, [batch_size, 1])
        finished = oar.zeros([batch_size, self.beam_size], dtype="bool")
        lengths = oar.zeros([batch_size, self.beam_size], dtype="int64")
        return inputs, self.StateWrapper(cell_states, log_probs, finished, lengths), finished

    def _beam_search_step(self, time, logits, next_cell_states, beam_state):
        batch_size = logits.shape[0]
        vocab_size = logits.shape[-1]
        step_log_probs = self._mask_probs(F.log_softmax(logits, axis=-1), beam_state.finished)
        log_probs = step_log_probs + oar.unsqueeze(beam_state.log_probs, 2)
        scores = oar.reshape(log_probs, [-1, self.beam_size * vocab_size])
        topk_scores, topk_indices = oar.topk(scores, k=self.beam_size)
        beam_indices = topk_indices // vocab_size
        token_indices = topk_indices % vocab_size
        next_log_probs = self._gather(scores, topk_indices, batch_size)
        next_cell_states = _map(lambda x: self._gather(x, beam_indices, batch_size), next_cell_states)
        next_finished = self._gather(beam_state.finished, beam_indices, batch_size)
        next_lengths = self._gather(beam_state.lengths, beam_indices, batch_size)
        next_lengths = next_lengths + oar.cast(oar.logical_not(next_finished), next_lengths.dtype)
        next_finished = oar.logical_or(next_finished, oar.equal(token_indices, self.end_token))
        output = self.OutputWrapper(topk_scores, token_indices, beam_indices)
        return output, self.StateWrapper(next_cell_states, next_log_probs, next_finished, next_lengths)

    def step(self, time, inputs, states, **kwargs):
        """One step for every beam: the cell on the merged ``[batch * beam, ...]`` inputs, then
        the beam search update; ``kwargs`` go to the cell."""
        inputs = _map(self._merge_batch_beams, inputs)
        cell_states = _map(self._merge_batch_beams, states.cell_states)
        cell_outputs, next_cell_states = self.cell(inputs, cell_states, **kwargs)
        cell_outputs = _map(self._split_batch_beams, cell_outputs)
        next_cell_states = _map(self._split_batch_beams, next_cell_states)
        if self.output_fn is not None:
            cell_outputs = self.output_fn(cell_outputs)
        output, state = self._beam_search_step(time, cell_outputs, next_cell_states, states)
        sample_ids = output.predicted_ids.detach()
        next_inputs = self.embedding_fn(sample_ids) if self.embedding_fn is not None else sample_ids
        return output, state, next_inputs, state.finished

    def finalize(self, outputs, final_states, sequence_lengths):
        """The full token sequence of each final beam (``F.gather_tree`` over the time-major
        step outputs), and the final states."""
        return F.gather_tree(outputs.predicted_ids, outputs.parent_ids), final_states

    @property
    def tracks_own_finished(self) -> bool:
        return True


def _flatten(structure) -> list:
    if isinstance(structure, (tuple, list)):
        return [leaf for item in structure for leaf in _flatten(item)]
    return [structure]


def _keep_finished(state: Tensor, new_state: Tensor, finished: Tensor) -> Tensor:
    """``new_state``, but ``state`` where ``finished``: a finished sequence's state stays."""
    mask = oar.reshape(finished, list(finished.shape) + [1] * (state.ndim - finished.ndim))
    return oar.where(oar.expand(mask, state.shape), state, new_state)


def dynamic_decode(decoder, inits=None, max_step_num=None, output_time_major=False, impute_finished=False,
                   is_test=False, return_length=False, **kwargs):
    """Run ``decoder`` step by step from ``decoder.initialize(inits)`` until every sequence is
    finished, or for ``max_step_num + 1`` steps at most. Returns ``(outputs, final_states)``, and
    the sequence lengths too with ``return_length``; outputs are batch-major unless
    ``output_time_major``. With ``impute_finished`` a finished sequence's states are copied
    forward unchanged (for decoders that do not track finished sequences themselves).
    ``is_test`` (a memory hint of Paddle's static graph) has no effect; ``kwargs`` go to
    ``decoder.step``.

    >>> import oar
    >>> cell = oar.nn.LSTMCell(3, 3)
    >>> decoder = oar.nn.BeamSearchDecoder(cell, 0, 1, beam_size=2, embedding_fn=oar.nn.Embedding(4, 3),
    ...                                    output_fn=oar.nn.Linear(3, 4))
    >>> ids, _, lengths = oar.nn.dynamic_decode(decoder, cell.get_initial_states(oar.zeros([1, 3])),
    ...                                         max_step_num=2, return_length=True)
    >>> ids.shape[1] <= 3, lengths.shape
    (True, [1, 2])
    """
    if max_step_num is not None and (isinstance(max_step_num, bool) or int(max_step_num) < 0):
        raise ArgumentError(f"dynamic_decode: max_step_num must be a non-negative int or None, got {max_step_num!r}")
    inputs, states, finished = decoder.initialize(inits)
    sequence_lengths = oar.zeros(finished.shape, dtype="int64")
    step_outputs_seen = []
    step = 0
    while not bool(oar.all(finished)):
        outputs, next_states, next_inputs, next_finished = decoder.step(
            oar.full([1], step, dtype="int64"), inputs, states, **kwargs)
        if decoder.tracks_own_finished:
            next_lengths = getattr(next_states, "lengths", sequence_lengths)
        else:
            next_finished = oar.logical_or(next_finished, finished)
            next_lengths = sequence_lengths + oar.cast(oar.logical_not(finished), sequence_lengths.dtype)
            if impute_finished:
                next_states = _map(lambda old, new, done=finished: _keep_finished(old, new, done), states, next_states)
        step_outputs_seen.append(outputs)
        inputs, states, finished, sequence_lengths = next_inputs, next_states, next_finished, next_lengths
        step += 1
        if max_step_num is not None and step > max_step_num:
            break
    if not step_outputs_seen:
        raise ArgumentError("dynamic_decode: every sequence is finished before the first step; nothing to decode")
    final_outputs = _map(lambda *steps: oar.stack(list(steps), axis=0), *step_outputs_seen)
    final_states = states
    try:
        final_outputs, final_states = decoder.finalize(final_outputs, final_states, sequence_lengths)
    except NotImplementedError:
        pass
    if not output_time_major:
        final_outputs = _map(lambda x: oar.transpose(x, [1, 0] + list(range(2, x.ndim))), final_outputs)
    return (final_outputs, final_states, sequence_lengths) if return_length else (final_outputs, final_states)


__all__ = ["BeamSearchDecoder", "dynamic_decode"]

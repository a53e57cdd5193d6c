"""oar.text.viterbi_decode and ViterbiDecoder against a brute-force search over every tag path, and
against values recorded from Paddle 3.3.1."""

from __future__ import annotations

import doctest
import itertools

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.testing import TOLERANCES, sum_tolerance
from oar.text import ViterbiDecoder, viterbi_decode


def brute_force(potentials, transitions, lengths, include_bos_eos_tag):
    """The best score and path of each sequence, trying every path; with the tags, the last tag is
    the start (its row scores the first tag) and the second to last the stop (its row scores the
    last tag), as Paddle 3.3.1's kernel reads them."""
    width = max(lengths)
    scores, paths = [], []
    for emissions, length in zip(potentials, lengths):
        def score(path, emissions=emissions):
            total = sum(emissions[t, tag] for t, tag in enumerate(path))
            total += sum(transitions[a, b] for a, b in zip(path, path[1:]))
            if include_bos_eos_tag:
                total += transitions[-1, path[0]] + transitions[-2, path[-1]]
            return total
        best = max(itertools.product(range(emissions.shape[1]), repeat=int(length)), key=score)
        scores.append(score(best))
        paths.append(list(best) + [0] * (width - int(length)))
    return np.array(scores), np.array(paths)


@pytest.mark.parametrize("include_bos_eos_tag", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matches_a_search_over_every_path(include_bos_eos_tag, dtype):
    rng = np.random.default_rng(11)
    for _ in range(6):
        potentials = rng.normal(size=(3, 5, 4)).astype(dtype)
        transitions = rng.normal(size=(4, 4)).astype(dtype)
        lengths = rng.integers(1, 6, size=3)
        scores, paths = viterbi_decode(oar.to_tensor(potentials), oar.to_tensor(transitions), oar.to_tensor(lengths),
                                       include_bos_eos_tag)
        expected_scores, expected_paths = brute_force(potentials.astype("float64"), transitions.astype("float64"),
                                                      lengths, include_bos_eos_tag)
        assert scores.dtype == getattr(oar, dtype) and paths.dtype == oar.int64
        assert paths.shape == [3, int(lengths.max())]
        np.testing.assert_array_equal(paths.numpy(), expected_paths)
        rtol, atol = sum_tolerance(dtype, terms=2 * 5 + 1, scale=float(np.abs(expected_scores).max()))
        np.testing.assert_allclose(scores.numpy(), expected_scores, rtol=rtol, atol=atol)


POTENTIALS = [[[0.0, 0.3, -0.27, -0.89], [-0.45, -0.99, 0.06, 1.34], [-0.49, -0.62, 0.49, 0.36], [0.11, -0.93, -0.03, 0.7]],
              [[-1.34, -0.46, -1.9, -1.29], [-1.84, -0.24, -1.27, 0.27], [0.16, -0.19, -2.52, -0.54], [-0.05, 0.11, -1.53, -0.48]],
              [[-0.98, -0.81, 1.06, -0.81], [-0.03, 0.88, -0.58, -0.11], [0.11, 0.06, -1.23, 0.08], [1.36, -1.55, 0.86, 0.12]]]
TRANSITIONS = [[-0.64, 2.0, 0.76, -1.2], [0.07, 0.58, -0.19, 0.68], [-0.07, 0.67, 1.44, -0.68], [0.2, -0.46, 0.13, -1.19]]
LENGTHS = [4, 2, 3]
PADDLE = {  # include_bos_eos_tag -> Paddle 3.3.1's (scores, paths) in float32
    True: ([6.140000343322754, 1.2899999618530273, 4.049999713897705], [[2, 2, 2, 2], [0, 1, 0, 0], [2, 1, 1, 0]]),
    False: ([4.570000171661377, 0.49000000953674316, 3.370000123977661], [[2, 2, 2, 2], [1, 3, 0, 0], [2, 1, 3, 0]]),
}


@pytest.mark.parametrize("include_bos_eos_tag", [True, False])
def test_matches_values_recorded_from_paddle(include_bos_eos_tag):
    potentials, transitions = oar.to_tensor(POTENTIALS, dtype="float32"), oar.to_tensor(TRANSITIONS, dtype="float32")
    lengths = oar.to_tensor(LENGTHS, dtype="int64")
    decoder = ViterbiDecoder(transitions, include_bos_eos_tag=include_bos_eos_tag)
    expected_scores, expected_paths = PADDLE[include_bos_eos_tag]
    rtol, atol = TOLERANCES["float32"]
    for scores, paths in (viterbi_decode(potentials, transitions, lengths, include_bos_eos_tag),
                          decoder(potentials, lengths)):
        np.testing.assert_allclose(scores.numpy(), expected_scores, rtol=rtol, atol=atol)
        assert paths.tolist() == expected_paths


def test_paths_are_as_wide_as_the_longest_sequence_and_no_gradient_flows():
    potentials = oar.to_tensor(np.ones((2, 6, 3)), stop_gradient=False)
    scores, paths = viterbi_decode(potentials, oar.zeros([3, 3], dtype="float64"), oar.to_tensor([2, 1]), False)
    assert paths.shape == [2, 2] and scores.stop_gradient and paths.tolist() == [[0, 0], [0, 0]]
    assert scores.tolist() == [2.0, 1.0]


def test_the_decoder_holds_its_transitions_as_no_parameter():
    decoder = ViterbiDecoder(oar.zeros([3, 3]), include_bos_eos_tag=False, name="crf")
    assert list(decoder.parameters()) == [] and decoder.include_bos_eos_tag is False and decoder.name == "crf"


def test_bad_inputs_name_the_argument():
    potentials, transitions, lengths = oar.zeros([2, 3, 4]), oar.zeros([4, 4]), oar.to_tensor([3, 1])
    with pytest.raises(ShapeError, match=r"potentials must be \[batch_size, sequence_length, num_tags\]"):
        viterbi_decode(oar.zeros([3, 4]), transitions, lengths)
    with pytest.raises(ShapeError, match=r"transition_params must be \[num_tags, num_tags\] = \[4, 4\]"):
        viterbi_decode(potentials, oar.zeros([3, 3]), lengths)
    with pytest.raises(ShapeError, match=r"lengths must be \[batch_size\] = \[2\]"):
        viterbi_decode(potentials, transitions, oar.to_tensor([3]))
    with pytest.raises(DTypeError, match="float32 and float64"):
        viterbi_decode(potentials, oar.zeros([4, 4], dtype="float64"), lengths)
    with pytest.raises(DTypeError, match="lengths must be an integer tensor"):
        viterbi_decode(potentials, transitions, oar.to_tensor([3.0, 1.0]))
    with pytest.raises(ArgumentError, match=r"each length must be in \[1, 3\]"):
        viterbi_decode(potentials, transitions, oar.to_tensor([4, 0]))
    with pytest.raises(ArgumentError, match="potentials must be a Tensor"):
        viterbi_decode(np.zeros((2, 3, 4)), transitions, lengths)


@pytest.mark.parametrize("module", [oar.text, oar.text.viterbi], ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    result = doctest.testmod(module)
    assert result.attempted >= 3 and result.failed == 0

"""The Penn Treebank language-modelling text of Mikolov's ``simple-examples.tgz``, as
``paddle.text.Imikolov``.

As Paddle, words are the ``bytes`` of each line split on whitespace and the markers are the ``str``
keys ``'<s>'``, ``'<e>'`` and ``'<unk>'``: the dictionary counts the words of ``ptb.train.txt`` and
``ptb.valid.txt`` (each line adds one ``'<s>'`` and one ``'<e>'``), keeps those seen more than
``min_word_freq`` times, the most frequent first (ties in order of the word), and gives ``'<unk>'``
the last id. The corpus's own ``<unk>`` token stays an ordinary word, ``b'<unk>'``, as in Paddle.
Where oar differs: a word whose count ties with the markers' is ordered by its bytes against the
markers' UTF-8 bytes, where Paddle fails comparing bytes with str; NGRAM with a negative
``window_size`` raises ArgumentError at construction (Paddle asserts on the first line).
"""

from __future__ import annotations

import collections

import numpy as np

from oar.errors import ArgumentError
from oar.io import Dataset
from oar.text.datasets._files import check_mode, locate, open_tar, tar_member


def _sort_key(item):
    word, count = item
    return -count, word.encode() if isinstance(word, str) else word


class Imikolov(Dataset):
    """Penn Treebank sentences as word ids. ``data_type='NGRAM'``: each item is a tuple of
    ``window_size`` 0-d int64 arrays, one per sliding window over ``<s> words <e>``; ``'SEQ'``: each
    item is ``(src, trg)``, int64 arrays of ``<s> words`` and ``words <e>``, lines whose ``src`` is
    longer than a positive ``window_size`` left out. ``mode='test'`` reads ``ptb.test.txt``.

    Example (``simple-examples.tgz`` from https://dataset.bj.bcebos.com/imikolov%2Fsimple-examples.tgz)::

        from oar.text import Imikolov

        grams = Imikolov("simple-examples.tgz", data_type="NGRAM", window_size=5, mode="train")
        first_five = grams[0]                    # five 0-d int64 arrays
    """

    URL = "https://dataset.bj.bcebos.com/imikolov%2Fsimple-examples.tgz"
    MD5 = "30177ea32e27c525793142b6bf2c8e2d"

    def __init__(self, data_file=None, data_type="NGRAM", window_size=-1, mode="train", min_word_freq=50,
                 download=True):
        if not isinstance(data_type, str) or data_type.upper() not in ("NGRAM", "SEQ"):
            raise ArgumentError(f"Imikolov: data_type must be 'NGRAM' or 'SEQ', got {data_type!r}")
        self.data_type = data_type.upper()
        self.mode = check_mode("Imikolov", mode, ("train", "test"))
        if self.data_type == "NGRAM" and window_size < 0:
            raise ArgumentError(f"Imikolov: data_type 'NGRAM' needs a window_size >= 0, got {window_size}")
        self.window_size = window_size
        self.min_word_freq = min_word_freq
        self.data_file = locate(data_file, dataset="Imikolov", argument="data_file", url=self.URL, md5=self.MD5,
                                module_name="imikolov", download=download)
        with open_tar(self.data_file, "Imikolov") as archive:
            self.word_idx = self._build_word_dict(self._lines(archive, "train") + self._lines(archive, "valid"))
            self._load_anno(self._lines(archive, self.mode))

    def _lines(self, archive, split: str) -> list[bytes]:
        # Paddle's archive names its files './simple-examples/...'; one packed without './' reads too.
        name = f"simple-examples/data/ptb.{split}.txt"
        names = set(archive.getnames())
        return tar_member(archive, self.data_file, f"./{name}" if f"./{name}" in names else name).readlines()

    def _build_word_dict(self, lines: list[bytes]) -> dict:
        frequency = collections.defaultdict(int)
        for line in lines:
            for word in line.strip().split():
                frequency[word] += 1
            frequency["<s>"] += 1
            frequency["<e>"] += 1
        kept = sorted((item for item in frequency.items() if item[1] > self.min_word_freq), key=_sort_key)
        word_idx = {word: index for index, (word, _) in enumerate(kept)}
        word_idx["<unk>"] = len(kept)
        return word_idx

    def _load_anno(self, lines: list[bytes]) -> None:
        unknown = self.word_idx["<unk>"]
        self.data = []
        for line in lines:
            if self.data_type == "NGRAM":
                words = ["<s>", *line.strip().split(), "<e>"]
                if len(words) >= self.window_size:
                    ids = [self.word_idx.get(w, unknown) for w in words]
                    self.data.extend(tuple(ids[i - self.window_size:i]) for i in range(self.window_size, len(ids) + 1))
            else:
                ids = [self.word_idx.get(w, unknown) for w in line.strip().split()]
                source, target = [self.word_idx["<s>"], *ids], [*ids, self.word_idx["<e>"]]
                if self.window_size > 0 and len(source) > self.window_size:
                    continue
                self.data.append((source, target))

    def __getitem__(self, idx):
        return tuple(np.array(d) for d in self.data[idx])

    def __len__(self) -> int:
        return len(self.data)

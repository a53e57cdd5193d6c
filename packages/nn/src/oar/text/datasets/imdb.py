"""IMDB movie reviews, read from ``aclImdb_v1.tar.gz`` as ``paddle.text.Imdb``.

As Paddle, a review's words are its bytes with the final newline and ASCII punctuation removed,
lowercased and split on whitespace, so ``word_idx`` maps ``bytes`` words (and the ``str`` key
``'<unk>'``) to ids. The dictionary counts the words of all four folders (train and test, pos and
neg) and keeps those seen more than ``cutoff`` times, the most frequent first (ties in byte order),
``'<unk>'`` last. Where oar differs: the archive is read once, not three times, and a ``cutoff`` no
word passes leaves ``{'<unk>': 0}`` where Paddle fails to unpack an empty list.
"""

from __future__ import annotations

import collections
import re
import string

import numpy as np

from oar.io import Dataset
from oar.text.datasets._files import check_mode, locate, open_tar

_PUNCTUATION = string.punctuation.encode("latin-1")
_REVIEW = re.compile(r"aclImdb/(train|test)/(pos|neg)/.*\.txt$")


def tokenize(text: bytes) -> list[bytes]:
    """Paddle's ad-hoc tokenization of one review."""
    return text.rstrip(b"\n\r").translate(None, _PUNCTUATION).lower().split()


class Imdb(Dataset):
    """The 50,000 IMDB reviews, 25,000 per mode: ``dataset[i]`` is ``(word_ids, label)``, an int64
    array of the review's word ids and an int64 ``[1]`` label, 0 for a positive review and 1 for a
    negative one (positive reviews come first, each group in archive order).

    Example (``aclImdb_v1.tar.gz`` from https://dataset.bj.bcebos.com/imdb%2FaclImdb_v1.tar.gz)::

        from oar.text import Imdb

        train = Imdb("aclImdb_v1.tar.gz", mode="train", cutoff=150)
        word_ids, label = train[0]
    """

    URL = "https://dataset.bj.bcebos.com/imdb%2FaclImdb_v1.tar.gz"
    MD5 = "7c2ac02c03563afcf9b574c7e56c153a"

    def __init__(self, data_file=None, mode="train", cutoff=150, download=True):
        self.mode = check_mode("Imdb", mode, ("train", "test"))
        self.data_file = locate(data_file, dataset="Imdb", argument="data_file", url=self.URL, md5=self.MD5,
                                module_name="imdb", download=download)
        reviews = self._read_reviews()
        self.word_idx = self._build_word_dict(reviews, cutoff)
        unknown = self.word_idx["<unk>"]
        self.docs, self.labels = [], []
        for label, polarity in enumerate(("pos", "neg")):
            for words in reviews[self.mode, polarity]:
                self.docs.append([self.word_idx.get(w, unknown) for w in words])
                self.labels.append(label)

    def _read_reviews(self) -> dict[tuple[str, str], list[list[bytes]]]:
        """The words of every review, by (mode, polarity), in archive order."""
        reviews = {(mode, polarity): [] for mode in ("train", "test") for polarity in ("pos", "neg")}
        with open_tar(self.data_file, "Imdb") as archive:
            for member in archive:
                found = _REVIEW.match(member.name)
                if found and member.isfile():
                    reviews[found.group(1), found.group(2)].append(tokenize(archive.extractfile(member).read()))
        return reviews

    @staticmethod
    def _build_word_dict(reviews, cutoff: int) -> dict:
        frequency = collections.Counter(word for group in reviews.values() for words in group for word in words)
        kept = sorted((item for item in frequency.items() if item[1] > cutoff), key=lambda item: (-item[1], item[0]))
        word_idx = {word: index for index, (word, _) in enumerate(kept)}
        word_idx["<unk>"] = len(kept)
        return word_idx

    def __getitem__(self, idx):
        return np.array(self.docs[idx]), np.array([self.labels[idx]])

    def __len__(self) -> int:
        return len(self.docs)

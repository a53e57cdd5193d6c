"""The WMT16 multimodal English-German task (Multi30K) Paddle publishes (``wmt16.tar.gz``), as
``paddle.text.WMT16``.

The archive holds ``wmt16/train``, ``wmt16/test`` and ``wmt16/val``: one ``english<TAB>german``
pair a line. A language's dictionary is ``<s>``, ``<e>``, ``<unk>`` (ids 0, 1, 2), then the words of
the training file's column of that language, the most frequent first (ties in order of first
appearance), up to ``dict_size`` entries in all.

Where oar differs from Paddle 3.3.1:

- Paddle counts both dictionaries from the *source* column (its ``_build_dict`` reads ``self.lang``,
  not the language it builds), so its target dictionary holds source-language words and most target
  words become ``<unk>``; oar counts each language from its own column. Source ids are Paddle's.
- Paddle writes the dictionaries to ``~/.cache/paddle/dataset/wmt16/<lang>_<size>.dict`` and reads
  such a file back whenever its line count matches, so its ids depend on what was built before;
  oar builds them in memory from ``data_file`` and writes nothing.
- ``get_dict(lang, reverse=True)`` returns id -> word as documented (Paddle ignores ``reverse``).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from oar.errors import ArgumentError
from oar.io import Dataset
from oar.text.datasets._files import check_mode, locate, open_tar, tar_member

TOTAL_EN_WORDS = 11250
TOTAL_DE_WORDS = 19220
START_MARK = "<s>"
END_MARK = "<e>"
UNK_MARK = "<unk>"


def _pairs(lines):
    for line in lines:
        pair = line.decode().strip().split("\t")
        if len(pair) == 2:
            yield pair


class WMT16(Dataset):
    """English <-> German sentence pairs (``lang`` is the source language, ``'en'`` or ``'de'``):
    ``dataset[i]`` is ``(src_ids, trg_ids, trg_ids_next)``, int64 arrays: the source ids framed by
    ``<s>`` and ``<e>``, the target ids after ``<s>``, and the target ids followed by ``<e>``.
    ``src_dict_size`` and ``trg_dict_size`` must be given (positive), as in Paddle.

    Example (``wmt16.tar.gz`` from http://paddlemodels.bj.bcebos.com/wmt/wmt16.tar.gz)::

        from oar.text import WMT16

        train = WMT16("wmt16.tar.gz", mode="train", src_dict_size=10000, trg_dict_size=10000, lang="en")
        src_ids, trg_ids, trg_ids_next = train[0]
    """

    URL = "http://paddlemodels.bj.bcebos.com/wmt/wmt16.tar.gz"
    MD5 = "0c38be43600334966403524a40dcd81e"

    def __init__(self, data_file=None, mode="train", src_dict_size=-1, trg_dict_size=-1, lang="en", download=True):
        self.mode = check_mode("WMT16", mode, ("train", "test", "val"))
        self.data_file = locate(data_file, dataset="WMT16", argument="data_file", url=self.URL, md5=self.MD5,
                                module_name="wmt16", download=download)
        if lang not in ("en", "de"):
            raise ArgumentError(f"WMT16: lang must be 'en' or 'de', got {lang!r}")
        for argument, size in (("src_dict_size", src_dict_size), ("trg_dict_size", trg_dict_size)):
            if size <= 0:
                raise ArgumentError(f"WMT16: {argument} must be a positive number, got {size}")
        self.lang = lang
        self.trg_lang = "de" if lang == "en" else "en"
        self.src_dict_size = min(src_dict_size, TOTAL_EN_WORDS if lang == "en" else TOTAL_DE_WORDS)
        self.trg_dict_size = min(trg_dict_size, TOTAL_DE_WORDS if lang == "en" else TOTAL_EN_WORDS)
        with open_tar(self.data_file, "WMT16") as archive:
            training = list(_pairs(tar_member(archive, self.data_file, "wmt16/train")))
            self.src_dict = self._build_dict(training, lang, src_dict_size)
            self.trg_dict = self._build_dict(training, self.trg_lang, trg_dict_size)
            self._load_data(list(_pairs(tar_member(archive, self.data_file, f"wmt16/{self.mode}"))))

    @staticmethod
    def _build_dict(pairs, lang: str, dict_size: int) -> dict[str, int]:
        column = 0 if lang == "en" else 1
        frequency = defaultdict(int)
        for pair in pairs:
            for word in pair[column].split():
                frequency[word] += 1
        words = [START_MARK, END_MARK, UNK_MARK]
        # Paddle stops writing words when the dictionary would reach dict_size, so a size below 3 keeps them all.
        for index, (word, _) in enumerate(sorted(frequency.items(), key=lambda item: item[1], reverse=True)):
            if index + 3 == dict_size:
                break
            words.append(word)
        return {word: index for index, word in enumerate(words)}

    def _load_data(self, pairs) -> None:
        # The marks' ids are the same in both dictionaries; Paddle reads them from the source one.
        start_id, end_id, unk_id = self.src_dict[START_MARK], self.src_dict[END_MARK], self.src_dict[UNK_MARK]
        src_col = 0 if self.lang == "en" else 1
        self.src_ids, self.trg_ids, self.trg_ids_next = [], [], []
        for pair in pairs:
            src_ids = [start_id, *(self.src_dict.get(w, unk_id) for w in pair[src_col].split()), end_id]
            trg_ids = [self.trg_dict.get(w, unk_id) for w in pair[1 - src_col].split()]
            self.src_ids.append(src_ids)
            self.trg_ids.append([start_id, *trg_ids])
            self.trg_ids_next.append([*trg_ids, end_id])

    def __getitem__(self, idx):
        return np.array(self.src_ids[idx]), np.array(self.trg_ids[idx]), np.array(self.trg_ids_next[idx])

    def __len__(self) -> int:
        return len(self.src_ids)

    def get_dict(self, lang, reverse=False):
        """The dictionary of ``lang`` (``'en'`` or ``'de'``), word -> id (id -> word with ``reverse``)."""
        if lang not in ("en", "de"):
            raise ArgumentError(f"WMT16.get_dict: lang must be 'en' or 'de', got {lang!r}")
        words = self.src_dict if lang == self.lang else self.trg_dict
        return {v: k for k, v in words.items()} if reverse else dict(words)

"""The WMT14 French-English subset Paddle publishes (``wmt14.tgz``), as ``paddle.text.WMT14``.

The archive holds ``src.dict`` and ``trg.dict`` (one word a line, ``<s>``, ``<e>``, ``<unk>``
first) and tab-separated sentence pairs in ``<mode>/<mode>`` files; a dictionary is its file's
first ``dict_size`` lines. As in Paddle, pairs with more than 80 source or target ids are left out
in every mode.
"""

from __future__ import annotations

import numpy as np

from oar.errors import ArgumentError
from oar.io import Dataset
from oar.text.datasets._files import check_mode, corrupt, locate, open_tar

START = "<s>"
END = "<e>"
UNK = "<unk>"
UNK_IDX = 2


def _read_dict(lines, size: int) -> dict[str, int]:
    words = {}
    for index, line in enumerate(lines):
        if index >= size:
            break
        words[line.strip().decode()] = index
    return words


class WMT14(Dataset):
    """French -> English sentence pairs: ``dataset[i]`` is ``(src_ids, trg_ids, trg_ids_next)``,
    int64 arrays: the source ids framed by ``<s>`` and ``<e>``, the target ids after ``<s>``, and
    the target ids followed by ``<e>``. Words outside a dictionary get id 2 (``<unk>``).
    ``dict_size`` must be given (positive), as in Paddle.

    Example (``wmt14.tgz`` from http://paddlemodels.bj.bcebos.com/wmt/wmt14.tgz)::

        from oar.text import WMT14

        train = WMT14("wmt14.tgz", mode="train", dict_size=30000)
        src_ids, trg_ids, trg_ids_next = train[0]
    """

    URL = "http://paddlemodels.bj.bcebos.com/wmt/wmt14.tgz"
    MD5 = "0791583d57d5beb693b9414c5b36798c"

    def __init__(self, data_file=None, mode="train", dict_size=-1, download=True):
        self.mode = check_mode("WMT14", mode, ("train", "test", "gen"))
        self.data_file = locate(data_file, dataset="WMT14", argument="data_file", url=self.URL, md5=self.MD5,
                                module_name="wmt14", download=download)
        if dict_size <= 0:
            raise ArgumentError(f"WMT14: dict_size must be a positive number, got {dict_size}")
        self.dict_size = dict_size
        self._load_data()

    def _only_member(self, archive, suffix: str):
        names = [member.name for member in archive if member.name.endswith(suffix)]
        if len(names) != 1:
            raise corrupt(self.data_file, f"WMT14 expects one file named *{suffix} in the archive, found {names}")
        return archive.extractfile(names[0])

    def _load_data(self) -> None:
        self.src_ids, self.trg_ids, self.trg_ids_next = [], [], []
        with open_tar(self.data_file, "WMT14") as archive:
            self.src_dict = _read_dict(self._only_member(archive, "src.dict"), self.dict_size)
            self.trg_dict = _read_dict(self._only_member(archive, "trg.dict"), self.dict_size)
            for member in archive:
                if not member.name.endswith(f"{self.mode}/{self.mode}"):
                    continue
                for line in archive.extractfile(member):
                    pair = line.decode().strip().split("\t")
                    if len(pair) != 2:
                        continue
                    src_ids = [self.src_dict.get(w, UNK_IDX) for w in [START, *pair[0].split(), END]]
                    trg_ids = [self.trg_dict.get(w, UNK_IDX) for w in pair[1].split()]
                    if len(src_ids) > 80 or len(trg_ids) > 80:
                        continue
                    self.src_ids.append(src_ids)
                    self.trg_ids.append([self.trg_dict[START], *trg_ids])
                    self.trg_ids_next.append([*trg_ids, self.trg_dict[END]])

    def __getitem__(self, idx):
        return np.array(self.src_ids[idx]), np.array(self.trg_ids[idx]), np.array(self.trg_ids_next[idx])

    def __len__(self) -> int:
        return len(self.src_ids)

    def get_dict(self, reverse=False):
        """The source and target dictionaries, word -> id (id -> word with ``reverse``)."""
        src_dict, trg_dict = self.src_dict, self.trg_dict
        if reverse:
            src_dict = {v: k for k, v in src_dict.items()}
            trg_dict = {v: k for k, v in trg_dict.items()}
        return src_dict, trg_dict

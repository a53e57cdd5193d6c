"""CoNLL-2005 semantic role labelling, its public test set (``test.wsj``), as
``paddle.text.Conll05st``: read from ``conll05st-tests.tar.gz`` and the word, verb and target
dictionaries Paddle publishes beside it.

Where oar differs from Paddle: ``label_dict`` numbers the roles (``B-<role>``, ``I-<role>``, then
``O``) in order of first appearance in the target dictionary, where Paddle numbers them in the
iteration order of a Python set, which changes from run to run with ``PYTHONHASHSEED`` -- so
Paddle's label ids are not reproducible and oar's are; a blank line repeated between sentences is
skipped (Paddle fails on it).
"""

from __future__ import annotations

import gzip

import numpy as np

from oar.io import Dataset
from oar.text.datasets._files import corrupt, locate, open_tar, tar_member

UNK_IDX = 0
_WORDS = "conll05st-release/test.wsj/words/test.wsj.words.gz"
_PROPS = "conll05st-release/test.wsj/props/test.wsj.props.gz"
_FILES = {  # argument -> (URL, md5)
    "data_file": ("http://paddlemodels.bj.bcebos.com/conll05st/conll05st-tests.tar.gz",
                  "387719152ae52d60422c016e92a742fc"),
    "word_dict_file": ("http://paddlemodels.bj.bcebos.com/conll05st%2FwordDict.txt", "ea7fb7d4c75cc6254716f0177a506baa"),
    "verb_dict_file": ("http://paddlemodels.bj.bcebos.com/conll05st%2FverbDict.txt", "0d2977293bbb6cbefab5b0f97db1e77c"),
    "target_dict_file": ("http://paddlemodels.bj.bcebos.com/conll05st%2FtargetDict.txt",
                         "d8c7f03ceb5fc2e5a0fa7503a4353751"),
    "emb_file": ("http://paddlemodels.bj.bcebos.com/conll05st%2Femb", "bf436eb0faa1f6f9103017f8be57cdb7"),
}


def _load_dict(filename) -> dict[str, int]:
    with open(filename) as f:
        return {line.strip(): i for i, line in enumerate(f)}


def _load_label_dict(filename) -> dict[str, int]:
    roles = {}  # a dict as an ordered set
    with open(filename) as f:
        for line in f:
            line = line.strip()
            if line.startswith(("B-", "I-")):
                roles[line[2:]] = None
    labels = {}
    for role in roles:
        labels["B-" + role] = len(labels)
        labels["I-" + role] = len(labels)
    labels["O"] = len(labels)
    return labels


def _role_labels(path, column: list[str]) -> list[str]:
    """One predicate's bracketed props column (``(A0*``, ``*``, ``*)``, ``(V*)``) as B-/I-/O labels."""
    tag, inside, labels = "O", False, []
    for mark in column:
        if mark == "*":
            labels.append("I-" + tag if inside else "O")
        elif mark == "*)":
            labels.append("I-" + tag)
            inside = False
        elif "(" in mark:
            tag = mark[1:mark.find("*")]
            labels.append("B-" + tag)
            inside = ")" not in mark
        else:
            raise corrupt(path, f"unexpected label {mark!r} in {_PROPS}")
    return labels


class Conll05st(Dataset):
    """One item per (sentence, predicate) of test.wsj, nine int64 arrays of the sentence's length:
    the word ids, the ids of the words two before, one before, at, one after and two after the
    predicate (``'bos'``/``'eos'`` past the ends; each repeated over the sentence), the predicate's
    id (repeated), the mark (1 within two words of the predicate) and the label ids. Unknown words
    get id 0.

    ``emb_file`` is only handed back by ``get_embedding``; as in Paddle it is looked up like the
    other files when not given.

    Example (the five files of ``Conll05st.URLS``)::

        from oar.text import Conll05st

        data = Conll05st("conll05st-tests.tar.gz", "wordDict.txt", "verbDict.txt", "targetDict.txt", "emb")
        words, n2, n1, at, p1, p2, predicate, mark, labels = data[0]
    """

    URLS = {argument: url for argument, (url, _) in _FILES.items()}

    def __init__(self, data_file=None, word_dict_file=None, verb_dict_file=None, target_dict_file=None,
                 emb_file=None, download=True):
        given = {"data_file": data_file, "word_dict_file": word_dict_file, "verb_dict_file": verb_dict_file,
                 "target_dict_file": target_dict_file, "emb_file": emb_file}
        for argument, path in given.items():
            url, md5 = _FILES[argument]
            setattr(self, argument, locate(path, dataset="Conll05st", argument=argument, url=url, md5=md5,
                                           module_name="conll05st", download=download))
        self.word_dict = _load_dict(self.word_dict_file)
        self.predicate_dict = _load_dict(self.verb_dict_file)
        self.label_dict = _load_label_dict(self.target_dict_file)
        self._load_anno()

    def _load_anno(self) -> None:
        self.sentences, self.predicates, self.labels = [], [], []
        with open_tar(self.data_file, "Conll05st") as archive:
            with gzip.GzipFile(fileobj=tar_member(archive, self.data_file, _WORDS)) as words_file, \
                    gzip.GzipFile(fileobj=tar_member(archive, self.data_file, _PROPS)) as props_file:
                words, rows = [], []
                for word, props in zip(words_file, props_file):
                    props = props.strip().decode().split()
                    if props:
                        words.append(word.strip().decode())
                        rows.append(props)
                        continue
                    if rows:  # a blank line ends a sentence: column 0 names its verbs, one column per verb follows
                        columns = [[row[i] for row in rows] for i in range(len(rows[0]))]
                        verbs = [mark for mark in columns[0] if mark != "-"]
                        for verb, column in zip(verbs, columns[1:]):
                            self.sentences.append(words)
                            self.predicates.append(verb)
                            self.labels.append(_role_labels(self.data_file, column))
                    words, rows = [], []

    def __getitem__(self, idx):
        sentence, predicate, labels = self.sentences[idx], self.predicates[idx], self.labels[idx]
        length = len(sentence)
        verb_index = labels.index("B-V")
        mark = [0] * len(labels)
        context = {}  # offset from the predicate -> word
        for offset in (-2, -1, 0, 1, 2):
            position = verb_index + offset
            if 0 <= position < len(labels):
                mark[position] = 1
                context[offset] = sentence[position]
            else:
                context[offset] = "bos" if offset < 0 else "eos"
        word_ids = [self.word_dict.get(w, UNK_IDX) for w in sentence]
        context_ids = [[self.word_dict.get(context[offset], UNK_IDX)] * length for offset in (-2, -1, 0, 1, 2)]
        predicate_ids = [self.predicate_dict.get(predicate)] * length
        label_ids = [self.label_dict.get(w) for w in labels]
        return tuple(np.array(x) for x in (word_ids, *context_ids, predicate_ids, mark, label_ids))

    def __len__(self) -> int:
        return len(self.sentences)

    def get_dict(self):
        """The word, verb and label dictionaries: ``(word_dict, predicate_dict, label_dict)``."""
        return self.word_dict, self.predicate_dict, self.label_dict

    def get_embedding(self):
        """The path of the embedding file."""
        return self.emb_file

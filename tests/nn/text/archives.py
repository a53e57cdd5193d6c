"""Tiny files in the exact layouts of the archives Paddle's text datasets download, written into a
folder; test_datasets.py reads them with oar.text and compares with what Paddle 3.3.1 read from the
same files."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from pathlib import Path


def add_file(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))


def write_tar(path: Path, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in files.items():
            add_file(archive, name, data)
    return path


def housing(folder: Path) -> Path:
    """housing.data: 10 rows of 13 features and a price, space-aligned as the real file."""
    rows = []
    for i in range(10):
        values = [0.5 * i + j * 0.25 + (i * j) % 3 for j in range(13)] + [20.0 + 1.5 * i]
        rows.append(" " + " ".join(f"{v:8.4f}" for v in values))
    path = folder / "housing.data"
    path.write_text("\n".join(rows) + "\n")
    return path


IMDB_REVIEWS = {
    "aclImdb/train/pos/0_9.txt": b"A great movie, great acting!\n",
    "aclImdb/train/pos/1_8.txt": b"Great fun; the plot is great.",
    "aclImdb/train/neg/2_1.txt": b"The plot is dull... A dull movie.\n",
    "aclImdb/test/pos/3_10.txt": b"Fun, fun, FUN movie",
    "aclImdb/test/neg/4_2.txt": b"Dull acting and a dull plot\r\n",
    "aclImdb/train/unsup/5_0.txt": b"unlabelled unlabelled unlabelled words",
    "aclImdb/README": b"not a review",
}


def imdb(folder: Path) -> Path:
    return write_tar(folder / "aclImdb_v1.tar.gz", IMDB_REVIEWS)


PTB = {  # 5 lines in train + valid: no word is seen exactly 5 times (the count of '<s>' and '<e>')
    "train": b" the cat sat on the mat \n the dog sat \n a <unk> on the mat \n",
    "valid": b" the cat ran \n the <unk> sat on a mat \n",
    "test": b" the cat sat on a log \n dog ran \n",
}


def imikolov(folder: Path) -> Path:
    return write_tar(folder / "simple-examples.tgz",
                     {f"./simple-examples/data/ptb.{split}.txt": text for split, text in PTB.items()})


MOVIES = ("1::Toy Story (1995)::Animation|Children's|Comedy\n"
          "2::Jumanji (1995)::Adventure|Children's|Fantasy\n"
          "3::Grumpier Old Men (1995)::Comedy|Romance\n"
          "5::Father of the Bride Part II (1995)::Comedy\n"
          "6::Heat (1995)::Action|Crime|Thriller\n")
USERS = ("1::F::1::10::48067\n"
         "2::M::56::16::70072\n"
         "3::M::25::15::55117\n"
         "4::F::45::7::02460\n")


def ratings() -> str:
    lines = []
    for k in range(16):
        user, movie, stars = k % 4 + 1, [1, 2, 3, 5, 6][k % 5], k % 5 + 1
        lines.append(f"{user}::{movie}::{stars}::{978300760 + k}\n")
    return "".join(lines)


def movielens(folder: Path) -> Path:
    path = folder / "ml-1m.zip"
    with zipfile.ZipFile(path, "w") as package:
        package.writestr("ml-1m/movies.dat", MOVIES.encode("latin"))
        package.writestr("ml-1m/users.dat", USERS.encode("latin"))
        package.writestr("ml-1m/ratings.dat", ratings().encode("latin"))
    return path


# test.wsj: one word a line and a blank line after each sentence; the props hold the verbs' column
# ('-' for a word that is no predicate) and one bracketed role column per predicate.
CONLL_WORDS = "The\ncat\nchased\nthe\nmouse\nand\nate\nit\n\nDogs\nbark\n\n"
CONLL_PROPS = ("-      (A0*     (A0*\n"
               "-         *)       *\n"
               "chase  (V*)        *\n"
               "-      (A1*        *\n"
               "-         *)       *)\n"
               "-         *        *\n"
               "eat       *      (V*)\n"
               "-         *      (A1*)\n"
               "\n"
               "-      (A0*)\n"
               "bark   (V*)\n"
               "\n")
CONLL_DICTS = {
    "wordDict.txt": "bos\neos\nThe\ncat\nchased\nthe\nmouse\nit\nbark\n",
    "verbDict.txt": "bark\nchase\neat\n",
    "targetDict.txt": "B-A0\nB-A1\nB-V\nI-A0\nI-A1\nI-V\nO\n",
    "emb": "not read\n",
}


def conll05st(folder: Path) -> dict[str, Path]:
    """The test archive and the four other files, by Conll05st's argument names."""
    data = write_tar(folder / "conll05st-tests.tar.gz", {
        "conll05st-release/test.wsj/words/test.wsj.words.gz": gzip.compress(CONLL_WORDS.encode()),
        "conll05st-release/test.wsj/props/test.wsj.props.gz": gzip.compress(CONLL_PROPS.encode()),
    })
    paths = {"data_file": data}
    for argument, name in (("word_dict_file", "wordDict.txt"), ("verb_dict_file", "verbDict.txt"),
                           ("target_dict_file", "targetDict.txt"), ("emb_file", "emb")):
        paths[argument] = folder / name
        paths[argument].write_text(CONLL_DICTS[name])
    return paths


WMT14_FILES = {
    "wmt14/src.dict": b"<s>\n<e>\n<unk>\nle\nchat\nnoir\ndort\nchien\n",
    "wmt14/trg.dict": b"<s>\n<e>\n<unk>\nthe\ncat\nblack\nsleeps\ndog\n",
    "wmt14/train/train": (b"le chat noir\tthe black cat\n"
                          b"no tab on this line\n"
                          b"le chien dort\tthe dog sleeps\n"
                          + b" ".join([b"chat"] * 80) + b"\tthe cat\n"),
    "wmt14/test/test": b"le chat dort\tthe cat sleeps\n",
    "wmt14/gen/gen": b"le chien noir\tthe black dog\n",
}


def wmt14(folder: Path) -> Path:
    return write_tar(folder / "wmt14.tgz", WMT14_FILES)


WMT16_FILES = {
    "wmt16/train": (b"a man walks\tein mann geht\n"
                    b"a dog runs\tein hund rennt\n"
                    b"a man runs fast\tein mann rennt schnell\n"
                    b"broken line\n"),
    "wmt16/test": b"a dog walks\tein hund geht\n",
    "wmt16/val": b"the man\tder mann\n",
}


def wmt16(folder: Path) -> Path:
    return write_tar(folder / "wmt16.tar.gz", WMT16_FILES)

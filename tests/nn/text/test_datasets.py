"""oar.text's datasets on tiny files in the exact layouts of Paddle's downloads (archives.py), item
by item against what Paddle 3.3.1's own classes returned for the same files, and the errors when a
file is missing (no network is used)."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, SerializationError
from oar.testing import TOLERANCES
from oar.text import WMT14, WMT16, Conll05st, Imdb, Imikolov, Movielens, UCIHousing

from . import archives


@pytest.fixture(autouse=True)
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OAR_DATA_HOME", str(tmp_path / "cache"))


def values(item) -> list:
    return [np.asarray(a).tolist() for a in item]


def dtypes(item) -> list[str]:
    return [str(np.asarray(a).dtype) for a in item]


def test_uci_housing_normalizes_and_splits_as_paddle(tmp_path):
    path = archives.housing(tmp_path)
    train, test = UCIHousing(path, mode="train"), UCIHousing(path, mode="TEST")
    assert (len(train), len(test)) == (8, 2)
    a, b, c = 0.5, 0.22499999403953552, 0.2454545497894287  # Paddle 3.3.1's test[1] features (float32)
    expected = {  # Paddle 3.3.1's items for the same file
        (train, 0): ([-0.5, -0.5249999761581421, -0.5727272629737854] * 4 + [-0.5], [20.0]),
        (test, 1): ([a, b, c] * 4 + [a], [33.5]),
    }
    rtol, atol = TOLERANCES["float32"]
    for (dataset, index), (features, price) in expected.items():
        got_features, got_price = dataset[index]
        assert (got_features.dtype, got_features.shape, got_price.dtype, got_price.shape) == (
            np.float32, (13,), np.float32, (1,))
        np.testing.assert_allclose(got_features, features, rtol=rtol, atol=atol)
        np.testing.assert_allclose(got_price, price, rtol=rtol, atol=atol)


def test_uci_housing_follows_the_default_dtype(tmp_path):
    previous = oar.get_default_dtype()
    oar.set_default_dtype("float64")
    try:
        features, price = UCIHousing(archives.housing(tmp_path))[0]
    finally:
        oar.set_default_dtype(previous)
    assert features.dtype == price.dtype == np.float64


def test_imdb_tokenizes_and_counts_words_as_paddle(tmp_path):
    path = archives.imdb(tmp_path)
    train, test = Imdb(path, mode="train", cutoff=1), Imdb(path, mode="test", cutoff=1)
    # Paddle 3.3.1's word_idx: bytes words seen more than `cutoff` times in train and test, '<unk>' last.
    assert train.word_idx == test.word_idx == {
        b"dull": 0, b"fun": 1, b"great": 2, b"a": 3, b"movie": 4, b"plot": 5, b"acting": 6, b"is": 7, b"the": 8,
        "<unk>": 9}
    assert [values(train[i]) for i in range(len(train))] == [  # positive reviews (label 0) first
        [[3, 2, 4, 2, 6], [0]], [[2, 1, 8, 5, 7, 2], [0]], [[8, 5, 7, 0, 3, 0, 4], [1]]]
    assert [values(test[i]) for i in range(len(test))] == [[[1, 1, 1, 4], [0]], [[0, 6, 9, 3, 0, 5], [1]]]
    assert dtypes(train[0]) == ["int64", "int64"]
    assert Imdb(path, cutoff=0).word_idx[b"and"] == 9  # seen once, so kept only with cutoff 0


def test_imikolov_ngrams_and_sequences_match_paddle(tmp_path):
    path = archives.imikolov(tmp_path)
    grams = Imikolov(path, data_type="ngram", window_size=3, mode="train", min_word_freq=1)
    # Paddle 3.3.1's word_idx: the corpus's '<unk>' token is the word b'<unk>'; the str '<unk>' is last.
    assert grams.word_idx == {b"the": 0, "<e>": 1, "<s>": 2, b"mat": 3, b"on": 4, b"sat": 5, b"<unk>": 6, b"a": 7,
                              b"cat": 8, "<unk>": 9}
    assert [values(grams[i]) for i in range(len(grams))] == [  # Paddle 3.3.1's items
        [2, 0, 8], [0, 8, 5], [8, 5, 4], [5, 4, 0], [4, 0, 3], [0, 3, 1], [2, 0, 9], [0, 9, 5], [9, 5, 1],
        [2, 7, 6], [7, 6, 4], [6, 4, 0], [4, 0, 3], [0, 3, 1]]
    assert [np.asarray(a).shape for a in grams[0]] == [(), (), ()] and dtypes(grams[0]) == ["int64"] * 3
    sequences = Imikolov(path, data_type="SEQ", mode="test", min_word_freq=1)
    assert [values(sequences[i]) for i in range(len(sequences))] == [
        [[2, 0, 8, 5, 4, 7, 9], [0, 8, 5, 4, 7, 9, 1]], [[2, 9, 9], [9, 9, 1]]]
    short = Imikolov(path, data_type="SEQ", window_size=4, mode="train", min_word_freq=2)
    assert short.word_idx == {b"the": 0, "<e>": 1, "<s>": 2, b"mat": 3, b"on": 4, b"sat": 5, "<unk>": 6}
    assert [values(short[i]) for i in range(len(short))] == [[[2, 0, 6, 5], [0, 6, 5, 1]]]
    with pytest.raises(ArgumentError, match="window_size"):
        Imikolov(path)  # NGRAM with Paddle's default window_size, -1


def named_movielens_items(dataset: Movielens) -> list:
    """The items with category and title word ids written as the names they stand for: Paddle 3.3.1
    numbers those in set order, which changes with PYTHONHASHSEED."""
    categories = {i: name for name, i in dataset.categories_dict.items()}
    words = {i: word for word, i in dataset.movie_title_dict.items()}
    named = []
    for i in range(len(dataset)):
        user, gender, age, job, movie, category_ids, title_ids, rating = values(dataset[i])
        named.append([user[0], gender[0], age[0], job[0], movie[0], [categories[c] for c in category_ids],
                      " ".join(words[w] for w in title_ids), rating[0]])
    return named


def test_movielens_features_and_split_match_paddle(tmp_path):
    path = archives.movielens(tmp_path)
    train = Movielens(path, mode="train", test_ratio=0.3, rand_seed=3)
    test = Movielens(path, mode="test", test_ratio=0.3, rand_seed=3)
    toy, jumanji, grumpier = (["Animation", "Children's", "Comedy"], "toy story"), \
        (["Adventure", "Children's", "Fantasy"], "jumanji"), (["Comedy", "Romance"], "grumpier old men")
    father, heat = (["Comedy"], "father of the bride part ii"), (["Action", "Crime", "Thriller"], "heat")
    users = {1: [1, 1, 0, 10], 2: [2, 0, 6, 16], 3: [3, 0, 2, 15], 4: [4, 1, 4, 7]}
    movies = {1: toy, 2: jumanji, 3: grumpier, 5: father, 6: heat}
    # Paddle 3.3.1's (user, movie, scaled rating) per item, in order.
    paddle_train = [(1, 1, -3.0), (2, 2, -1.0), (4, 5, 3.0), (1, 6, 5.0), (2, 1, -3.0), (2, 6, 5.0), (4, 2, -1.0),
                    (1, 3, 1.0), (3, 6, 5.0), (4, 1, -3.0)]
    paddle_test = [(3, 3, 1.0), (3, 2, -1.0), (4, 3, 1.0), (1, 5, 3.0), (3, 1, -3.0), (2, 5, 3.0)]
    for dataset, expected in ((train, paddle_train), (test, paddle_test)):
        assert named_movielens_items(dataset) == [[*users[u], m, *movies[m], r] for u, m, r in expected]
    assert dtypes(train[0]) == ["int64"] * 7 + ["float64"]
    # oar numbers categories and title words in order of first appearance.
    assert list(train.categories_dict) == ["Animation", "Children's", "Comedy", "Adventure", "Fantasy", "Romance",
                                           "Action", "Crime", "Thriller"]
    assert list(train.categories_dict.values()) == list(range(9))
    assert list(train.movie_title_dict)[:4] == ["toy", "story", "jumanji", "grumpier"]
    state = np.random.get_state()[1].copy()
    Movielens(path, rand_seed=5)
    assert (np.random.get_state()[1] == state).all()  # numpy's global generator is left alone


def test_conll05st_items_match_paddle(tmp_path):
    paths = archives.conll05st(tmp_path)
    data = Conll05st(**paths)
    word_dict, predicate_dict, label_dict = data.get_dict()
    assert word_dict == {"bos": 0, "eos": 1, "The": 2, "cat": 3, "chased": 4, "the": 5, "mouse": 6, "it": 7, "bark": 8}
    assert predicate_dict == {"bark": 0, "chase": 1, "eat": 2}
    assert label_dict == {"B-A0": 0, "I-A0": 1, "B-A1": 2, "I-A1": 3, "B-V": 4, "I-V": 5, "O": 6}
    assert data.get_embedding() == str(paths["emb_file"])
    labels = {i: name for name, i in label_dict.items()}
    # Paddle 3.3.1's items, the labels as names (its label ids change with PYTHONHASHSEED).
    expected = [
        ([[2, 3, 4, 5, 6, 0, 0, 7], [2] * 8, [3] * 8, [4] * 8, [5] * 8, [6] * 8, [1] * 8, [1, 1, 1, 1, 1, 0, 0, 0]],
         ["B-A0", "I-A0", "B-V", "B-A1", "I-A1", "O", "O", "O"]),
        ([[2, 3, 4, 5, 6, 0, 0, 7], [6] * 8, [0] * 8, [0] * 8, [7] * 8, [1] * 8, [2] * 8, [0, 0, 0, 0, 1, 1, 1, 1]],
         ["B-A0", "I-A0", "I-A0", "I-A0", "I-A0", "O", "B-V", "B-A1"]),
        ([[0, 8], [0, 0], [0, 0], [8, 8], [1, 1], [1, 1], [0, 0], [1, 1]], ["B-A0", "B-V"]),
    ]
    assert len(data) == 3
    for i, (ids, names) in enumerate(expected):
        item = values(data[i])
        assert item[:8] == ids and [labels[x] for x in item[8]] == names
    assert dtypes(data[0]) == ["int64"] * 9


def test_wmt14_items_match_paddle(tmp_path):
    path = archives.wmt14(tmp_path)
    train = WMT14(path, mode="train", dict_size=7)
    src_dict, trg_dict = train.get_dict()
    assert src_dict == {"<s>": 0, "<e>": 1, "<unk>": 2, "le": 3, "chat": 4, "noir": 5, "dort": 6}
    assert trg_dict == {"<s>": 0, "<e>": 1, "<unk>": 2, "the": 3, "cat": 4, "black": 5, "sleeps": 6}
    assert train.get_dict(reverse=True)[1][6] == "sleeps"
    # Paddle 3.3.1's items: the line without a tab and the one of 82 source ids are left out.
    assert [values(train[i]) for i in range(len(train))] == [
        [[0, 3, 4, 5, 1], [0, 3, 5, 4], [3, 5, 4, 1]], [[0, 3, 2, 6, 1], [0, 3, 2, 6], [3, 2, 6, 1]]]
    assert values(WMT14(path, mode="test", dict_size=7)[0]) == [[0, 3, 4, 6, 1], [0, 3, 4, 6], [3, 4, 6, 1]]
    assert values(WMT14(path, mode="gen", dict_size=7)[0]) == [[0, 3, 2, 5, 1], [0, 3, 5, 2], [3, 5, 2, 1]]
    assert dtypes(train[0]) == ["int64"] * 3
    with pytest.raises(ArgumentError, match="dict_size"):
        WMT14(path)


def test_wmt16_source_ids_match_paddle_and_each_language_counts_its_own_column(tmp_path):
    path = archives.wmt16(tmp_path)
    train = WMT16(path, mode="train", src_dict_size=6, trg_dict_size=20, lang="en")
    assert train.get_dict("en") == {"<s>": 0, "<e>": 1, "<unk>": 2, "a": 3, "man": 4, "runs": 5}  # Paddle 3.3.1's
    # The German dictionary as Paddle 3.3.1 builds it with lang='de' (ties in order of first appearance);
    # with lang='en' Paddle counts the English column instead (see oar.text.datasets.wmt16).
    german = {"<s>": 0, "<e>": 1, "<unk>": 2, "ein": 3, "mann": 4, "rennt": 5, "geht": 6, "hund": 7, "schnell": 8}
    assert train.get_dict("de") == german
    assert train.get_dict("de", reverse=True)[8] == "schnell"
    items = [values(train[i]) for i in range(len(train))]
    assert [src for src, _, _ in items] == [[0, 3, 4, 2, 1], [0, 3, 2, 5, 1], [0, 3, 4, 5, 2, 1]]  # Paddle 3.3.1's
    assert [(trg, nxt) for _, trg, nxt in items] == [
        ([0, 3, 4, 6], [3, 4, 6, 1]), ([0, 3, 7, 5], [3, 7, 5, 1]), ([0, 3, 4, 5, 8], [3, 4, 5, 8, 1])]
    assert values(WMT16(path, mode="val", src_dict_size=6, trg_dict_size=20)[0]) == [[0, 2, 4, 1], [0, 2, 4], [2, 4, 1]]
    german_source = WMT16(path, mode="test", src_dict_size=6, trg_dict_size=20, lang="de")
    assert values(german_source[0])[0] == [0, 3, 2, 2, 1]  # Paddle 3.3.1's: 'ein hund geht' with 6 German words
    assert dtypes(train[0]) == ["int64"] * 3


@pytest.mark.parametrize("make, build", [
    (lambda: UCIHousing(), "uci_housing/housing.data"),
    (lambda: Imdb(mode="test"), "imdb/imdb%2FaclImdb_v1.tar.gz"),
    (lambda: Imikolov(window_size=5), "imikolov/imikolov%2Fsimple-examples.tgz"),
    (lambda: Movielens(), "sentiment/movielens%2Fml-1m.zip"),
    (lambda: WMT14(dict_size=10), "wmt14/wmt14.tgz"),
    (lambda: WMT16(src_dict_size=10, trg_dict_size=10), "wmt16/wmt16.tar.gz"),
    (lambda: Conll05st(), "conll05st/conll05st-tests.tar.gz"),
])
def test_a_missing_file_names_its_url_and_where_to_put_it(tmp_path, make, build):
    with pytest.raises(FileNotFoundError) as info:
        make()
    message = str(info.value)
    cached = tmp_path / "cache" / build
    assert f"put it at {cached}" in message and "downloads nothing" in message
    assert "http" in message and build.rsplit("/", 1)[-1] in message


def test_a_given_path_that_is_missing_and_a_cached_file_with_the_wrong_md5(tmp_path):
    with pytest.raises(FileNotFoundError, match="data_file='nowhere.tgz' is not a file"):
        WMT14("nowhere.tgz", dict_size=10)
    paths = archives.conll05st(tmp_path)
    with pytest.raises(FileNotFoundError, match="no verb_dict_file given.*conll05st%2FverbDict.txt"):
        Conll05st(paths["data_file"], paths["word_dict_file"], download=False)
    cached = tmp_path / "cache" / "uci_housing" / "housing.data"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(archives.housing(tmp_path).read_bytes())
    with pytest.raises(SerializationError, match="md5"):
        UCIHousing()
    with pytest.raises(ArgumentError, match="mode"):
        UCIHousing(cached, mode="valid")


def test_a_file_in_another_format_is_refused(tmp_path):
    with pytest.raises(SerializationError, match="tar archive"):
        Imdb(archives.housing(tmp_path))
    with pytest.raises(SerializationError, match="no file 'wmt16/train'"):
        WMT16(archives.wmt14(tmp_path), src_dict_size=5, trg_dict_size=5)


def test_the_datasets_feed_a_dataloader(tmp_path):
    loader = oar.io.DataLoader(UCIHousing(archives.housing(tmp_path)), batch_size=4)
    features, prices = next(iter(loader))
    assert features.shape == [4, 13] and prices.shape == [4, 1]

"""MovieLens 1M ratings, read from ``ml-1m.zip`` as ``paddle.text.Movielens``.

Where oar differs from Paddle:

- ``categories_dict`` and ``movie_title_dict`` number the categories and the (lowercased) title
  words in order of first appearance in ``movies.dat``; Paddle numbers them in the iteration order
  of a Python set, which changes from run to run with ``PYTHONHASHSEED``, so its ids of categories and
  title words are not reproducible;
- the train/test split draws the same numbers as Paddle (numpy's legacy generator seeded with
  ``rand_seed``, one draw per rating) from a generator of its own, where Paddle reseeds numpy's
  global one (``np.random.seed``);
- the zip is read once (Paddle rereads ``movies.dat`` and ``users.dat`` once per member of the zip).
"""

from __future__ import annotations

import re
import zipfile

import numpy as np

from oar.io import Dataset
from oar.text.datasets._files import check_mode, corrupt, locate

AGE_TABLE = [1, 18, 25, 35, 45, 50, 56]
_TITLE_AND_YEAR = re.compile(r"^(.*)\((\d+)\)$")


class MovieInfo:
    """A movie's id, categories and title (without its year)."""

    def __init__(self, index, categories, title):
        self.index = int(index)
        self.categories = categories
        self.title = title

    def value(self, categories_dict, movie_title_dict):
        """``[[id], [category ids], [title word ids]]``."""
        return [[self.index], [categories_dict[c] for c in self.categories],
                [movie_title_dict[w.lower()] for w in self.title.split()]]

    def __repr__(self) -> str:
        return f"<MovieInfo id({self.index}), title({self.title}), categories({self.categories})>"


class UserInfo:
    """A user's id, gender, age bracket (an index into ``AGE_TABLE``) and job id."""

    def __init__(self, index, gender, age, job_id):
        self.index = int(index)
        self.is_male = gender == "M"
        self.age = AGE_TABLE.index(int(age))
        self.job_id = int(job_id)

    def value(self):
        """``[[id], [0 if male else 1], [age bracket], [job id]]``."""
        return [[self.index], [0 if self.is_male else 1], [self.age], [self.job_id]]

    def __repr__(self) -> str:
        gender = "M" if self.is_male else "F"
        return f"<UserInfo id({self.index}), gender({gender}), age({AGE_TABLE[self.age]}), job({self.job_id})>"


def _lines(package: zipfile.ZipFile, path, name: str) -> list[str]:
    try:
        with package.open(f"ml-1m/{name}") as f:
            return [line.decode("latin").strip() for line in f]
    except KeyError:
        raise corrupt(path, f"the zip holds no ml-1m/{name}") from None


class Movielens(Dataset):
    """MovieLens 1M: one item per rating of ``mode``, eight arrays: user id, gender (0 male, 1
    female), age bracket, job id, movie id (int64 ``[1]`` each), the movie's category ids and title
    word ids (int64), and the rating scaled to ``rating * 2 - 5`` (float64 ``[1]``). A rating goes to
    ``'test'`` when its draw from numpy's generator seeded with ``rand_seed`` is below ``test_ratio``.

    Example (``ml-1m.zip`` from https://dataset.bj.bcebos.com/movielens%2Fml-1m.zip)::

        from oar.text import Movielens

        train = Movielens("ml-1m.zip", mode="train")
        user, gender, age, job, movie, categories, title, rating = train[0]
    """

    URL = "https://dataset.bj.bcebos.com/movielens%2Fml-1m.zip"
    MD5 = "c4d9eecfca2ab87c1945afe126590906"

    def __init__(self, data_file=None, mode="train", test_ratio=0.1, rand_seed=0, download=True):
        self.mode = check_mode("Movielens", mode, ("train", "test"))
        # Paddle caches this file in its 'sentiment' folder.
        self.data_file = locate(data_file, dataset="Movielens", argument="data_file", url=self.URL, md5=self.MD5,
                                module_name="sentiment", download=download)
        self.test_ratio = test_ratio
        self.rand_seed = rand_seed
        try:
            package = zipfile.ZipFile(self.data_file)
        except zipfile.BadZipFile as exc:
            raise corrupt(self.data_file, f"Movielens expects a zip archive ({exc})") from None
        with package:
            self._load_meta_info(package)
            self._load_data(_lines(package, self.data_file, "ratings.dat"))

    def _load_meta_info(self, package: zipfile.ZipFile) -> None:
        self.movie_info, self.user_info = {}, {}
        title_words, categories = {}, {}  # dicts as ordered sets
        for line in _lines(package, self.data_file, "movies.dat"):
            movie_id, title, genres = line.split("::")
            found = _TITLE_AND_YEAR.match(title)
            if found is None:
                raise corrupt(self.data_file, f"the movie title {title!r} does not end with '(year)'")
            movie = MovieInfo(index=movie_id, categories=genres.split("|"), title=found.group(1))
            self.movie_info[movie.index] = movie
            categories.update(dict.fromkeys(movie.categories))
            title_words.update(dict.fromkeys(w.lower() for w in movie.title.split()))
        self.movie_title_dict = {word: i for i, word in enumerate(title_words)}
        self.categories_dict = {category: i for i, category in enumerate(categories)}
        for line in _lines(package, self.data_file, "users.dat"):
            uid, gender, age, job, _ = line.split("::")
            self.user_info[int(uid)] = UserInfo(index=uid, gender=gender, age=age, job_id=job)

    def _load_data(self, ratings: list[str]) -> None:
        draws = np.random.RandomState(self.rand_seed).random_sample(len(ratings))  # Paddle's np.random.random()s
        is_test = self.mode == "test"
        self.data = []
        for line, draw in zip(ratings, draws):
            if (draw < self.test_ratio) == is_test:
                uid, movie_id, rating, _ = line.split("::")
                user, movie = self.user_info[int(uid)], self.movie_info[int(movie_id)]
                self.data.append(user.value() + movie.value(self.categories_dict, self.movie_title_dict)
                                 + [[float(rating) * 2 - 5.0]])

    def __getitem__(self, idx):
        return tuple(np.array(d) for d in self.data[idx])

    def __len__(self) -> int:
        return len(self.data)

"""``oar.text.datasets``: the datasets of ``paddle.text.datasets``, read from the files Paddle
downloads, with Paddle's arguments, items and dtypes.

oar.text downloads nothing: give the file's path (``data_file=...``), or put the file where Paddle
would cache it, under ``$OAR_DATA_HOME`` (default ``~/.cache/oar/dataset``) -- a file Paddle already
fetched can be copied over from ``~/.cache/paddle/dataset`` keeping its relative path. A missing
file raises FileNotFoundError naming it, its URL and where to put it. Each module's docstring says
where oar differs from Paddle.
"""

from oar.text.datasets.conll05 import Conll05st as Conll05st
from oar.text.datasets.imdb import Imdb as Imdb
from oar.text.datasets.imikolov import Imikolov as Imikolov
from oar.text.datasets.movielens import Movielens as Movielens
from oar.text.datasets.uci_housing import UCIHousing as UCIHousing
from oar.text.datasets.wmt14 import WMT14 as WMT14
from oar.text.datasets.wmt16 import WMT16 as WMT16

__all__ = ["Conll05st", "Imdb", "Imikolov", "Movielens", "UCIHousing", "WMT14", "WMT16"]

"""``oar.text``: Paddle's text datasets (``Conll05st``, ``Imdb``, ``Imikolov``, ``Movielens``,
``UCIHousing``, ``WMT14``, ``WMT16``) read from their publishers' file formats, and Viterbi decoding
(``viterbi_decode``, ``ViterbiDecoder``), as ``paddle.text`` (oar-nn). See docs/text.md.

>>> import oar
>>> transitions = oar.to_tensor([[0.0, -5.0], [0.0, 0.0]])
>>> scores, paths = oar.text.viterbi_decode(oar.to_tensor([[[2.0, 0.0], [0.0, 1.0]]]), transitions, oar.to_tensor([2]),
...                                         include_bos_eos_tag=False)
>>> paths.tolist()
[[0, 0]]
"""

from oar.text import datasets as datasets
from oar.text.datasets import WMT14 as WMT14
from oar.text.datasets import WMT16 as WMT16
from oar.text.datasets import Conll05st as Conll05st
from oar.text.datasets import Imdb as Imdb
from oar.text.datasets import Imikolov as Imikolov
from oar.text.datasets import Movielens as Movielens
from oar.text.datasets import UCIHousing as UCIHousing
from oar.text.viterbi import ViterbiDecoder as ViterbiDecoder
from oar.text.viterbi import viterbi_decode as viterbi_decode

__all__ = ["Conll05st", "Imdb", "Imikolov", "Movielens", "UCIHousing", "WMT14", "WMT16", "ViterbiDecoder",
           "viterbi_decode"]

"""``oar.vision.datasets``: MNIST, FashionMNIST, Cifar10, Cifar100, Flowers, VOC2012, DatasetFolder,
ImageFolder (read from their real file formats, downloads md5-checked) and Digits, a small real dataset
bundled with oar-nn.

>>> from oar.vision.datasets import Digits
>>> len(Digits(mode="train")), len(Digits(mode="test"))
(1433, 364)
"""

from oar.vision.datasets.cifar import Cifar10 as Cifar10
from oar.vision.datasets.cifar import Cifar100 as Cifar100
from oar.vision.datasets.digits import Digits as Digits
from oar.vision.datasets.flowers import Flowers as Flowers
from oar.vision.datasets.folder import DatasetFolder as DatasetFolder
from oar.vision.datasets.folder import ImageFolder as ImageFolder
from oar.vision.datasets.mnist import MNIST as MNIST
from oar.vision.datasets.mnist import FashionMNIST as FashionMNIST
from oar.vision.datasets.voc2012 import VOC2012 as VOC2012

__all__ = ["MNIST", "FashionMNIST", "Cifar10", "Cifar100", "Flowers", "VOC2012", "DatasetFolder", "ImageFolder",
           "Digits"]

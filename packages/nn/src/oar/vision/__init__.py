"""``oar.vision``: image datasets and transforms with Paddle's names (oar-nn).

>>> import oar
>>> import oar.vision.transforms as T
>>> data = oar.vision.datasets.Digits(mode="test", transform=T.Compose([T.ToTensor(), T.Normalize([0.5], [0.5])]))
>>> image, label = data[0]
>>> image.shape, image.dtype
([1, 28, 28], oar.float32)
"""

from oar.vision import datasets as datasets
from oar.vision import models as models
from oar.vision import ops as ops
from oar.vision import transforms as transforms
from oar.vision.datasets import MNIST as MNIST
from oar.vision.datasets import Cifar10 as Cifar10
from oar.vision.datasets import Cifar100 as Cifar100
from oar.vision.datasets import DatasetFolder as DatasetFolder
from oar.vision.datasets import Digits as Digits
from oar.vision.datasets import FashionMNIST as FashionMNIST
from oar.vision.datasets import ImageFolder as ImageFolder
from oar.vision.image import get_image_backend as get_image_backend
from oar.vision.image import image_load as image_load
from oar.vision.image import set_image_backend as set_image_backend
from oar.vision.transforms import BaseTransform as BaseTransform
from oar.vision.transforms import CenterCrop as CenterCrop
from oar.vision.transforms import ColorJitter as ColorJitter
from oar.vision.transforms import Compose as Compose
from oar.vision.transforms import Normalize as Normalize
from oar.vision.transforms import Pad as Pad
from oar.vision.transforms import RandomCrop as RandomCrop
from oar.vision.transforms import RandomHorizontalFlip as RandomHorizontalFlip
from oar.vision.transforms import RandomResizedCrop as RandomResizedCrop
from oar.vision.transforms import RandomRotation as RandomRotation
from oar.vision.transforms import RandomVerticalFlip as RandomVerticalFlip
from oar.vision.transforms import Resize as Resize
from oar.vision.transforms import ToTensor as ToTensor
from oar.vision.transforms import Transpose as Transpose

# Paddle re-exports every model at ``paddle.vision`` (``paddle.vision.LeNet``, ``paddle.vision.resnet18``).
globals().update({name: getattr(models, name) for name in models.__all__})

__all__ = [
    *models.__all__,
    "datasets", "models", "transforms", "get_image_backend", "set_image_backend", "image_load",
    "MNIST", "FashionMNIST", "Cifar10", "Cifar100", "DatasetFolder", "ImageFolder", "Digits",
    "BaseTransform", "Compose", "ToTensor", "Normalize", "Transpose", "Resize", "CenterCrop", "Pad", "RandomCrop",
    "RandomResizedCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation", "ColorJitter",
]

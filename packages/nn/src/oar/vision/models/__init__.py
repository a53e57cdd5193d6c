"""``oar.vision.models``: the models of ``paddle.vision.models`` with Paddle's constructor
signatures and layer names, so Paddle state dicts and code fit, plus oar's own ``MLP``.

``pretrained=True`` raises: oar downloads no weights. Load local ones with
``model.set_state_dict(oar.load(path))``.

>>> import oar
>>> from oar.vision.models import LeNet, resnet18
>>> LeNet()(oar.rand([1, 1, 28, 28])).shape
[1, 10]
"""

from oar.vision.models.lenet import LeNet as LeNet
from oar.vision.models.mlp import MLP as MLP
from oar.vision.models.mobilenetv2 import MobileNetV2 as MobileNetV2
from oar.vision.models.mobilenetv2 import mobilenet_v2 as mobilenet_v2
from oar.vision.models.resnet import BasicBlock as BasicBlock
from oar.vision.models.resnet import BottleneckBlock as BottleneckBlock
from oar.vision.models.resnet import ResNet as ResNet
from oar.vision.models.resnet import resnet18 as resnet18
from oar.vision.models.resnet import resnet34 as resnet34
from oar.vision.models.resnet import resnet50 as resnet50
from oar.vision.models.resnet import resnet101 as resnet101
from oar.vision.models.resnet import resnet152 as resnet152
from oar.vision.models.resnet import resnext50_32x4d as resnext50_32x4d
from oar.vision.models.resnet import resnext50_64x4d as resnext50_64x4d
from oar.vision.models.resnet import resnext101_32x4d as resnext101_32x4d
from oar.vision.models.resnet import resnext101_64x4d as resnext101_64x4d
from oar.vision.models.resnet import resnext152_32x4d as resnext152_32x4d
from oar.vision.models.resnet import resnext152_64x4d as resnext152_64x4d
from oar.vision.models.resnet import wide_resnet50_2 as wide_resnet50_2
from oar.vision.models.resnet import wide_resnet101_2 as wide_resnet101_2
from oar.vision.models.vgg import VGG as VGG
from oar.vision.models.vgg import vgg11 as vgg11
from oar.vision.models.vgg import vgg13 as vgg13
from oar.vision.models.vgg import vgg16 as vgg16
from oar.vision.models.vgg import vgg19 as vgg19

__all__ = [
    "LeNet", "MLP",
    "ResNet", "BasicBlock", "BottleneckBlock", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
    "resnext50_32x4d", "resnext50_64x4d", "resnext101_32x4d", "resnext101_64x4d", "resnext152_32x4d",
    "resnext152_64x4d", "wide_resnet50_2", "wide_resnet101_2",
    "MobileNetV2", "mobilenet_v2",
    "VGG", "vgg11", "vgg13", "vgg16", "vgg19",
]

"""``oar.vision.models``: the models of ``paddle.vision.models`` with Paddle's constructor
signatures and layer names, so Paddle state dicts and code fit, plus oar's own ``MLP``.

``pretrained=True`` raises: oar downloads no weights. Load local ones with
``model.set_state_dict(oar.load(path))``.

>>> import oar
>>> from oar.vision.models import LeNet, resnet18
>>> LeNet()(oar.rand([1, 1, 28, 28])).shape
[1, 10]
"""

from oar.vision.models.alexnet import AlexNet as AlexNet
from oar.vision.models.alexnet import alexnet as alexnet
from oar.vision.models.densenet import DenseNet as DenseNet
from oar.vision.models.densenet import densenet121 as densenet121
from oar.vision.models.densenet import densenet161 as densenet161
from oar.vision.models.densenet import densenet169 as densenet169
from oar.vision.models.densenet import densenet201 as densenet201
from oar.vision.models.densenet import densenet264 as densenet264
from oar.vision.models.googlenet import GoogLeNet as GoogLeNet
from oar.vision.models.googlenet import googlenet as googlenet
from oar.vision.models.inceptionv3 import InceptionV3 as InceptionV3
from oar.vision.models.inceptionv3 import inception_v3 as inception_v3
from oar.vision.models.lenet import LeNet as LeNet
from oar.vision.models.mlp import MLP as MLP
from oar.vision.models.mobilenetv1 import MobileNetV1 as MobileNetV1
from oar.vision.models.mobilenetv1 import mobilenet_v1 as mobilenet_v1
from oar.vision.models.mobilenetv2 import MobileNetV2 as MobileNetV2
from oar.vision.models.mobilenetv2 import mobilenet_v2 as mobilenet_v2
from oar.vision.models.mobilenetv3 import MobileNetV3Large as MobileNetV3Large
from oar.vision.models.mobilenetv3 import MobileNetV3Small as MobileNetV3Small
from oar.vision.models.mobilenetv3 import mobilenet_v3_large as mobilenet_v3_large
from oar.vision.models.mobilenetv3 import mobilenet_v3_small as mobilenet_v3_small
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
from oar.vision.models.shufflenetv2 import ShuffleNetV2 as ShuffleNetV2
from oar.vision.models.shufflenetv2 import shufflenet_v2_swish as shufflenet_v2_swish
from oar.vision.models.shufflenetv2 import shufflenet_v2_x0_5 as shufflenet_v2_x0_5
from oar.vision.models.shufflenetv2 import shufflenet_v2_x0_25 as shufflenet_v2_x0_25
from oar.vision.models.shufflenetv2 import shufflenet_v2_x0_33 as shufflenet_v2_x0_33
from oar.vision.models.shufflenetv2 import shufflenet_v2_x1_0 as shufflenet_v2_x1_0
from oar.vision.models.shufflenetv2 import shufflenet_v2_x1_5 as shufflenet_v2_x1_5
from oar.vision.models.shufflenetv2 import shufflenet_v2_x2_0 as shufflenet_v2_x2_0
from oar.vision.models.squeezenet import SqueezeNet as SqueezeNet
from oar.vision.models.squeezenet import squeezenet1_0 as squeezenet1_0
from oar.vision.models.squeezenet import squeezenet1_1 as squeezenet1_1
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
    "AlexNet", "alexnet",
    "DenseNet", "densenet121", "densenet161", "densenet169", "densenet201", "densenet264",
    "GoogLeNet", "googlenet", "InceptionV3", "inception_v3",
    "MobileNetV1", "mobilenet_v1", "MobileNetV3Small", "MobileNetV3Large", "mobilenet_v3_small", "mobilenet_v3_large",
    "ShuffleNetV2", "shufflenet_v2_x0_25", "shufflenet_v2_x0_33", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0",
    "shufflenet_v2_x1_5", "shufflenet_v2_x2_0", "shufflenet_v2_swish",
    "SqueezeNet", "squeezenet1_0", "squeezenet1_1",
]

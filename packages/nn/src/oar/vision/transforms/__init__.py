"""``oar.vision.transforms``: image transforms with Paddle's names, on numpy HxWxC images (and
PIL images when Pillow is installed), plus ``functional`` with the underlying operations.

>>> import numpy as np
>>> import oar
>>> import oar.vision.transforms as T
>>> _ = oar.seed(0)
>>> pipeline = T.Compose([T.RandomCrop(24, padding=2), T.RandomHorizontalFlip(), T.ToTensor(),
...                       T.Normalize(mean=[0.5, 0.5, 0.5], std=[0.5, 0.5, 0.5])])
>>> pipeline(np.zeros((24, 24, 3), np.uint8)).shape
[3, 24, 24]
"""

from oar.vision.transforms import functional as functional
from oar.vision.transforms.functional import adjust_brightness as adjust_brightness
from oar.vision.transforms.functional import adjust_contrast as adjust_contrast
from oar.vision.transforms.functional import adjust_hue as adjust_hue
from oar.vision.transforms.functional import adjust_saturation as adjust_saturation
from oar.vision.transforms.functional import affine as affine
from oar.vision.transforms.functional import center_crop as center_crop
from oar.vision.transforms.functional import crop as crop
from oar.vision.transforms.functional import erase as erase
from oar.vision.transforms.functional import hflip as hflip
from oar.vision.transforms.functional import normalize as normalize
from oar.vision.transforms.functional import pad as pad
from oar.vision.transforms.functional import perspective as perspective
from oar.vision.transforms.functional import resize as resize
from oar.vision.transforms.functional import rotate as rotate
from oar.vision.transforms.functional import to_grayscale as to_grayscale
from oar.vision.transforms.functional import to_tensor as to_tensor
from oar.vision.transforms.functional import vflip as vflip
from oar.vision.transforms.transforms import BaseTransform as BaseTransform
from oar.vision.transforms.transforms import BrightnessTransform as BrightnessTransform
from oar.vision.transforms.transforms import CenterCrop as CenterCrop
from oar.vision.transforms.transforms import ColorJitter as ColorJitter
from oar.vision.transforms.transforms import Compose as Compose
from oar.vision.transforms.transforms import ContrastTransform as ContrastTransform
from oar.vision.transforms.transforms import Grayscale as Grayscale
from oar.vision.transforms.transforms import HueTransform as HueTransform
from oar.vision.transforms.transforms import Normalize as Normalize
from oar.vision.transforms.transforms import Pad as Pad
from oar.vision.transforms.transforms import RandomAffine as RandomAffine
from oar.vision.transforms.transforms import RandomCrop as RandomCrop
from oar.vision.transforms.transforms import RandomErasing as RandomErasing
from oar.vision.transforms.transforms import RandomHorizontalFlip as RandomHorizontalFlip
from oar.vision.transforms.transforms import RandomPerspective as RandomPerspective
from oar.vision.transforms.transforms import RandomResizedCrop as RandomResizedCrop
from oar.vision.transforms.transforms import RandomRotation as RandomRotation
from oar.vision.transforms.transforms import RandomVerticalFlip as RandomVerticalFlip
from oar.vision.transforms.transforms import Resize as Resize
from oar.vision.transforms.transforms import SaturationTransform as SaturationTransform
from oar.vision.transforms.transforms import ToTensor as ToTensor
from oar.vision.transforms.transforms import Transpose as Transpose

__all__ = [
    "BaseTransform", "Compose", "ToTensor", "Normalize", "Transpose", "Grayscale", "Resize", "CenterCrop", "Pad",
    "RandomCrop", "RandomResizedCrop", "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation",
    "BrightnessTransform", "ContrastTransform", "SaturationTransform", "HueTransform", "ColorJitter",
    "to_tensor", "normalize", "to_grayscale", "hflip", "vflip", "crop", "center_crop", "resize", "pad", "rotate",
    "adjust_brightness", "adjust_contrast", "adjust_saturation", "adjust_hue",
    "RandomAffine", "RandomPerspective", "RandomErasing", "affine", "perspective", "erase",
]

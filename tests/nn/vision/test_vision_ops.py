"""``oar.vision.ops``: Paddle's detection operators against outputs recorded from Paddle 3.3.1,
finite-difference gradients of the differentiable ones, the layers, JPEG decoding, errors, docstrings.

The inputs are made by ``wave`` (a sine, the same on every numpy) and a few hand-written boxes; every
upper-case list below was printed by real Paddle 3.3.1 (CPU) from these inputs, rounded to 10 decimals
(7 for float32 results). ``box_coder`` was recorded in float32: Paddle 3.3.1 reads a list
``prior_box_var`` wrongly for float64 boxes."""

from __future__ import annotations

import doctest
import io

import numpy as np
import pytest

import oar
import oar.vision
import oar.vision.models
import oar.vision.ops as ops
from oar.errors import ArgumentError, ShapeError
from oar.testing import GRAD_ATOL, GRAD_RTOL, TOLERANCES, numeric_gradient, sum_tolerance


def wave(*shape, phase=0.3, step=0.7):
    return np.sin(np.arange(np.prod(shape)) * step + phase).reshape(shape)


def t(array, dtype=None):
    return oar.to_tensor(np.asarray(array, dtype=dtype))


BOXES = np.array([[1., 1., 5., 4.], [2., 1.5, 6., 5.], [0.5, 0., 3., 3.], [6., 6., 9., 9.5], [1.2, 1., 5., 4.2],
                  [6.5, 6., 9., 9.]])
SCORES = np.array([0.9, 0.75, 0.6, 0.8, 0.95, 0.5])
CATEGORIES = np.array([0, 1, 0, 1, 1, 0])
PRIORS = BOXES[:3]
PRIOR_VARIANCE = 0.1 + 0.05 * np.abs(wave(3, 4))
DELTAS = 0.3 * wave(2, 3, 4)
YOLO_X = 2 * wave(1, 2 * (5 + 2), 2, 2)
YOLO_IOU_X = 2 * wave(1, 2 * (6 + 2), 2, 2)
ROI_X = wave(2, 2, 6, 7)
PSROI_X = wave(2, 8, 6, 7)
ROI_BOXES = np.array([[0.5, 1.2, 6.3, 5.9], [2., 2., 3., 3.], [-2., -1., 9., 8.], [3.5, 0.5, 8.6, 4.4]])
ROI_COUNTS = np.array([1, 3], dtype=np.int32)
DEFORM_X = wave(1, 4, 5, 5)
DEFORM_WEIGHT = wave(4, 2, 2, 3, phase=1.0)
DEFORM_BIAS = np.array([0.1, -0.2, 0.3, 0.0])
DEFORM_OFFSET = 1.5 * wave(1, 2 * 2 * 6, 3, 3, phase=2.0, step=0.37)
DEFORM_MASK = 0.5 + 0.5 * wave(1, 2 * 6, 3, 3, phase=0.1, step=0.53)
DEFORM_ARGS = dict(stride=(2, 1), padding=1, dilation=(1, 2), deformable_groups=2, groups=2)
MATRIX_BOXES = np.stack([BOXES / 10, BOXES[::-1] / 10])
MATRIX_SCORES = np.abs(wave(2, 3, 6, phase=0.2, step=1.3))
YOLO_LOSS_X = wave(2, 2 * (5 + 3), 4, 4, phase=0.5, step=0.83)
YOLO_LOSS_GT = np.array([[[0.12, 0.63, 0.13, 0.29], [0.46, 0.47, 0.32, 0.10], [0.8, 0.2, 0.5, 0.4], [0, 0, 0, 0]],
                         [[0.3, 0.84, 0.42, 0.52], [0.75, 0.87, 0.47, 0.45], [0.32, 0.55, 0.37, 0.11],
                          [0.6, 0.1, 0.05, 0.08]]])
YOLO_LOSS_LABEL = np.array([[1, 2, 0, 0], [2, 0, 1, 2]], dtype=np.int32)
YOLO_LOSS_SCORE = np.array([[0.9, 0.8, 1.0, 1.0], [0.7, 0.6, 1.0, 0.5]])
YOLO_ANCHORS = [10, 13, 16, 30, 33, 23]
FPN_ROIS = np.array([[0, 0, 20, 30], [0, 0, 100, 120], [10, 10, 400, 300], [5, 5, 60, 50], [0, 0, 224, 224],
                     [1, 1, 2, 2]], dtype=np.float64)


def proposal_inputs():
    """An RPN head of 2 anchors (10x10 and 16x12) on a 3x3 grid of stride 8, two images (float32)."""
    scores = (0.5 + 0.5 * wave(2, 2, 3, 3, step=1.1)).astype("float32")
    deltas = (0.4 * wave(2, 8, 3, 3, step=0.9)).astype("float32")
    grid = np.stack(np.meshgrid(np.arange(3) * 8.0, np.arange(3) * 8.0), -1)[:, :, None, :]
    sizes = np.array([[10.0, 10.0], [16.0, 12.0]])[None, None]
    anchors = np.concatenate([grid - sizes / 2 + 4, grid + sizes / 2 + 4], -1).astype("float32")
    return (t(scores), t(deltas), t([[24.0, 22.0], [20.0, 24.0]], "float32"), t(anchors),
            t(np.ones((3, 3, 2, 4)), "float32"))


# ---- recorded from Paddle 3.3.1 (CPU) with the inputs above
NMS_PLAIN = [0, 2, 3]
NMS_SCORED = [4, 3, 2]
NMS_CATEGORIES = [4, 0, 3, 2, 5]
NMS_TOP_K = [4, 0]
ENCODE_NORMALIZED = [[[11.25, 17.5, -1.4384104, 0.7707533], [8.75, 12.8571424, -1.4384104, 0.0], [23.0, 20.8333321, 0.911608, 0.7707533]], [[0.2499998, 0.333333, -0.2564665, 0.3226923], [-2.2500002, -1.8571432, -0.2564665, -0.4480611], [5.3999996, 3.6666665, 2.0935516, 0.3226923]], [[11.875, 16.666666, -2.350018, 0.0], [9.375, 12.1428576, -2.350018, -0.7707533], [24.0, 20.0, 0.0, 0.0]]]
ENCODE_PIXELS = [[[6.970098, 8.3583469, -1.4917684, 0.8804683], [5.877799, 6.8065639, -1.4988499, 0.0], [12.6375561, 12.4375887, 0.9369192, 0.7880155]], [[-0.69701, -0.703861, -0.2729046, 0.3647228], [-2.7429731, -1.9568872, -0.2742001, -0.4785435], [2.0460804, 1.2978351, 2.2161727, 0.3264254]], [[7.4057293, 7.9184341, -2.3844581, 0.0], [6.3676147, 6.3811536, -2.3957775, -0.8169577], [13.2393436, 11.8968239, 0.0, 0.0]]]
DECODE_AXIS0 = [[[0.937113, 1.0885041, 5.1646433, 4.1984177], [2.1131668, 1.4764822, 5.8995667, 4.8077765], [0.3886001, -0.0475156, 3.0182085, 3.1339321]], [[1.1832902, 1.0814279, 5.0449886, 3.9270196], [1.8291185, 1.3516605, 5.9027853, 5.022028], [0.6223838, 0.1466049, 3.1235762, 3.0337749]]]
DECODE_AXIS1 = [[[0.9128511, 1.0136921, 5.1580734, 4.1377726], [1.1189195, 1.0223731, 4.8910599, 3.8674922], [0.8504341, 0.9363005, 5.0598354, 4.1197767]], [[2.1531758, 1.6026273, 6.0059371, 4.9025755], [1.8552601, 1.3698082, 5.9346313, 5.0549636], [2.1174567, 1.634015, 6.1193686, 5.0025454]]]
PRIOR_BOXES = [[[[0.1, 0.15, 0.2333333333, 0.35], [0.0723857641, 0.1792893231, 0.2609475692, 0.3207106769], [0.1195262154, 0.1085786462, 0.2138071179, 0.3914213538], [0.0850170056, 0.1275255084, 0.2483163277, 0.3724744916], [0.0333333333, 0.05, 0.3, 0.45], [0.0, 0.1085786462, 0.3552284718, 0.3914213538], [0.0723857641, 0.0, 0.2609475692, 0.5328427076], [0.0033673445, 0.0050510168, 0.3299659888, 0.4949489832]], [[0.4333333333, 0.15, 0.5666666667, 0.35], [0.4057190975, 0.1792893231, 0.5942809025, 0.3207106769], [0.4528595487, 0.1085786462, 0.5471404513, 0.3914213538], [0.4183503389, 0.1275255084, 0.5816496611, 0.3724744916], [0.3666666667, 0.05, 0.6333333333, 0.45], [0.3114381949, 0.1085786462, 0.6885618051, 0.3914213538], [0.4057190975, 0.0, 0.5942809025, 0.5328427076], [0.3367006779, 0.0050510168, 0.6632993221, 0.4949489832]], [[0.7666666667, 0.15, 0.9, 0.35], [0.7390524308, 0.1792893231, 0.9276142359, 0.3207106769], [0.7861928821, 0.1085786462, 0.8804737846, 0.3914213538], [0.7516836723, 0.1275255084, 0.9149829944, 0.3724744916], [0.7, 0.05, 0.9666666667, 0.45], [0.6447715282, 0.1085786462, 1.0, 0.3914213538], [0.7390524308, 0.0, 0.9276142359, 0.5328427076], [0.6700340112, 0.0050510168, 0.9966326555, 0.4949489832]]], [[[0.1, 0.65, 0.2333333333, 0.85], [0.0723857641, 0.6792893231, 0.2609475692, 0.8207106769], [0.1195262154, 0.6085786462, 0.2138071179, 0.8914213538], [0.0850170056, 0.6275255084, 0.2483163277, 0.8724744916], [0.0333333333, 0.55, 0.3, 0.95], [0.0, 0.6085786462, 0.3552284718, 0.8914213538], [0.0723857641, 0.4671572924, 0.2609475692, 1.0], [0.0033673445, 0.5050510168, 0.3299659888, 0.9949489832]], [[0.4333333333, 0.65, 0.5666666667, 0.85], [0.4057190975, 0.6792893231, 0.5942809025, 0.8207106769], [0.4528595487, 0.6085786462, 0.5471404513, 0.8914213538], [0.4183503389, 0.6275255084, 0.5816496611, 0.8724744916], [0.3666666667, 0.55, 0.6333333333, 0.95], [0.3114381949, 0.6085786462, 0.6885618051, 0.8914213538], [0.4057190975, 0.4671572924, 0.5942809025, 1.0], [0.3367006779, 0.5050510168, 0.6632993221, 0.9949489832]], [[0.7666666667, 0.65, 0.9, 0.85], [0.7390524308, 0.6792893231, 0.9276142359, 0.8207106769], [0.7861928821, 0.6085786462, 0.8804737846, 0.8914213538], [0.7516836723, 0.6275255084, 0.9149829944, 0.8724744916], [0.7, 0.55, 0.9666666667, 0.95], [0.6447715282, 0.6085786462, 1.0, 0.8914213538], [0.7390524308, 0.4671572924, 0.9276142359, 1.0], [0.6700340112, 0.5050510168, 0.9966326555, 0.9949489832]]]]
PRIOR_BOXES_ORDERED = [[[[-0.0866666635, -0.1149999946, 0.2466666698, 0.3850000054], [-0.1557022572, -0.2185533851, 0.3157022635, 0.4885533959], [-0.1557022572, -0.0417766899, 0.3157022635, 0.3117767006], [-0.037851127, -0.2185533851, 0.1978511333, 0.4885533959], [-0.2086751143, -0.0093375653, 0.3686751207, 0.279337576], [-0.016225036, -0.2980127186, 0.1762250423, 0.5680127293]], [[0.1800000032, -0.1149999946, 0.5133333365, 0.3850000054], [0.1109644095, -0.2185533851, 0.5823689302, 0.4885533959], [0.1109644095, -0.0417766899, 0.5823689302, 0.3117767006], [0.2288155397, -0.2185533851, 0.4645178, 0.4885533959], [0.0579915524, -0.0093375653, 0.6353417873, 0.279337576], [0.2504416307, -0.2980127186, 0.442891709, 0.5680127293]], [[0.4466666698, -0.1149999946, 0.7800000032, 0.3850000054], [0.3776310762, -0.2185533851, 0.8490355968, 0.4885533959], [0.3776310762, -0.0417766899, 0.8490355968, 0.3117767006], [0.4954822063, -0.2185533851, 0.7311844667, 0.4885533959], [0.324658219, -0.0093375653, 0.902008454, 0.279337576], [0.5171082973, -0.2980127186, 0.7095583757, 0.5680127293]]], [[[-0.0866666635, 0.3350000054, 0.2466666698, 0.8350000054], [-0.1557022572, 0.2314466149, 0.3157022635, 0.9385533959], [-0.1557022572, 0.4082233101, 0.3157022635, 0.7617767006], [-0.037851127, 0.2314466149, 0.1978511333, 0.9385533959], [-0.2086751143, 0.4406624347, 0.3686751207, 0.729337576], [-0.016225036, 0.1519872814, 0.1762250423, 1.0180127293]], [[0.1800000032, 0.3350000054, 0.5133333365, 0.8350000054], [0.1109644095, 0.2314466149, 0.5823689302, 0.9385533959], [0.1109644095, 0.4082233101, 0.5823689302, 0.7617767006], [0.2288155397, 0.2314466149, 0.4645178, 0.9385533959], [0.0579915524, 0.4406624347, 0.6353417873, 0.729337576], [0.2504416307, 0.1519872814, 0.442891709, 1.0180127293]], [[0.4466666698, 0.3350000054, 0.7800000032, 0.8350000054], [0.3776310762, 0.2314466149, 0.8490355968, 0.9385533959], [0.3776310762, 0.4082233101, 0.8490355968, 0.7617767006], [0.4954822063, 0.2314466149, 0.7311844667, 0.9385533959], [0.324658219, 0.4406624347, 0.902008454, 0.729337576], [0.5171082973, 0.1519872814, 0.7095583757, 1.0180127293]]]]
PRIOR_VARIANCES_ORDERED = [[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]
YOLO_X_SHAPE = [1, 14, 2, 2]
YOLO_BOXES = [[[0.0, 0.0, 0.0, 0.0], [39.8773164589, 0.0, 59.0, 11.9925386924], [0.0, 18.648540388, 59.0, 23.3035855429], [0.0, 20.3599165492, 59.0, 22.644583933], [0.0, 0.0, 58.3616700541, 20.9440973548], [0.0, 0.0, 59.0, 5.8999873831], [0.0, 19.0614537758, 59.0, 24.2443642519], [0.0, 22.7885430474, 59.0, 29.6395993231]]]
YOLO_SCORES = [[[0.0, 0.0], [0.2579218556, 0.0492342269], [0.3316827355, 0.2205737604], [0.1850107385, 0.5640458308], [0.2699506743, 0.054807631], [0.3251137753, 0.242274549], [0.175537633, 0.5857788103], [0.1059382741, 0.7499011741]]]
YOLO_IOU_BOXES = [[[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [7.3221740567, 16.1980759306, 43.4167509933, 32.7089512878], [4.0890666049, 20.1976674527, 108.623589777, 24.7329144378], [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [-61.5631358663, 17.5786647184, 114.1650194259, 27.2784646744], [-52.6128918697, 20.509862638, 159.2379405699, 25.6690713951]]]
YOLO_IOU_SCORES = [[[0.0, 0.0], [0.0, 0.0], [0.385228496, 0.0750200935], [0.3538967069, 0.2444076711], [0.0, 0.0], [0.0, 0.0], [0.1627628298, 0.1260199499], [0.0850130146, 0.2920915478]]]
ROI_ALIGN = [[[[-0.5039604808, 0.4157313586], [0.2209447555, -0.5514834633]], [[-0.139797746, -0.6072034798], [0.4001556344, 0.4070429414]]], [[[0.7637083717, 0.7031414464], [0.6725992889, 0.7518558093]], [[-0.2382930126, -0.0189081291], [-0.628422423, -0.4748289935]]], [[[0.2673206938, -0.3285573751], [-0.0950326689, -0.0214449699]], [[0.0830785076, 0.0849949495], [0.2399214003, -0.1993808221]]], [[[-0.4770668894, -0.5409253932], [0.6298180426, -0.0405000793]], [[0.6310382681, -0.12985364], [-0.1472094596, 0.6007900352]]]]
ROI_ALIGN_UNALIGNED_SAMPLED = [[[[-0.5707917782, -0.2281288949, 0.3629946948], [0.4812826082, -0.0903839766, -0.5710465478]], [[0.202192426, -0.3827099401, -0.5629831398], [0.1151665599, 0.5801874745, 0.4273592793]]], [[[0.7920720755, 0.8609486671, 0.8344728532], [0.4156774767, 0.558614113, 0.6430273284]], [[-0.6243123687, -0.491052256, -0.2975328559], [-0.7527116113, -0.7275306849, -0.6189351283]]], [[[0.24933934, 0.0062578739, -0.2399509952], [0.1451428437, -0.4863454711, 0.1293041257]], [[-0.1524242079, 0.1997051719, 0.0349556307], [0.4198634574, 0.2514327676, -0.536295174]]], [[[-0.137154079, -0.5990191722, -0.6507311765], [0.637094342, 0.5654555846, 0.1619596437]], [[0.6441197147, 0.4924274205, 0.0614684625], [-0.5010605257, 0.0890226489, 0.5613309088]]]]
ROI_POOL = [[[[-0.3738766648, 0.8504366206, 0.9893582466], [0.9839066946, 0.9839066946, -0.0088513093]], [[0.9736454557, 0.5977603669, -0.2946716015], [0.8990972401, 0.9696731229, 0.9654266371]]], [[[0.9561160861, 0.9561160861, 0.542529799], [0.4661744062, 0.9264846285, 0.9264846285]], [[-0.1472423062, 0.5245788778, 0.5245788778], [-0.9992068342, -0.7385822251, -0.7385822251]]], [[[0.9561160861, 0.9561160861, 0.528328814], [0.9401266274, 0.9326812763, 0.9457243313]], [[0.9442818114, 0.9496824188, 0.9548145252], [0.9596766795, 0.964267507, 0.552907653]]], [[[0.542529799, -0.1262167298, 0.4512333687], [0.9510546533, 0.9510546533, 0.9457243313]], [[0.9496824188, 0.9496824188, 0.470071921], [-0.1305908549, 0.9548145252, 0.9548145252]]]]
PSROI_POOL = [[[[-0.1442881121, -0.3245588273], [-0.3018783307, -0.3853053508]], [[-0.3200541156, -0.13665886], [-0.1723146001, 0.0588462314]]], [[[0.6586987095, 0.2506364677], [-0.3791862195, 0.9491150607]], [[0.1556679731, -0.7645330175], [0.9195521842, 0.1104321839]]], [[[0.2775525353, 0.1729165215], [0.1096770211, 0.0773248902]], [[0.2044865391, 0.1573941519], [-0.0731356425, -0.0440829608]]], [[[-0.2170694512, 0.0071626776], [-0.4539506438, -0.1021872919]], [[0.3572900402, 0.3759118831], [0.5488235607, 0.6486118102]]]]
DEFORM_SHAPES = [3, 3]
DEFORM_V1 = [[[[0.7738968004, 0.6089141254, 0.7004828755], [-0.076200115, 0.0449243999, -0.4307789834], [0.2683704239, 0.771153735, 0.6657677088]], [[-1.583856491, -0.8723538094, -0.4267341157], [0.6231693207, 0.2149584768, 0.7472494309], [0.7879220374, -0.0667610755, -0.0705874061]], [[-0.3505181178, -0.6156546284, -0.7201731328], [1.3098450229, 0.3405867065, 0.3025198074], [1.4987267016, 1.3079698086, 1.1583540543]], [[-0.1499036477, -0.0915260841, 0.6682828925], [-1.1387063827, -0.2790548896, 0.7729443074], [-0.4784604652, -0.0537516841, 0.3746989363]]]]
DEFORM_V2 = [[[[-0.1335498528, 0.0422664498, 0.5711129842], [-0.4348678175, 0.0593383177, -0.221116651], [0.3017559193, 0.3867173005, -0.0847340003]], [[-0.2809269969, -0.3769234504, -0.2301425143], [0.2129763109, 0.3193675262, 0.7339137125], [0.0894899334, -0.1101166977, 0.2552606081]], [[-0.4280412471, -0.2135204561, -0.4143377626], [-0.2844851919, -0.0991585159, 0.244407809], [0.190172553, 0.1815027405, 0.6036174883]], [[-0.1713351908, -0.0362727222, 0.2690688566], [-0.0325600147, -0.0150479642, 0.3161933489], [-0.0589836605, -0.0449305059, -0.0270270652]]]]
MATRIX_NMS_OUT = [[1.0, 0.9893582466, 0.1, 0.1, 0.5, 0.4], [2.0, 0.9840650051, 0.2, 0.15, 0.6, 0.5], [1.0, 0.9348950555, 0.65, 0.6, 0.9, 0.9], [2.0, 0.7515734154, 0.6, 0.6, 0.9, 0.95], [1.0, 0.6846398289, 0.05, 0.0, 0.3, 0.3], [2.0, 0.4614114153, 0.12, 0.1, 0.5, 0.42], [2.0, 0.9975574189, 0.65, 0.6, 0.9, 0.9], [2.0, 0.9892286296, 0.1, 0.1, 0.5, 0.4], [1.0, 0.959175833, 0.12, 0.1, 0.5, 0.42], [2.0, 0.5729229338, 0.05, 0.0, 0.3, 0.3], [1.0, 0.5290826861, 0.6, 0.6, 0.9, 0.95], [1.0, 0.5245596656, 0.05, 0.0, 0.3, 0.3]]
MATRIX_NMS_NUM = [6, 6]
MATRIX_NMS_INDEX = [[0], [1], [5], [3], [2], [4], [6], [11], [7], [9], [8], [9]]
MATRIX_NMS_GAUSSIAN_OUT = [[0.0, 0.9974949866, 2.0, 1.5, 6.0, 5.0], [1.0, 0.9893582466, 1.0, 1.0, 5.0, 4.0], [2.0, 0.9840650051, 2.0, 1.5, 6.0, 5.0], [1.0, 0.9348950555, 6.5, 6.0, 9.0, 9.0], [0.0, 0.8182771111, 6.0, 6.0, 9.0, 9.5], [1.0, 0.7597473102, 0.5, 0.0, 3.0, 3.0], [2.0, 0.7515734154, 6.0, 6.0, 9.0, 9.5], [2.0, 0.5479085927, 1.2, 1.0, 5.0, 4.2], [0.0, 0.5060675902, 1.2, 1.0, 5.0, 4.2], [0.0, 0.9992759921, 6.5, 6.0, 9.0, 9.0], [2.0, 0.9975574189, 6.5, 6.0, 9.0, 9.0], [2.0, 0.9892286296, 1.0, 1.0, 5.0, 4.0], [0.0, 0.9676961321, 1.0, 1.0, 5.0, 4.0], [1.0, 0.959175833, 1.2, 1.0, 5.0, 4.2], [1.0, 0.5833693368, 2.0, 1.5, 6.0, 5.0], [1.0, 0.5764383057, 0.5, 0.0, 3.0, 3.0], [0.0, 0.353478591, 6.0, 6.0, 9.0, 9.5], [2.0, 0.3304373112, 6.0, 6.0, 9.0, 9.5]]
MATRIX_NMS_GAUSSIAN_NUM = [9, 9]
FPN_LEVEL_SIZES = [4, 0, 2, 0]
FPN_RESTORE = [[0], [1], [4], [2], [5], [3]]
FPN_PER_LEVEL = [[2, 2], [0, 0], [0, 2], [0, 0]]
YOLO_LOSS_SCORED = [51.7678822402, 50.0806833859]
YOLO_LOSS_PLAIN = [23.1390548441, 21.6773471363]
PROPOSALS_ROIS = [[9.502594, 19.2784157, 16.9897366, 24.0], [12.3667002, 0.0, 19.0896111, 10.2700634], [0.0, 9.5716724, 16.6570644, 18.3226814], [0.0, 3.7970147, 11.0263958, 15.7503567], [19.3955498, 0.0, 22.0, 8.5244675], [4.5165858, 13.5920591, 11.3456726, 20.0], [0.0, 12.6271257, 9.4231939, 20.0], [2.7578716, 0.0, 11.3744984, 8.1937065], [2.5934162, 13.0405502, 24.0, 20.0], [5.7973814, 0.0, 17.9902077, 6.8208714]]
PROPOSALS_PROBS = [[0.9946792], [0.9927248], [0.9473956], [0.9018922], [0.7992361], [0.9999969], [0.9756644], [0.9745623], [0.945805], [0.8555806]]
PROPOSALS_NUM = [5, 5]
PROPOSALS_PIXEL_NUM = [12, 10]
PROPOSALS_PIXEL_PROBS = [[0.9946792], [0.9927248], [0.9473956], [0.9018922], [0.7992361], [0.7892199], [0.6595492], [0.5749386], [0.5039816], [0.2676989], [0.1500627], [0.0562165], [0.9999969], [0.9756644], [0.9745623], [0.945805], [0.8555806], [0.8530847], [0.728373], [0.7252203], [0.0954906], [0.0545979]]


def assert_close(actual, expected, dtype="float64"):
    """``dtype="float32"`` where Paddle computed in float32 -- its float attributes (``spatial_scale``,
    prior sizes, ``scale_x_y``) are float32 even for float64 tensors."""
    expected = np.asarray(expected, dtype=np.float64)
    actual = actual.numpy() if isinstance(actual, oar.Tensor) else np.asarray(actual)
    assert list(actual.shape) == list(expected.shape)
    if dtype == "float64":
        rtol, atol = TOLERANCES["float64"][0], 1e-9  # the recorded values carry 10 decimals
    else:
        rtol, atol = sum_tolerance("float32", terms=8, scale=float(np.abs(expected).max(initial=1.0)))
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=rtol, atol=atol)


def check_gradient(fn, inputs, wrt):
    """The autograd gradient of ``sum(fn(*inputs) * projection)`` for each input named in ``wrt`` against
    central finite differences, in float64 (as ``check_grad`` does for op-table rows)."""
    tensors = [oar.to_tensor(a, stop_gradient=i not in wrt) if isinstance(a, np.ndarray) and a.dtype == np.float64
               else a for i, a in enumerate(inputs)]
    out = fn(*tensors)
    projection = wave(*out.shape, phase=0.9, step=0.61)
    (out * oar.to_tensor(projection)).sum().backward()
    for i in wrt:
        def scalar(value, i=i):
            args = list(inputs)
            args[i] = value
            return float((fn(*[oar.to_tensor(a) if isinstance(a, np.ndarray) else a for a in args]).numpy()
                          * projection).sum())
        np.testing.assert_allclose(tensors[i].grad.numpy(), numeric_gradient(scalar, inputs[i]),
                                   rtol=GRAD_RTOL, atol=GRAD_ATOL)


# ---- nms, box_coder, prior_box, yolo_box

def test_nms_matches_paddle():
    assert ops.nms(t(BOXES), 0.3).tolist() == NMS_PLAIN
    assert ops.nms(t(BOXES), 0.3, t(SCORES)).tolist() == NMS_SCORED
    assert ops.nms(t(BOXES), 0.3, t(SCORES), t(CATEGORIES), [0, 1]).tolist() == NMS_CATEGORIES
    assert ops.nms(t(BOXES), 0.3, t(SCORES), t(CATEGORIES), [0, 1], top_k=2).tolist() == NMS_TOP_K
    assert ops.nms(t(BOXES), 0.3).dtype == oar.int64
    # as Paddle's, top_k is used only with category_idxs
    assert ops.nms(t(BOXES), 0.3, t(SCORES), top_k=1).tolist() == NMS_SCORED


def test_box_coder_matches_paddle():
    f32 = "float32"
    variance = [0.1, 0.1, 0.2, 0.2]
    assert_close(ops.box_coder(t(PRIORS, f32), variance, t(BOXES[3:], f32)), ENCODE_NORMALIZED, f32)
    assert_close(ops.box_coder(t(PRIORS, f32), t(PRIOR_VARIANCE, f32), t(BOXES[3:], f32), box_normalized=False),
                 ENCODE_PIXELS, f32)
    assert_close(ops.box_coder(t(PRIORS, f32), t(PRIOR_VARIANCE, f32), t(DELTAS, f32), "decode_center_size", False, 0),
                 DECODE_AXIS0, f32)
    assert_close(ops.box_coder(t(BOXES[:2], f32), variance, t(DELTAS, f32), "decode_center_size", True, 1),
                 DECODE_AXIS1, f32)


def test_box_coder_decode_inverts_encode_and_has_gradients():
    encoded = ops.box_coder(t(PRIORS), t(PRIOR_VARIANCE), t(BOXES[3:]))
    decoded = ops.box_coder(t(PRIORS), t(PRIOR_VARIANCE), encoded, "decode_center_size")
    np.testing.assert_allclose(decoded.numpy(), np.broadcast_to(BOXES[3:, None], (3, 3, 4)), rtol=1e-12, atol=1e-12)
    check_gradient(lambda boxes: ops.box_coder(t(PRIORS), t(PRIOR_VARIANCE), boxes, box_normalized=False),
                   [BOXES[3:].copy()], wrt=[0])


def test_prior_box_matches_paddle():
    feature, image = oar.zeros([1, 2, 2, 3], dtype="float64"), oar.zeros([1, 2, 20, 30], dtype="float64")
    boxes, variances = ops.prior_box(feature, image, [4.0, 8.0], [6.0, 12.0], [2.0], flip=True, clip=True)
    assert_close(boxes, PRIOR_BOXES, "float32")
    assert_close(variances[1, 2], [[0.1, 0.1, 0.2, 0.2]] * len(PRIOR_BOXES[0][0]))
    boxes, variances = ops.prior_box(feature, image, [10.0], [20.0], [2.0, 3.0], [1.0, 2.0, 3.0, 4.0], True, False,
                                     [8.0, 9.0], 0.3, True)
    assert_close(boxes, PRIOR_BOXES_ORDERED, "float32")
    assert_close(variances[0, 0], PRIOR_VARIANCES_ORDERED)


def test_yolo_box_matches_paddle():
    size = t([[40, 60]], "int32")
    boxes, scores = ops.yolo_box(t(YOLO_X), size, [10, 13, 16, 30], 2, 0.3, 16, True, scale_x_y=1.2)
    assert_close(boxes, YOLO_BOXES, "float32")
    assert_close(scores, YOLO_SCORES, "float32")
    boxes, scores = ops.yolo_box(t(YOLO_IOU_X), size, [10, 13, 16, 30], 2, 0.3, 16, False, iou_aware=True,
                                 iou_aware_factor=0.4)
    assert_close(boxes, YOLO_IOU_BOXES, "float32")
    assert_close(scores, YOLO_IOU_SCORES, "float32")


def yolo_losses(x):
    scored = ops.yolo_loss(x, t(YOLO_LOSS_GT), t(YOLO_LOSS_LABEL), YOLO_ANCHORS, [0, 1], 3, 0.5, 8,
                           gt_score=t(YOLO_LOSS_SCORE))
    plain = ops.yolo_loss(x, t(YOLO_LOSS_GT), t(YOLO_LOSS_LABEL), YOLO_ANCHORS, [1, 2], 3, 0.3, 8,
                          use_label_smooth=False, scale_x_y=1.1)
    return oar.stack([scored, plain])


def test_yolo_loss_matches_paddle_and_its_gradient():
    assert_close(yolo_losses(t(YOLO_LOSS_X)), [YOLO_LOSS_SCORED, YOLO_LOSS_PLAIN], "float32")
    # the gradient on a 2x2 grid of the first image keeps the finite differences quick
    def small_loss(x):
        return ops.yolo_loss(x, t(YOLO_LOSS_GT[:1]), t(YOLO_LOSS_LABEL[:1]), YOLO_ANCHORS, [0, 1], 3, 0.5, 4,
                             gt_score=t(YOLO_LOSS_SCORE[:1]), scale_x_y=1.1)
    check_gradient(small_loss, [YOLO_LOSS_X[:1, :, :2, :2].copy()], wrt=[0])


# ---- roi_align, roi_pool, psroi_pool

def test_roi_ops_match_paddle():
    assert_close(ops.roi_align(t(ROI_X), t(ROI_BOXES), t(ROI_COUNTS), (2, 2), 0.8), ROI_ALIGN, "float32")
    assert_close(ops.roi_align(t(ROI_X), t(ROI_BOXES), t(ROI_COUNTS), (2, 3), 0.8, 2, False),
                 ROI_ALIGN_UNALIGNED_SAMPLED, "float32")
    assert_close(ops.roi_pool(t(ROI_X), t(ROI_BOXES), t(ROI_COUNTS), (2, 3), 0.7), ROI_POOL)
    assert_close(ops.psroi_pool(t(PSROI_X), t(ROI_BOXES), t(ROI_COUNTS), 2, 0.7), PSROI_POOL)


def test_roi_align_of_an_empty_aligned_box_is_nan_as_paddle():
    out = ops.roi_align(t(ROI_X), t([[3.0, 3.0, 3.0, 3.0]]), t([1, 0], "int32"), 2)
    assert np.isnan(out.numpy()).all()


@pytest.mark.parametrize("pool, args", [
    (ops.roi_align, ((2, 2), 0.8)),
    (ops.roi_align, ((2, 3), 0.8, 2, False)),
    (ops.roi_pool, ((2, 3), 0.7)),
])
def test_roi_pooling_gradients(pool, args):
    check_gradient(lambda x: pool(x, t(ROI_BOXES), t(ROI_COUNTS), *args), [ROI_X.copy()], wrt=[0])


def test_psroi_pool_gradient():
    check_gradient(lambda x: ops.psroi_pool(x, t(ROI_BOXES), t(ROI_COUNTS), 2, 0.7), [PSROI_X.copy()], wrt=[0])


def test_roi_layers_call_the_functions():
    args = (t(ROI_X), t(ROI_BOXES), t(ROI_COUNTS))
    assert_close(ops.RoIAlign((2, 2), 0.8)(*args), ROI_ALIGN, "float32")
    assert_close(ops.RoIPool((2, 3), 0.7)(*args), ROI_POOL)
    assert_close(ops.PSRoIPool(2, 0.7)(t(PSROI_X), *args[1:]), PSROI_POOL)


# ---- deform_conv2d

def test_deform_conv2d_matches_paddle():
    assert_close(ops.deform_conv2d(t(DEFORM_X), t(DEFORM_OFFSET), t(DEFORM_WEIGHT), t(DEFORM_BIAS), **DEFORM_ARGS),
                 DEFORM_V1)
    assert_close(ops.deform_conv2d(t(DEFORM_X), t(DEFORM_OFFSET), t(DEFORM_WEIGHT), None, mask=t(DEFORM_MASK),
                                   **DEFORM_ARGS), DEFORM_V2)


def test_deform_conv2d_with_zero_offset_is_conv2d():
    x, weight = t(DEFORM_X), t(DEFORM_WEIGHT)
    expected = oar.nn.functional.conv2d(x, weight, t(DEFORM_BIAS), stride=(2, 1), padding=1, dilation=(1, 2),
                                        groups=2)
    got = ops.deform_conv2d(x, oar.zeros([1, 24, 3, 3], dtype="float64"), weight, t(DEFORM_BIAS), **DEFORM_ARGS)
    np.testing.assert_allclose(got.numpy(), expected.numpy(), *sum_tolerance("float64", terms=12))


def test_deform_conv2d_gradients_reach_every_input():
    def deform(x, offset, weight, bias, mask):
        return ops.deform_conv2d(x, offset, weight, bias, mask=mask, **DEFORM_ARGS)
    check_gradient(deform, [DEFORM_X.copy(), DEFORM_OFFSET.copy(), DEFORM_WEIGHT.copy(), DEFORM_BIAS.copy(),
                            DEFORM_MASK.copy()], wrt=[0, 1, 2, 3, 4])


def test_deform_conv2d_layer():
    oar.seed(0)
    layer = ops.DeformConv2D(4, 4, (2, 3), stride=(2, 1), padding=1, dilation=(1, 2), deformable_groups=2, groups=2)
    assert layer.weight.shape == [4, 2, 2, 3] and layer.bias.shape == [4]
    x, offset = t(DEFORM_X, "float32"), t(DEFORM_OFFSET, "float32")
    expected = ops.deform_conv2d(x, offset, layer.weight, layer.bias, **DEFORM_ARGS)
    np.testing.assert_array_equal(layer(x, offset).numpy(), expected.numpy())
    assert ops.DeformConv2D(4, 4, 3, bias_attr=False).bias is None


# ---- matrix_nms, distribute_fpn_proposals, generate_proposals

def test_matrix_nms_matches_paddle():
    out, rois_num, index = ops.matrix_nms(t(MATRIX_BOXES), t(MATRIX_SCORES), 0.3, 0.2, -1, 6, return_index=True)
    assert_close(out, MATRIX_NMS_OUT)
    assert rois_num.tolist() == MATRIX_NMS_NUM and index.tolist() == MATRIX_NMS_INDEX
    out, rois_num, index = ops.matrix_nms(t(MATRIX_BOXES * 10), t(MATRIX_SCORES), 0.3, 0.2, 3, -1, use_gaussian=True,
                                          gaussian_sigma=1.5, background_label=-1, normalized=False)
    assert_close(out, MATRIX_NMS_GAUSSIAN_OUT)
    assert rois_num.tolist() == MATRIX_NMS_GAUSSIAN_NUM and index is None


def test_distribute_fpn_proposals_matches_paddle():
    multi_rois, restore, per_level = ops.distribute_fpn_proposals(t(FPN_ROIS), 2, 5, 4, 224, True, t([2, 4], "int32"))
    assert [rois.shape[0] for rois in multi_rois] == FPN_LEVEL_SIZES
    assert restore.tolist() == FPN_RESTORE
    assert [n.tolist() for n in per_level] == FPN_PER_LEVEL
    np.testing.assert_array_equal(oar.concat(multi_rois).numpy()[np.ravel(FPN_RESTORE)], FPN_ROIS)


def test_generate_proposals_matches_paddle():
    rois, probs, num = ops.generate_proposals(*proposal_inputs(), pre_nms_top_n=12, post_nms_top_n=5, nms_thresh=0.5,
                                              min_size=2.0, return_rois_num=True)
    assert_close(rois, PROPOSALS_ROIS, "float32")
    assert_close(probs, PROPOSALS_PROBS, "float32")
    assert num.tolist() == PROPOSALS_NUM
    rois, probs, num = ops.generate_proposals(*proposal_inputs(), nms_thresh=0.7, eta=0.8, pixel_offset=True,
                                              return_rois_num=True)
    assert num.tolist() == PROPOSALS_PIXEL_NUM
    assert_close(probs, PROPOSALS_PIXEL_PROBS, "float32")
    assert ops.generate_proposals(*proposal_inputs())[2] is None


# ---- read_file, decode_jpeg

def test_read_file_and_decode_jpeg(tmp_path):
    image_module = pytest.importorskip("PIL.Image")
    pixels = (np.arange(5 * 7 * 3).reshape(5, 7, 3) * 3 % 256).astype(np.uint8)
    path = tmp_path / "image.jpg"
    image_module.fromarray(pixels).save(path, format="JPEG")
    data = ops.read_file(str(path))
    assert data.dtype == oar.uint8 and data.shape == [path.stat().st_size]
    decoded = ops.decode_jpeg(data)
    assert decoded.dtype == oar.uint8 and decoded.shape == [3, 5, 7]
    expected = np.asarray(image_module.open(io.BytesIO(path.read_bytes()))).transpose(2, 0, 1)
    np.testing.assert_array_equal(decoded.numpy(), expected)
    assert ops.decode_jpeg(data, mode="gray").shape == [1, 5, 7]
    with pytest.raises(ArgumentError, match="decode_jpeg: mode"):
        ops.decode_jpeg(data, mode="cmyk")


# ---- errors, layers shared with the model zoo, the namespace, the docstrings

def test_bad_inputs_name_the_op_and_argument():
    with pytest.raises(ShapeError, match="roi_align: boxes must be"):
        ops.roi_align(t(ROI_X), t(ROI_BOXES[:, :3]), t(ROI_COUNTS), 2)
    with pytest.raises(ShapeError, match="roi_pool: boxes_num"):
        ops.roi_pool(t(ROI_X), t(ROI_BOXES), t([1, 1], "int32"), 2)
    with pytest.raises(ShapeError, match="psroi_pool: the channels of x"):
        ops.psroi_pool(t(ROI_X), t(ROI_BOXES), t(ROI_COUNTS), 2)
    with pytest.raises(ArgumentError, match="box_coder: prior_box_var"):
        ops.box_coder(t(PRIORS), None, t(BOXES))
    with pytest.raises(ShapeError, match="deform_conv2d: offset must be"):
        ops.deform_conv2d(t(DEFORM_X), t(DEFORM_OFFSET[:, :4]), t(DEFORM_WEIGHT), **DEFORM_ARGS)
    with pytest.raises(ArgumentError, match="nms: categories"):
        ops.nms(t(BOXES), 0.3, t(SCORES), t(CATEGORIES))
    with pytest.raises(ShapeError, match="yolo_box: x must have 14 channels"):
        ops.yolo_box(t(YOLO_IOU_X), t([[40, 60]], "int32"), [10, 13, 16, 30], 2, 0.3, 16)


def test_namespace_and_conv_norm_activation():
    assert oar.vision.ops is ops
    assert ops.ConvNormActivation is oar.vision.models.mobilenetv1.ConvNormActivation
    assert set(ops.__all__) >= {"nms", "roi_align", "deform_conv2d", "DeformConv2D", "ConvNormActivation"}


def test_docstring_examples_run():
    result = doctest.testmod(ops, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 10 and result.failed == 0

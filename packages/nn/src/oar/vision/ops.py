"""``oar.vision.ops``: Paddle's detection and image operators (``paddle.vision.ops``).

Two kinds of operator live here, and they are built differently:

- **Differentiable ones** (``roi_align``, ``roi_pool``, ``psroi_pool``, ``deform_conv2d``, ``yolo_loss``,
  ``box_coder``) are composed from oar ops, so their gradients come from the ops they are made of. What
  depends only on the boxes (which pixels a bin reads, with which bilinear weights; which cell a ground
  truth is matched to) is index arithmetic done in numpy; the values are then read with ``oar.gather`` /
  ``oar.take_along_axis`` and weighted with oar multiplications. ``deform_conv2d`` computes its bilinear
  weights from the offset with oar ops, so gradients reach the input, the offset, the mask, the weight and
  the bias (as Paddle's kernel).
- **Detection post-processing** (``nms``, ``matrix_nms``, ``prior_box``, ``yolo_box``,
  ``generate_proposals``, ``distribute_fpn_proposals``) selects and sorts boxes; it runs in numpy on
  the eager values and returns new tensors without a gradient, as Paddle's (whose kernels have none).
- ``ConvNormActivation`` is the block the model zoo uses (``oar.vision.models``), re-exported here.

Differences from Paddle 3.3.1:

- The post-processing functions above (and ``read_file``/``decode_jpeg``) are eager only: they are not
  captured into static programs.
- Ties in scores are broken by the original order (a stable sort); Paddle's sorts leave ties unspecified.
- ``roi_align``/``roi_pool``/``psroi_pool`` give no gradient to ``boxes`` (neither does Paddle's).
- Gradients are those of the forward computation where Paddle's backward kernels disagree with their own
  forward: ``roi_align`` with ``aligned=True`` on a box under one pixel (Paddle's backward clamps its size to
  1, its forward does not), and ``yolo_loss`` when two ground truths fall in the same cell and anchor
  (Paddle's forward adds both losses, its backward keeps the gradient of only one).
- ``box_coder`` with a list ``prior_box_var`` and float64 boxes uses the variance given (Paddle 3.3.1 reads
  it wrongly and decodes as if it were ~0).
- ``decode_jpeg`` decodes on the CPU with Pillow (Paddle's runs on GPU only, with nvJPEG).

>>> import oar
>>> from oar.vision.ops import nms
>>> boxes = oar.to_tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 10.0, 10.0], [20.0, 20.0, 30.0, 30.0]])
>>> nms(boxes, iou_threshold=0.5, scores=oar.to_tensor([0.9, 0.8, 0.7])).tolist()
[0, 2]
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

import oar
from oar import nn
from oar.errors import ArgumentError, ShapeError
from oar.nn.initializer import Normal
from oar.vision.models._conv_norm import ConvNormActivation

__all__ = [
    "yolo_loss", "yolo_box", "prior_box", "box_coder", "deform_conv2d", "DeformConv2D", "distribute_fpn_proposals", "generate_proposals",
    "read_file", "decode_jpeg", "roi_pool", "RoIPool", "psroi_pool", "PSRoIPool", "roi_align", "RoIAlign", "nms",
    "matrix_nms", "ConvNormActivation",
]


# ---------------------------------------------------------------- helpers

def _numpy(value, fn: str, name: str) -> np.ndarray:
    if isinstance(value, oar.Tensor):
        return value.numpy()
    try:
        return np.asarray(value)
    except Exception as err:  # noqa: BLE001 -- the message names the argument
        raise ArgumentError(f"{fn}: {name} must be a Tensor or array-like, got {type(value).__name__}") from err


def _pair(value, fn: str, name: str) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return int(value[0]), int(value[1])
    raise ArgumentError(f"{fn}: {name} must be an int or a pair of ints, got {value!r}")


def _check_rank(x, rank: int, fn: str, name: str) -> None:
    if len(x.shape) != rank:
        raise ShapeError(f"{fn}: {name} must be {rank}-D, got shape {list(x.shape)}")


def _round_half_away(values: np.ndarray) -> np.ndarray:
    """``std::round``: halves away from zero (numpy's ``round`` goes to even)."""
    return np.sign(values) * np.floor(np.abs(values) + 0.5)


def _roi_batch_index(boxes_num, num_rois: int, batch: int, fn: str) -> np.ndarray:
    counts = _numpy(boxes_num, fn, "boxes_num").astype(np.int64).reshape(-1)
    if counts.shape[0] != batch or counts.sum() != num_rois:
        raise ShapeError(f"{fn}: boxes_num must have one count per image ({batch}) summing to the number of "
                         f"boxes ({num_rois}), got {counts.tolist()}")
    return np.repeat(np.arange(batch), counts)


def _roi_inputs(x, boxes, boxes_num, output_size, fn: str):
    """The checked inputs of the RoI functions: the boxes as float64 [R, 4], the image of each box,
    and the output size as (height, width)."""
    _check_rank(x, 4, fn, "x")
    box_values = _numpy(boxes, fn, "boxes").astype(np.float64)
    if box_values.ndim != 2 or box_values.shape[1] != 4:
        raise ShapeError(f"{fn}: boxes must be [R, 4], got shape {list(box_values.shape)}")
    image_of = _roi_batch_index(boxes_num, len(box_values), x.shape[0], fn)
    return box_values, image_of, _pair(output_size, fn, "output_size")


def _weighted_gather(x, flat_index: np.ndarray, weight: np.ndarray):
    """``sum_s weight[..., s] * x.flatten()[flat_index[..., s]]``: reads and weights with oar ops, so the
    gradient to ``x`` is the scatter of ``weight``."""
    values = oar.gather(oar.reshape(x, [-1]), oar.to_tensor(flat_index.reshape(-1).astype(np.int64)))
    values = oar.reshape(values, list(flat_index.shape)) * oar.to_tensor(weight, dtype=x.dtype)
    return oar.sum(values, axis=-1)


# ---------------------------------------------------------------- nms

def _iou_matrix(boxes: np.ndarray, pixel_offset: float = 0.0) -> np.ndarray:
    """Pairwise IoU; ``pixel_offset=1`` counts both edge pixels (unnormalized boxes). Disjoint boxes
    have IoU 0 even when ``pixel_offset`` would give them a shared pixel (Paddle's ``JaccardOverlap``)."""
    x1, y1, x2, y2 = (boxes[:, k] for k in range(4))
    area = (x2 - x1 + pixel_offset) * (y2 - y1 + pixel_offset)
    disjoint = ((x1[None] > x2[:, None]) | (x2[None] < x1[:, None]) | (y1[None] > y2[:, None])
                | (y2[None] < y1[:, None]))
    inter_w = np.minimum(x2[:, None], x2[None]) - np.maximum(x1[:, None], x1[None]) + pixel_offset
    inter_h = np.minimum(y2[:, None], y2[None]) - np.maximum(y1[:, None], y1[None]) + pixel_offset
    inter = np.where(disjoint, 0.0, inter_w * inter_h)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = inter / (area[:, None] + area[None] - inter)
    return np.nan_to_num(iou)


def _greedy_nms(boxes: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Indices kept by greedy NMS over ``boxes`` taken in the given order (Paddle's ``nms`` kernel)."""
    iou = _iou_matrix(boxes)
    suppressed = np.zeros(len(boxes), dtype=bool)
    for i in range(len(boxes)):
        if not suppressed[i]:
            later = np.arange(len(boxes)) > i
            suppressed |= later & (iou[i] > iou_threshold)
    return np.flatnonzero(~suppressed)


def _descending(scores: np.ndarray) -> np.ndarray:
    return np.argsort(-scores, kind="stable")


def nms(boxes, iou_threshold=0.3, scores=None, category_idxs=None, categories=None, top_k=None):
    """Non-maximum suppression: the int64 indices of the boxes kept (Paddle's ``paddle.vision.ops.nms``).

    ``boxes`` is ``[N, 4]`` as ``(x1, y1, x2, y2)``. Without ``scores`` the boxes are taken in their
    order; with ``scores`` in descending score order. With ``category_idxs`` (and the list of
    ``categories``) suppression runs per category and the kept indices are sorted by score, the first
    ``top_k`` of them when given (as in Paddle, ``top_k`` is used only with ``category_idxs``).

    >>> import oar
    >>> boxes = oar.to_tensor([[0.0, 0.0, 4.0, 4.0], [0.5, 0.5, 4.0, 4.0], [0.0, 0.0, 4.0, 4.0]])
    >>> nms(boxes, 0.5, scores=oar.to_tensor([0.2, 0.9, 0.5]), category_idxs=oar.to_tensor([0, 0, 1]),
    ...     categories=[0, 1]).tolist()
    [1, 2]
    """
    fn = "nms"
    box_values = _numpy(boxes, fn, "boxes")
    if box_values.ndim != 2 or box_values.shape[1] != 4:
        raise ShapeError(f"{fn}: boxes must be [N, 4], got shape {list(box_values.shape)}")
    if scores is None:
        return oar.to_tensor(_greedy_nms(box_values, iou_threshold).astype(np.int64))
    score_values = _numpy(scores, fn, "scores").reshape(-1)
    if score_values.shape[0] != box_values.shape[0]:
        raise ShapeError(f"{fn}: scores must have one score per box ({box_values.shape[0]}), "
                         f"got shape {list(score_values.shape)}")
    if category_idxs is None:
        order = _descending(score_values)
        return oar.to_tensor(order[_greedy_nms(box_values[order], iou_threshold)].astype(np.int64))
    if categories is None:
        raise ArgumentError(f"{fn}: categories (the list of category ids) is needed when category_idxs is given")
    if top_k is not None and top_k > score_values.shape[0]:
        raise ArgumentError(f"{fn}: top_k ({top_k}) must be at most the number of boxes ({score_values.shape[0]})")
    category_values = _numpy(category_idxs, fn, "category_idxs").reshape(-1)
    keep = np.zeros(len(score_values), dtype=bool)
    for category in categories:
        members = np.flatnonzero(category_values == category)
        order = members[_descending(score_values[members])]
        keep[order[_greedy_nms(box_values[order], iou_threshold)]] = True
    kept = np.flatnonzero(keep)
    kept = kept[_descending(score_values[kept])]
    if top_k is not None:
        kept = kept[:top_k]
    return oar.to_tensor(kept.astype(np.int64))


# ---------------------------------------------------------------- box_coder, prior_box

def box_coder(prior_box, prior_box_var, target_box, code_type="encode_center_size", box_normalized=True, axis=0,
              name=None):
    """Encode target boxes against prior boxes, or decode offsets back into boxes (Paddle's ``box_coder``).

    ``encode_center_size``: ``prior_box`` ``[M, 4]``, ``target_box`` ``[N, 4]`` give ``[N, M, 4]`` offsets
    ``((tx - px) / pw, (ty - py) / ph, log(tw / pw), log(th / ph))`` divided by the variance.
    ``decode_center_size``: ``target_box`` ``[N, M, 4]`` offsets give boxes; ``axis`` says which axis of
    ``target_box`` the priors run along (0: priors are indexed by the second axis). ``prior_box_var``
    is a list of 4 floats or a ``[M, 4]`` tensor. Unnormalized boxes count both edge pixels (+1).
    Composed from oar ops: differentiable in ``target_box``.

    >>> import oar
    >>> priors = oar.to_tensor([[0.0, 0.0, 2.0, 2.0]])
    >>> box_coder(priors, [1.0, 1.0, 1.0, 1.0], oar.to_tensor([[1.0, 1.0, 3.0, 3.0]])).tolist()
    [[[0.5, 0.5, 0.0, 0.0]]]
    """
    fn = "box_coder"
    if code_type not in ("encode_center_size", "decode_center_size"):
        raise ArgumentError(f"{fn}: code_type must be 'encode_center_size' or 'decode_center_size', got {code_type!r}")
    if axis not in (0, 1):
        raise ArgumentError(f"{fn}: axis must be 0 or 1, got {axis!r}")
    _check_rank(prior_box, 2, fn, "prior_box")
    one = 0.0 if box_normalized else 1.0
    prior_w = prior_box[:, 2] - prior_box[:, 0] + one
    prior_h = prior_box[:, 3] - prior_box[:, 1] + one
    prior_cx = prior_box[:, 0] + prior_w * 0.5
    prior_cy = prior_box[:, 1] + prior_h * 0.5
    if isinstance(prior_box_var, oar.Tensor):
        variance = prior_box_var
    elif isinstance(prior_box_var, (list, tuple)) and len(prior_box_var) == 4:
        variance = oar.to_tensor(np.reshape(prior_box_var, (1, 4)), dtype=prior_box.dtype)
    else:
        raise ArgumentError(f"{fn}: prior_box_var must be a Tensor or a list of 4 floats, got {prior_box_var!r}")
    if code_type == "encode_center_size":
        _check_rank(target_box, 2, fn, "target_box")
        target_w = target_box[:, 2] - target_box[:, 0] + one
        target_h = target_box[:, 3] - target_box[:, 1] + one
        # Paddle's kernel centres the target without the +1 it gives the widths of unnormalized boxes
        target_cx = ((target_box[:, 0] + target_box[:, 2]) * 0.5).unsqueeze(1)
        target_cy = ((target_box[:, 1] + target_box[:, 3]) * 0.5).unsqueeze(1)
        out = oar.stack([(target_cx - prior_cx) / prior_w, (target_cy - prior_cy) / prior_h,
                         oar.log(oar.abs(target_w.unsqueeze(1) / prior_w)),
                         oar.log(oar.abs(target_h.unsqueeze(1) / prior_h))], axis=-1)
        return out / variance
    if len(target_box.shape) == 2:
        target_box = target_box.unsqueeze(1) if axis == 0 else target_box.unsqueeze(0)
    _check_rank(target_box, 3, fn, "target_box")

    def along_priors(t):  # a per-prior tensor [M] or [M, k] placed on target_box's prior axis
        return t.unsqueeze(0) if axis == 0 else t.unsqueeze(1)

    variance = variance if variance.shape[0] == 1 else along_priors(variance)
    deltas = [target_box[:, :, k] * variance[..., k] for k in range(4)]
    center_x = deltas[0] * along_priors(prior_w) + along_priors(prior_cx)
    center_y = deltas[1] * along_priors(prior_h) + along_priors(prior_cy)
    width = oar.exp(deltas[2]) * along_priors(prior_w)
    height = oar.exp(deltas[3]) * along_priors(prior_h)
    return oar.stack([center_x - width * 0.5, center_y - height * 0.5, center_x + width * 0.5 - one,
                      center_y + height * 0.5 - one], axis=-1)


def _expand_aspect_ratios(aspect_ratios, flip: bool) -> list[float]:
    ratios = [1.0]
    for ratio in aspect_ratios:
        if any(abs(ratio - known) < 1e-6 for known in ratios):
            continue
        ratios.append(float(ratio))
        if flip:
            ratios.append(1.0 / ratio)
    return ratios


def prior_box(input, image, min_sizes, max_sizes=None, aspect_ratios=[1.0], variance=[0.1, 0.1, 0.2, 0.2],  # noqa: A002,B006 -- Paddle's names and defaults
              flip=False, clip=False, steps=[0.0, 0.0], offset=0.5, min_max_aspect_ratios_order=False, name=None):  # noqa: B006
    """SSD prior (anchor) boxes for each cell of the feature map ``input``, normalized by the size of
    ``image``: ``(boxes, variances)``, both ``[H, W, num_priors, 4]`` (Paddle's ``prior_box``).

    >>> import oar
    >>> boxes, variances = prior_box(oar.zeros([1, 3, 2, 2]), oar.zeros([1, 3, 8, 8]), min_sizes=[4.0])
    >>> boxes.shape, boxes[0, 0, 0].tolist()
    ([2, 2, 1, 4], [0.0, 0.0, 0.5, 0.5])
    """
    fn = "prior_box"
    _check_rank(input, 4, fn, "input")
    _check_rank(image, 4, fn, "image")
    feature_h, feature_w = input.shape[2], input.shape[3]
    image_h, image_w = image.shape[2], image.shape[3]
    if max_sizes and len(max_sizes) != len(min_sizes):
        raise ArgumentError(f"{fn}: max_sizes must have as many entries as min_sizes ({len(min_sizes)}), "
                            f"got {len(max_sizes)}")
    step_w = steps[0] if steps[0] != 0 else image_w / feature_w
    step_h = steps[1] if steps[1] != 0 else image_h / feature_h
    ratios = _expand_aspect_ratios(aspect_ratios, flip)
    half_sizes = []  # (half width, half height) of each prior at a cell, in Paddle's order
    for s, min_size in enumerate(min_sizes):
        by_ratio = [(min_size * math.sqrt(r) / 2, min_size / math.sqrt(r) / 2) for r in ratios]
        by_max = [(math.sqrt(min_size * max_sizes[s]) / 2,) * 2] if max_sizes else []
        if min_max_aspect_ratios_order:
            rest = [size for size, r in zip(by_ratio, ratios) if abs(r - 1.0) >= 1e-6]
            half_sizes += [(min_size / 2, min_size / 2), *by_max, *rest]
        else:
            half_sizes += [*by_ratio, *by_max]
    center_x = (np.arange(feature_w) + offset) * step_w
    center_y = (np.arange(feature_h) + offset) * step_h
    half = np.asarray(half_sizes, dtype=np.float64)
    cx = center_x[None, :, None]
    cy = center_y[:, None, None]
    boxes = np.stack(np.broadcast_arrays((cx - half[:, 0]) / image_w, (cy - half[:, 1]) / image_h,
                                         (cx + half[:, 0]) / image_w, (cy + half[:, 1]) / image_h), axis=-1)
    if clip:
        boxes = np.clip(boxes, 0.0, 1.0)
    variances = np.broadcast_to(np.asarray(variance, dtype=np.float64), boxes.shape)
    return oar.to_tensor(boxes, dtype=input.dtype), oar.to_tensor(np.ascontiguousarray(variances), dtype=input.dtype)


# ---------------------------------------------------------------- yolo_box

def _sigmoid(values: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-values))


def yolo_box(x, img_size, anchors, class_num, conf_thresh, downsample_ratio, clip_bbox=True, name=None,
             scale_x_y=1.0, iou_aware=False, iou_aware_factor=0.5):
    """Decode a YOLOv3 head ``x`` ``[N, A * (5 + class_num), H, W]`` into ``boxes`` ``[N, A*H*W, 4]``
    (``x1, y1, x2, y2`` in pixels of ``img_size`` ``[N, 2]`` = (height, width)) and ``scores``
    ``[N, A*H*W, class_num]``; predictions whose confidence is below ``conf_thresh`` are zero
    (Paddle's ``yolo_box``). With ``iou_aware`` the first ``A`` channels are IoU predictions.

    >>> import oar
    >>> boxes, scores = yolo_box(oar.zeros([1, 7, 1, 1]), oar.to_tensor([[32, 32]]), [16, 16], 2, 0.1, 32)
    >>> boxes.tolist(), scores.tolist()
    ([[[8.0, 8.0, 24.0, 24.0]]], [[[0.25, 0.25]]])
    """
    fn = "yolo_box"
    _check_rank(x, 4, fn, "x")
    values = x.numpy()
    sizes = _numpy(img_size, fn, "img_size").astype(np.float64)
    batch, channels, height, width = values.shape
    num_anchors = len(anchors) // 2
    per_anchor = 5 + class_num
    expected = num_anchors * (per_anchor + (1 if iou_aware else 0))
    if channels != expected:
        raise ShapeError(f"{fn}: x must have {expected} channels for {num_anchors} anchors and {class_num} classes"
                         f"{' with iou_aware' if iou_aware else ''}, got shape {list(values.shape)}")
    iou = values[:, :num_anchors] if iou_aware else None
    preds = values[:, num_anchors:] if iou_aware else values
    preds = preds.reshape(batch, num_anchors, per_anchor, height, width).astype(np.float64)
    confidence = _sigmoid(preds[:, :, 4])
    if iou_aware:
        confidence = confidence ** (1 - iou_aware_factor) * _sigmoid(iou.astype(np.float64)) ** iou_aware_factor
    bias = -0.5 * (scale_x_y - 1.0)
    image_h = sizes[:, 0, None, None, None]
    image_w = sizes[:, 1, None, None, None]
    grid_x = np.arange(width)[None, None, None, :]
    grid_y = np.arange(height)[None, None, :, None]
    anchor_w = np.asarray(anchors[0::2], dtype=np.float64)[None, :, None, None]
    anchor_h = np.asarray(anchors[1::2], dtype=np.float64)[None, :, None, None]
    center_x = (grid_x + _sigmoid(preds[:, :, 0]) * scale_x_y + bias) * image_w / width
    center_y = (grid_y + _sigmoid(preds[:, :, 1]) * scale_x_y + bias) * image_h / height
    box_w = np.exp(preds[:, :, 2]) * anchor_w * image_w / (downsample_ratio * width)
    box_h = np.exp(preds[:, :, 3]) * anchor_h * image_h / (downsample_ratio * height)
    boxes = np.stack([center_x - box_w / 2, center_y - box_h / 2, center_x + box_w / 2, center_y + box_h / 2], -1)
    if clip_bbox:
        boxes[..., 0] = np.maximum(boxes[..., 0], 0)
        boxes[..., 1] = np.maximum(boxes[..., 1], 0)
        boxes[..., 2] = np.minimum(boxes[..., 2], image_w - 1)
        boxes[..., 3] = np.minimum(boxes[..., 3], image_h - 1)
    scores = confidence[:, :, None] * _sigmoid(preds[:, :, 5:])  # [N, A, class_num, H, W]
    kept = (confidence >= conf_thresh)
    boxes = boxes * kept[..., None]
    scores = np.moveaxis(scores * kept[:, :, None], 2, -1)
    dtype = values.dtype
    return (oar.to_tensor(boxes.reshape(batch, -1, 4).astype(dtype)),
            oar.to_tensor(scores.reshape(batch, -1, class_num).astype(dtype)))


# ---------------------------------------------------------------- yolo_loss

def _center_iou(x1, y1, w1, h1, x2, y2, w2, h2):
    """IoU of boxes given as (centre x, centre y, width, height), broadcast (Paddle's ``CalcBoxIoU``)."""
    overlap_w = np.minimum(x1 + w1 / 2, x2 + w2 / 2) - np.maximum(x1 - w1 / 2, x2 - w2 / 2)
    overlap_h = np.minimum(y1 + h1 / 2, y2 + h2 / 2) - np.maximum(y1 - h1 / 2, y2 - h2 / 2)
    inter = np.where((overlap_w < 0) | (overlap_h < 0), 0.0, overlap_w * overlap_h)
    with np.errstate(divide="ignore", invalid="ignore"):
        return inter / (w1 * h1 + w2 * h2 - inter)


def _sigmoid_cross_entropy(logits, labels):
    """``max(x, 0) - x * label + log(1 + exp(-|x|))`` with oar ops (Paddle's ``SigmoidCrossEntropy``)."""
    return oar.nn.functional.relu(logits) - logits * labels + oar.log1p(oar.exp(-oar.abs(logits)))


def yolo_loss(x, gt_box, gt_label, anchors, anchor_mask, class_num, ignore_thresh, downsample_ratio, gt_score=None,
              use_label_smooth=True, name=None, scale_x_y=1.0):
    """YOLOv3 loss per image, ``[N]`` (Paddle's ``yolo_loss``). ``x`` ``[N, len(anchor_mask) * (5 + class_num),
    H, W]``; ``gt_box`` ``[N, B, 4]`` as (centre x, centre y, w, h) divided by the input size (a box of zero
    width or height is padding); ``gt_label`` ``[N, B]``; ``gt_score`` ``[N, B]`` mixup weights (default 1).
    Each ground-truth box is matched to the anchor of best shape IoU; when that anchor is in ``anchor_mask``
    its cell pays the location loss (sigmoid cross entropy on x, y, L1 on w, h, times ``2 - w * h``), the
    class loss and a positive objectness loss; other predictions pay a negative objectness loss unless
    their box overlaps a ground truth by more than ``ignore_thresh``. Differentiable in ``x``; the
    matching and the targets carry no gradient, as in Paddle.

    >>> import oar
    >>> loss = yolo_loss(oar.zeros([1, 7, 2, 2]), oar.to_tensor([[[0.3, 0.3, 0.4, 0.4]]]),
    ...                  oar.to_tensor([[1]], dtype="int32"), [8, 8], [0], 2, 0.7, 16)
    >>> round(float(loss[0]), 4)
    8.4393
    """
    fn = "yolo_loss"
    _check_rank(x, 4, fn, "x")
    values = x.numpy().astype(np.float64)
    boxes = _numpy(gt_box, fn, "gt_box").astype(np.float64)
    labels = _numpy(gt_label, fn, "gt_label").astype(np.int64)
    batch, channels, height, width = values.shape
    num_masked = len(anchor_mask)
    per_anchor = 5 + class_num
    if channels != num_masked * per_anchor:
        raise ShapeError(f"{fn}: x must have len(anchor_mask) * (5 + class_num) = {num_masked * per_anchor} "
                         f"channels, got shape {list(values.shape)}")
    if boxes.ndim != 3 or boxes.shape[0] != batch or boxes.shape[2] != 4 or labels.shape != boxes.shape[:2]:
        raise ShapeError(f"{fn}: gt_box must be [N, B, 4] and gt_label [N, B] with N = {batch}, got "
                         f"{list(boxes.shape)} and {list(labels.shape)}")
    scores = (np.ones(labels.shape) if gt_score is None
              else _numpy(gt_score, fn, "gt_score").astype(np.float64).reshape(labels.shape))
    anchor_wh = np.asarray(anchors, dtype=np.float64).reshape(-1, 2)
    input_size = downsample_ratio * height
    smooth = min(1.0 / class_num, 1.0 / 40) if use_label_smooth else 0.0
    bias = -0.5 * (scale_x_y - 1.0)
    preds = values.reshape(batch, num_masked, per_anchor, height, width)
    masked_wh = anchor_wh[list(anchor_mask)]
    pred_x = (np.arange(width) + _sigmoid(preds[:, :, 0]) * scale_x_y + bias) / width
    pred_y = (np.arange(height)[:, None] + _sigmoid(preds[:, :, 1]) * scale_x_y + bias) / height
    pred_w = np.exp(preds[:, :, 2]) * masked_wh[None, :, 0, None, None] / input_size
    pred_h = np.exp(preds[:, :, 3]) * masked_wh[None, :, 1, None, None] / input_size
    valid = (boxes[:, :, 2] >= 1e-6) & (boxes[:, :, 3] >= 1e-6)
    # objectness target: weight 1 with label 0 (negative), 0 (ignored), or the mixup score with label 1
    objectness_weight = np.ones((batch, num_masked, height, width))
    objectness_label = np.zeros(objectness_weight.shape)
    positives = []  # (image, flat index of the first channel, targets tx ty tw th, location scale, label, score)
    for image in range(batch):
        gts = boxes[image][valid[image]]
        if len(gts):
            best = _center_iou(pred_x[image][..., None], pred_y[image][..., None], pred_w[image][..., None],
                               pred_h[image][..., None], *gts.T).max(axis=-1)
            objectness_weight[image][best > ignore_thresh] = 0.0
        for b in np.flatnonzero(valid[image]):
            cx, cy, w, h = boxes[image, b]
            gi, gj = int(cx * width), int(cy * height)
            shape_iou = _center_iou(0.0, 0.0, anchor_wh[:, 0] / input_size, anchor_wh[:, 1] / input_size, 0.0, 0.0, w, h)
            best_anchor = int(np.argmax(shape_iou)) if shape_iou.max() > 0 else 0
            if best_anchor not in anchor_mask:
                continue
            slot = list(anchor_mask).index(best_anchor)
            targets = (cx * height - gi, cy * height - gj, math.log(w * input_size / anchor_wh[best_anchor, 0]),
                       math.log(h * input_size / anchor_wh[best_anchor, 1]))
            first = ((image * num_masked + slot) * per_anchor * height + gj) * width + gi
            positives.append((image, first, targets, (2.0 - w * h) * scores[image, b], labels[image, b],
                              scores[image, b]))
            objectness_weight[image, slot, gj, gi] = scores[image, b]
            objectness_label[image, slot, gj, gi] = 1.0
    def as_tensor(array):
        return oar.to_tensor(np.asarray(array), dtype=x.dtype)

    logits = oar.reshape(x, [batch, num_masked, per_anchor, height, width])[:, :, 4]
    loss = oar.sum(oar.reshape(_sigmoid_cross_entropy(logits, as_tensor(objectness_label))
                               * as_tensor(objectness_weight), [batch, -1]), axis=1)
    if not positives:
        return loss
    plane = height * width
    channel_index = np.array([[p[1] + c * plane for c in range(per_anchor)] for p in positives])
    picked = oar.reshape(oar.gather(oar.reshape(x, [-1]), oar.to_tensor(channel_index.reshape(-1))),
                         [len(positives), per_anchor])
    targets = np.array([p[2] for p in positives])
    location_scale = as_tensor([p[3] for p in positives])
    class_targets = np.full((len(positives), class_num), smooth)
    class_targets[np.arange(len(positives)), [p[4] for p in positives]] = 1.0 - smooth
    location = (_sigmoid_cross_entropy(picked[:, 0], as_tensor(targets[:, 0]))
                + _sigmoid_cross_entropy(picked[:, 1], as_tensor(targets[:, 1]))
                + oar.abs(picked[:, 2] - as_tensor(targets[:, 2])) + oar.abs(picked[:, 3] - as_tensor(targets[:, 3])))
    classes = oar.sum(_sigmoid_cross_entropy(picked[:, 5:], as_tensor(class_targets)), axis=1)
    per_positive = location * location_scale + classes * as_tensor([p[5] for p in positives])
    owner = np.zeros((batch, len(positives)))
    owner[[p[0] for p in positives], np.arange(len(positives))] = 1.0
    return loss + oar.matmul(as_tensor(owner), per_positive)


# ---------------------------------------------------------------- roi_align, roi_pool, psroi_pool

def _bilinear_axis(coords: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Along one axis, the two pixels a RoIAlign sample reads and their weights (Paddle's CPU kernel:
    a sample more than a pixel outside reads zero; one just outside is clamped to the edge)."""
    outside = (coords < -1.0) | (coords > size)
    coords = np.maximum(coords, 0.0)
    low = np.floor(coords).astype(np.int64)
    at_edge = low >= size - 1
    low = np.where(at_edge, size - 1, low)
    high = np.where(at_edge, size - 1, low + 1)
    coords = np.where(at_edge, low.astype(coords.dtype), coords)
    frac = coords - low
    keep = ~outside
    return low, high, (1.0 - frac) * keep, frac * keep


def roi_align(x, boxes, boxes_num, output_size, spatial_scale=1.0, sampling_ratio=-1, aligned=True, name=None):
    """Region of interest align (Mask R-CNN): average of bilinear samples on a regular grid in each of the
    ``output_size`` bins of every box; ``x`` ``[N, C, H, W]``, ``boxes`` ``[R, 4]`` (``x1, y1, x2, y2``),
    ``boxes_num`` ``[N]`` boxes per image; out ``[R, C, *output_size]`` (Paddle's ``roi_align``).
    ``sampling_ratio=-1`` samples ``ceil(bin size)`` points per bin side; ``aligned`` shifts the boxes by
    half a pixel. Differentiable in ``x``. A box of zero size with ``aligned=True``
    gives NaN, as Paddle's (no sample divided by a count of zero).

    >>> import oar
    >>> x = oar.arange(16, dtype="float32").reshape([1, 1, 4, 4])
    >>> roi_align(x, oar.to_tensor([[0.0, 0.0, 2.0, 2.0]]), oar.to_tensor([1]), output_size=1).tolist()
    [[[[2.5]]]]
    """
    fn = "roi_align"
    box_values, image_of, (pooled_h, pooled_w) = _roi_inputs(x, boxes, boxes_num, output_size, fn)
    batch, channels, height, width = x.shape
    shift = 0.5 if aligned else 0.0
    scaled = box_values * spatial_scale - shift
    roi_w = scaled[:, 2] - scaled[:, 0]
    roi_h = scaled[:, 3] - scaled[:, 1]
    if not aligned:
        roi_w, roi_h = np.maximum(roi_w, 1.0), np.maximum(roi_h, 1.0)
    bin_h, bin_w = roi_h / pooled_h, roi_w / pooled_w
    grid_h = np.full(len(box_values), sampling_ratio) if sampling_ratio > 0 else np.ceil(roi_h / pooled_h)
    grid_w = np.full(len(box_values), sampling_ratio) if sampling_ratio > 0 else np.ceil(roi_w / pooled_w)
    grid_h, grid_w = grid_h.astype(np.int64), grid_w.astype(np.int64)
    samples = max(int((grid_h * grid_w).max(initial=0)) * 4, 1)
    rows = np.zeros((len(box_values), pooled_h, pooled_w, samples), dtype=np.int64)
    weights = np.zeros(rows.shape)
    for r in range(len(box_values)):
        gh, gw = grid_h[r], grid_w[r]
        if gh * gw == 0:  # an empty aligned box: Paddle's kernel divides 0 by 0 samples
            weights[r] = np.nan
            continue
        ys = scaled[r, 1] + np.arange(pooled_h)[:, None] * bin_h[r] + (np.arange(gh) + 0.5) * bin_h[r] / gh
        xs = scaled[r, 0] + np.arange(pooled_w)[:, None] * bin_w[r] + (np.arange(gw) + 0.5) * bin_w[r] / gw
        y_low, y_high, wy_low, wy_high = _bilinear_axis(ys, height)  # [pooled_h, gh]
        x_low, x_high, wx_low, wx_high = _bilinear_axis(xs, width)
        y_pix = np.stack([y_low, y_high], -1)[:, None, :, :, None, None]  # [ph, 1, gh, 2, 1, 1]
        y_wts = np.stack([wy_low, wy_high], -1)[:, None, :, :, None, None]
        x_pix = np.stack([x_low, x_high], -1)[None, :, None, None, :, :]  # [1, pw, 1, 1, gw, 2]
        x_wts = np.stack([wx_low, wx_high], -1)[None, :, None, None, :, :]
        count = gh * gw * 4
        rows[r, :, :, :count] = (image_of[r] * height * width + y_pix * width + x_pix).reshape(pooled_h, pooled_w, -1)
        weights[r, :, :, :count] = (y_wts * x_wts).reshape(pooled_h, pooled_w, -1) / (gh * gw)
    pixels = oar.reshape(oar.transpose(x, [0, 2, 3, 1]), [-1, channels])  # one row of channels per pixel
    values = oar.gather(pixels, oar.to_tensor(rows.reshape(-1)))
    values = oar.reshape(values, [*rows.shape, channels]) * oar.to_tensor(weights[..., None], dtype=x.dtype)
    return oar.transpose(oar.sum(values, axis=3), [0, 3, 1, 2])


def roi_pool(x, boxes, boxes_num, output_size, spatial_scale=1.0, name=None):
    """Region of interest max pooling (Fast R-CNN): the maximum of each of the ``output_size`` bins of every
    box, whose corners are rounded to pixels; an empty bin gives 0 (Paddle's ``roi_pool``). The gradient
    goes to the maximum's pixel.

    >>> import oar
    >>> x = oar.arange(16, dtype="float32").reshape([1, 1, 4, 4])
    >>> roi_pool(x, oar.to_tensor([[0.0, 0.0, 3.0, 3.0]]), oar.to_tensor([1]), output_size=2).tolist()
    [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    fn = "roi_pool"
    box_values, image_of, (pooled_h, pooled_w) = _roi_inputs(x, boxes, boxes_num, output_size, fn)
    batch, channels, height, width = x.shape
    corners = _round_half_away(box_values * spatial_scale).astype(np.int64)
    values = x.numpy()
    flat = np.zeros((len(box_values), channels, pooled_h, pooled_w, 1), dtype=np.int64)
    nonempty = np.zeros(flat.shape)
    channel_base = (image_of[:, None] * channels + np.arange(channels)) * height * width  # [R, C]
    for r, (start_w, start_h, end_w, end_h) in enumerate(corners):
        bin_h = max(end_h - start_h + 1, 1) / pooled_h
        bin_w = max(end_w - start_w + 1, 1) / pooled_w
        for ph in range(pooled_h):
            h0 = min(max(math.floor(ph * bin_h) + start_h, 0), height)
            h1 = min(max(math.ceil((ph + 1) * bin_h) + start_h, 0), height)
            for pw in range(pooled_w):
                w0 = min(max(math.floor(pw * bin_w) + start_w, 0), width)
                w1 = min(max(math.ceil((pw + 1) * bin_w) + start_w, 0), width)
                if h1 <= h0 or w1 <= w0:
                    continue
                window = values[image_of[r], :, h0:h1, w0:w1].reshape(channels, -1)
                best = window.argmax(axis=1)
                flat[r, :, ph, pw, 0] = channel_base[r] + (h0 + best // (w1 - w0)) * width + w0 + best % (w1 - w0)
                nonempty[r, :, ph, pw, 0] = 1.0
    return _weighted_gather(x, flat, nonempty)


def psroi_pool(x, boxes, boxes_num, output_size, spatial_scale=1.0, name=None):
    """Position-sensitive region of interest average pooling (R-FCN): bin ``(i, j)`` of output channel ``c``
    averages input channel ``(c * ph + i) * pw + j`` over the bin; ``x`` has ``C_out * ph * pw`` channels
    (Paddle's ``psroi_pool``). Differentiable in ``x``.

    >>> import oar
    >>> x = oar.ones([1, 4, 4, 4])
    >>> psroi_pool(x, oar.to_tensor([[0.0, 0.0, 3.0, 3.0]]), oar.to_tensor([1]), output_size=2).shape
    [1, 1, 2, 2]
    """
    fn = "psroi_pool"
    box_values, image_of, (pooled_h, pooled_w) = _roi_inputs(x, boxes, boxes_num, output_size, fn)
    batch, channels, height, width = x.shape
    if channels % (pooled_h * pooled_w):
        raise ShapeError(f"{fn}: the channels of x ({channels}) must be a multiple of output_size "
                         f"{pooled_h}x{pooled_w}, got shape {list(x.shape)}")
    out_channels = channels // (pooled_h * pooled_w)
    rounded = _round_half_away(box_values)
    start_w, start_h = rounded[:, 0] * spatial_scale, rounded[:, 1] * spatial_scale
    end_w, end_h = (rounded[:, 2] + 1.0) * spatial_scale, (rounded[:, 3] + 1.0) * spatial_scale
    bin_h = np.maximum(end_h - start_h, 0.1) / pooled_h
    bin_w = np.maximum(end_w - start_w, 0.1) / pooled_w
    bins = []  # per roi and bin: the pixel indices it averages
    for r in range(len(box_values)):
        for ph in range(pooled_h):
            h0 = min(max(math.floor(bin_h[r] * ph + start_h[r]), 0), height)
            h1 = min(max(math.ceil(bin_h[r] * (ph + 1) + start_h[r]), 0), height)
            for pw in range(pooled_w):
                w0 = min(max(math.floor(bin_w[r] * pw + start_w[r]), 0), width)
                w1 = min(max(math.ceil(bin_w[r] * (pw + 1) + start_w[r]), 0), width)
                bins.append((np.arange(h0, h1)[:, None] * width + np.arange(w0, w1)).reshape(-1))
    samples = max(max(len(b) for b in bins), 1) if bins else 1
    pixel = np.zeros((len(box_values), 1, pooled_h * pooled_w, samples), dtype=np.int64)
    weight = np.zeros(pixel.shape)
    for k, b in enumerate(bins):
        r, p = divmod(k, pooled_h * pooled_w)
        pixel[r, 0, p, :len(b)] = b
        weight[r, 0, p, :len(b)] = 1.0 / len(b) if len(b) else 0.0
    in_channel = np.arange(out_channels)[:, None] * pooled_h * pooled_w + np.arange(pooled_h * pooled_w)  # [C_out, P]
    flat = ((image_of[:, None, None, None] * channels + in_channel[None, :, :, None]) * height * width + pixel)
    out = _weighted_gather(x, flat, np.broadcast_to(weight, flat.shape))
    return oar.reshape(out, [len(box_values), out_channels, pooled_h, pooled_w])


class _RoILayer(nn.Layer):
    """A layer over one of the RoI functions: its output size and spatial scale, fixed."""

    def __init__(self, output_size, spatial_scale=1.0):
        super().__init__()
        self._output_size = output_size
        self._spatial_scale = spatial_scale

    def extra_repr(self):
        return f"output_size={self._output_size}, spatial_scale={self._spatial_scale}"


class RoIAlign(_RoILayer):
    """:func:`roi_align` as a layer (Paddle's ``RoIAlign``); ``forward(x, boxes, boxes_num, aligned=True)``."""

    def forward(self, x, boxes, boxes_num, aligned=True):
        return roi_align(x, boxes, boxes_num, self._output_size, self._spatial_scale, aligned=aligned)


class RoIPool(_RoILayer):
    """:func:`roi_pool` as a layer (Paddle's ``RoIPool``); ``forward(x, boxes, boxes_num)``."""

    def forward(self, x, boxes, boxes_num):
        return roi_pool(x, boxes, boxes_num, self._output_size, self._spatial_scale)


class PSRoIPool(_RoILayer):
    """:func:`psroi_pool` as a layer (Paddle's ``PSRoIPool``); ``forward(x, boxes, boxes_num)``."""

    def forward(self, x, boxes, boxes_num):
        return psroi_pool(x, boxes, boxes_num, self._output_size, self._spatial_scale)


# ---------------------------------------------------------------- deform_conv2d

def deform_conv2d(x, offset, weight, bias=None, stride=1, padding=0, dilation=1, deformable_groups=1, groups=1,
                  mask=None, name=None):
    """Deformable convolution: v1 (Dai et al. 2017) without ``mask``, v2 (Zhu et al. 2018) with it
    (Paddle's ``deform_conv2d``). Kernel tap ``k = i * kw + j`` of deformable group ``g`` reads the input
    at its regular position plus ``(offset[:, 2 * (g * kh * kw + k)], offset[:, 2 * (g * kh * kw + k) + 1])``
    (dy, dx) by bilinear interpolation (zero outside), times ``mask[:, g * kh * kw + k]``; the samples are
    then multiplied by ``weight`` ``[C_out, C_in / groups, kh, kw]`` as a convolution. Composed from oar
    ops: gradients reach ``x``, ``offset``, ``mask``, ``weight`` and ``bias``.

    >>> import oar
    >>> x = oar.arange(16, dtype="float32").reshape([1, 1, 4, 4])
    >>> offset = oar.full([1, 2, 4, 4], 0.5)  # a 1x1 kernel reading half a pixel down and right
    >>> deform_conv2d(x, offset, oar.ones([1, 1, 1, 1]))[0, 0, 0].tolist()
    [2.5, 3.5, 4.5, 2.5]
    """
    fn = "deform_conv2d"
    for tensor, label in ((x, "x"), (offset, "offset"), (weight, "weight")):
        _check_rank(tensor, 4, fn, label)
    batch, in_channels, height, width = x.shape
    out_channels, group_in, kernel_h, kernel_w = weight.shape
    stride_h, stride_w = _pair(stride, fn, "stride")
    pad_h, pad_w = _pair(padding, fn, "padding")
    dil_h, dil_w = _pair(dilation, fn, "dilation")
    taps = kernel_h * kernel_w
    if in_channels != group_in * groups or out_channels % groups or in_channels % deformable_groups:
        raise ShapeError(f"{fn}: x {list(x.shape)} and weight {list(weight.shape)} do not fit groups={groups}, "
                         f"deformable_groups={deformable_groups}")
    out_h = (height + 2 * pad_h - (dil_h * (kernel_h - 1) + 1)) // stride_h + 1
    out_w = (width + 2 * pad_w - (dil_w * (kernel_w - 1) + 1)) // stride_w + 1
    if list(offset.shape) != [batch, 2 * deformable_groups * taps, out_h, out_w]:
        raise ShapeError(f"{fn}: offset must be {[batch, 2 * deformable_groups * taps, out_h, out_w]}, "
                         f"got {list(offset.shape)}")
    if mask is not None and list(mask.shape) != [batch, deformable_groups * taps, out_h, out_w]:
        raise ShapeError(f"{fn}: mask must be {[batch, deformable_groups * taps, out_h, out_w]}, "
                         f"got {list(mask.shape)}")
    positions = out_h * out_w
    offsets = oar.reshape(offset, [batch, deformable_groups, taps, 2, positions])
    tap_y = (np.arange(kernel_h) * dil_h).repeat(kernel_w)[:, None]  # [taps, 1]
    tap_x = np.tile(np.arange(kernel_w) * dil_w, kernel_h)[:, None]
    out_y = (np.arange(out_h) * stride_h - pad_h).repeat(out_w)[None]  # [1, positions]
    out_x = np.tile(np.arange(out_w) * stride_w - pad_w, out_h)[None]
    y = offsets[:, :, :, 0] + oar.to_tensor(tap_y + out_y, dtype=x.dtype)  # [N, dg, taps, positions]
    x_pos = offsets[:, :, :, 1] + oar.to_tensor(tap_x + out_x, dtype=x.dtype)
    y_values, x_values = y.numpy(), x_pos.numpy()
    inside = (y_values > -1) & (y_values < height) & (x_values > -1) & (x_values < width)
    y_low, x_low = np.floor(y_values), np.floor(x_values)
    frac_y = y - oar.to_tensor(y_low, dtype=x.dtype)  # the bilinear weights stay oar ops of the offset: its gradient
    frac_x = x_pos - oar.to_tensor(x_low, dtype=x.dtype)
    y_low, x_low = y_low.astype(np.int64), x_low.astype(np.int64)
    per_group = in_channels // deformable_groups
    image = oar.reshape(x, [batch, deformable_groups, per_group, height * width])
    sampled = None
    for dy, weight_y in ((0, 1.0 - frac_y), (1, frac_y)):
        for dx, weight_x in ((0, 1.0 - frac_x), (1, frac_x)):
            row, col = y_low + dy, x_low + dx
            valid = inside & (row >= 0) & (row < height) & (col >= 0) & (col < width)
            index = np.clip(row, 0, height - 1) * width + np.clip(col, 0, width - 1)
            index = np.broadcast_to(index.reshape(batch, deformable_groups, 1, taps * positions),
                                    (batch, deformable_groups, per_group, taps * positions))
            corner = oar.take_along_axis(image, oar.to_tensor(np.ascontiguousarray(index)), axis=3)
            scale = weight_y * weight_x * oar.to_tensor(valid, dtype=x.dtype)
            term = corner * oar.reshape(scale, [batch, deformable_groups, 1, taps * positions])
            sampled = term if sampled is None else sampled + term
    if mask is not None:
        sampled = sampled * oar.reshape(mask, [batch, deformable_groups, 1, taps * positions])
    columns = oar.reshape(sampled, [batch, groups, group_in * taps, positions])
    kernel = oar.reshape(weight, [1, groups, out_channels // groups, group_in * taps])
    out = oar.reshape(oar.matmul(kernel, columns), [batch, out_channels, out_h, out_w])
    if bias is not None:
        out = out + oar.reshape(bias, [1, out_channels, 1, 1])
    return out


class DeformConv2D(nn.Layer):
    """:func:`deform_conv2d` with its weight ``[out_channels, in_channels / groups, kh, kw]`` (initialized
    ``Normal(0, sqrt(2 / (in_channels * kh * kw)))`` as Paddle's) and bias; ``forward(x, offset, mask=None)``.

    >>> import oar
    >>> layer = DeformConv2D(2, 4, kernel_size=3, padding=1)
    >>> layer(oar.rand([1, 2, 5, 5]), oar.zeros([1, 18, 5, 5])).shape
    [1, 4, 5, 5]
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, deformable_groups=1,
                 groups=1, weight_attr=None, bias_attr=None):
        super().__init__()
        fn = "DeformConv2D"
        if weight_attr is False:
            raise ArgumentError(f"{fn}: weight_attr must not be False (a convolution needs its weight)")
        if in_channels % groups:
            raise ArgumentError(f"{fn}: in_channels ({in_channels}) must be divisible by groups ({groups})")
        self._in_channels, self._out_channels = in_channels, out_channels
        self._kernel_size = _pair(kernel_size, fn, "kernel_size")
        self._stride = _pair(stride, fn, "stride")
        self._padding = _pair(padding, fn, "padding")
        self._dilation = _pair(dilation, fn, "dilation")
        self._deformable_groups, self._groups = deformable_groups, groups
        std = math.sqrt(2.0 / (in_channels * math.prod(self._kernel_size)))
        self.weight = self.create_parameter([out_channels, in_channels // groups, *self._kernel_size],
                                            attr=weight_attr, default_initializer=Normal(0.0, std))
        self.bias = self.create_parameter([out_channels], attr=bias_attr, is_bias=True)

    def forward(self, x, offset, mask=None):
        return deform_conv2d(x, offset, self.weight, self.bias, self._stride, self._padding, self._dilation,
                             self._deformable_groups, self._groups, mask=mask)


# ---------------------------------------------------------------- read_file, decode_jpeg

def read_file(filename, name=None):
    """The bytes of a file as a 1-D uint8 tensor (Paddle's ``read_file``).

    >>> import oar, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "bytes.bin")
    >>> _ = open(path, "wb").write(bytes([1, 2, 255]))
    >>> read_file(path).tolist()
    [1, 2, 255]
    """
    path = Path(filename)
    if not path.is_file():
        raise ArgumentError(f"read_file: filename {str(filename)!r} is not a file")
    return oar.to_tensor(np.frombuffer(path.read_bytes(), dtype=np.uint8).copy())


def decode_jpeg(x, mode="unchanged", name=None):
    """Decode the JPEG bytes ``x`` (a 1-D uint8 tensor, e.g. from :func:`read_file`) into a ``[C, H, W]``
    uint8 image (Paddle's ``decode_jpeg``); ``mode`` is ``'unchanged'``, ``'gray'`` or ``'rgb'``.
    Decoded with Pillow, whose decoder may differ from Paddle's nvJPEG by a unit in a few pixels.

    >>> import io, numpy as np, oar
    >>> from PIL import Image
    >>> buffer = io.BytesIO()
    >>> Image.fromarray(np.zeros((4, 6, 3), dtype=np.uint8)).save(buffer, format="JPEG")
    >>> decode_jpeg(oar.to_tensor(np.frombuffer(buffer.getvalue(), dtype=np.uint8))).shape
    [3, 4, 6]
    """
    import io

    from PIL import Image  # Pillow is optional for oar-nn: needed only to decode

    modes = {"unchanged": None, "gray": "L", "rgb": "RGB"}
    if mode not in modes:
        raise ArgumentError(f"decode_jpeg: mode must be one of {sorted(modes)}, got {mode!r}")
    data = _numpy(x, "decode_jpeg", "x")
    if data.dtype != np.uint8 or data.ndim != 1:
        raise ArgumentError(f"decode_jpeg: x must be a 1-D uint8 tensor of JPEG bytes, got {data.dtype} "
                            f"shape {list(data.shape)}")
    image = Image.open(io.BytesIO(data.tobytes()))
    if modes[mode] is not None:
        image = image.convert(modes[mode])
    pixels = np.asarray(image, dtype=np.uint8)
    pixels = pixels[None] if pixels.ndim == 2 else pixels.transpose(2, 0, 1)
    return oar.to_tensor(np.ascontiguousarray(pixels))


# ---------------------------------------------------------------- matrix_nms, proposals

def _matrix_nms_class(boxes, scores, score_threshold, post_threshold, nms_top_k, use_gaussian, gaussian_sigma,
                      normalized):
    """Matrix NMS (SOLOv2) of one class: the kept box indices and their decayed scores."""
    candidates = np.flatnonzero(scores > score_threshold)
    order = candidates[_descending(scores[candidates])]
    if nms_top_k > -1:
        order = order[:nms_top_k]
    if len(order) == 0:
        return order, scores[order]
    iou = np.tril(_iou_matrix(boxes[order], 0.0 if normalized else 1.0), k=-1)  # iou[i, j]: j scored higher
    max_iou = iou.max(axis=1)  # how much each box is itself suppressed
    if use_gaussian:
        decay = np.exp((max_iou[None, :] ** 2 - iou ** 2) * gaussian_sigma)
    else:
        decay = (1.0 - iou) / (1.0 - max_iou[None, :])
    lower = np.tril(np.ones_like(iou, dtype=bool), k=-1)
    decayed = np.where(lower, decay, 1.0).min(axis=1) * scores[order]
    decayed[0] = scores[order[0]]
    kept = decayed > post_threshold
    return order[kept], decayed[kept]


def matrix_nms(bboxes, scores, score_threshold, post_threshold, nms_top_k, keep_top_k, use_gaussian=False,
               gaussian_sigma=2.0, background_label=0, normalized=True, return_index=False, return_rois_num=True,
               name=None):
    """Matrix NMS (SOLOv2): instead of removing overlapping boxes, decay each box's score by its overlap
    with higher-scored boxes of its class (Paddle's ``matrix_nms``). ``bboxes`` ``[N, M, 4]``, ``scores``
    ``[N, C, M]``. Returns ``(out, rois_num, index)``: ``out`` ``[K, 6]`` rows ``(label, score, x1, y1, x2, y2)``
    per image sorted by decayed score, ``rois_num`` ``[N]`` (None unless ``return_rois_num``), ``index``
    ``[K, 1]`` into the flattened ``[N * M]`` boxes (None unless ``return_index``).

    >>> import oar
    >>> boxes = oar.to_tensor([[[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.5]]])
    >>> scores = oar.to_tensor([[[0.0, 0.0], [0.9, 0.8]]])
    >>> out, rois_num, _ = matrix_nms(boxes, scores, 0.1, 0.1, nms_top_k=-1, keep_top_k=-1)
    >>> out[:, :2].tolist(), rois_num.tolist()
    ([[1.0, 0.8999999761581421], [1.0, 0.4000000059604645]], [2])
    """
    fn = "matrix_nms"
    box_values = _numpy(bboxes, fn, "bboxes")
    score_values = _numpy(scores, fn, "scores")
    if box_values.ndim != 3 or box_values.shape[2] != 4 or score_values.ndim != 3 \
            or score_values.shape[0] != box_values.shape[0] or score_values.shape[2] != box_values.shape[1]:
        raise ShapeError(f"{fn}: bboxes must be [N, M, 4] and scores [N, C, M], got {list(box_values.shape)} "
                         f"and {list(score_values.shape)}")
    rows, indices, counts = [], [], []
    for image in range(box_values.shape[0]):
        labels, kept_scores, kept_boxes = [], [], []
        for label in range(score_values.shape[1]):
            if label == background_label:
                continue
            kept, decayed = _matrix_nms_class(box_values[image], score_values[image, label], score_threshold,
                                              post_threshold, nms_top_k, use_gaussian, gaussian_sigma, normalized)
            labels += [label] * len(kept)
            kept_scores.append(decayed)
            kept_boxes.append(kept)
        decayed = np.concatenate(kept_scores) if kept_scores else np.zeros(0)
        kept = np.concatenate(kept_boxes).astype(np.int64) if kept_boxes else np.zeros(0, np.int64)
        order = _descending(decayed)
        if keep_top_k > -1:
            order = order[:keep_top_k]
        labels = np.asarray(labels, dtype=np.float64)
        rows.append(np.column_stack([labels[order], decayed[order], box_values[image][kept[order]]]))
        indices.append(image * box_values.shape[1] + kept[order])
        counts.append(len(order))
    out = oar.to_tensor(np.concatenate(rows).reshape(-1, 6).astype(box_values.dtype))
    index = oar.to_tensor(np.concatenate(indices).reshape(-1, 1).astype(np.int32)) if return_index else None
    rois_num = oar.to_tensor(np.asarray(counts, dtype=np.int32)) if return_rois_num else None
    return out, rois_num, index


def distribute_fpn_proposals(fpn_rois, min_level, max_level, refer_level, refer_scale, pixel_offset=False,
                             rois_num=None, name=None):
    """Assign each RoI to a feature-pyramid level by its size, ``floor(refer_level + log2(sqrt(area) /
    refer_scale))`` clipped to ``[min_level, max_level]`` (Paddle's ``distribute_fpn_proposals``). Returns
    ``(multi_rois, restore_ind, rois_num_per_level)``: the RoIs of each level (in their order),
    ``restore_ind`` ``[R, 1]`` the position of each RoI in their concatenation, and the per-image counts
    of each level when ``rois_num`` is given (else None).

    >>> import oar
    >>> rois = oar.to_tensor([[0.0, 0.0, 500.0, 500.0], [0.0, 0.0, 10.0, 10.0]])
    >>> multi, restore, _ = distribute_fpn_proposals(rois, 2, 5, 4, 224)
    >>> [m.shape[0] for m in multi], restore.reshape([-1]).tolist()
    ([1, 0, 0, 1], [1, 0])
    """
    fn = "distribute_fpn_proposals"
    rois = _numpy(fpn_rois, fn, "fpn_rois")
    if rois.ndim != 2 or rois.shape[1] != 4:
        raise ShapeError(f"{fn}: fpn_rois must be [R, 4], got shape {list(rois.shape)}")
    one = 1.0 if pixel_offset else 0.0
    widths, heights = rois[:, 2] - rois[:, 0], rois[:, 3] - rois[:, 1]
    area = np.where((widths < 0) | (heights < 0), 0.0, (widths + one) * (heights + one))
    with np.errstate(divide="ignore"):
        level = np.floor(np.log2(np.sqrt(area) / refer_scale + 1e-8) + refer_level)
    level = np.clip(level, min_level, max_level).astype(np.int64)
    levels = range(min_level, max_level + 1)
    order = np.concatenate([np.flatnonzero(level == lvl) for lvl in levels])
    restore = np.empty(len(rois), dtype=np.int32)
    restore[order] = np.arange(len(rois))
    multi_rois = [oar.to_tensor(rois[level == lvl]) for lvl in levels]
    per_level = None
    if rois_num is not None:
        image_of = np.repeat(np.arange(len(_numpy(rois_num, fn, "rois_num").reshape(-1))),
                             _numpy(rois_num, fn, "rois_num").reshape(-1).astype(np.int64))
        per_level = [oar.to_tensor(np.bincount(image_of[level == lvl], minlength=len(np.unique(image_of)))
                                   .astype(np.int32)) for lvl in levels]
    return multi_rois, oar.to_tensor(restore.reshape(-1, 1)), per_level


def _nms_adaptive(boxes: np.ndarray, threshold: float, eta: float, pixel_offset: float) -> np.ndarray:
    """Greedy NMS over boxes sorted by score whose threshold shrinks by ``eta`` after each kept box
    while above 0.5 (Paddle's proposal NMS)."""
    iou = _iou_matrix(boxes, pixel_offset)
    kept: list[int] = []
    for i in range(len(boxes)):
        if all(iou[i, j] <= threshold for j in kept):
            kept.append(i)
            if eta < 1 and threshold > 0.5:
                threshold *= eta
    return np.asarray(kept, dtype=np.int64)


def generate_proposals(scores, bbox_deltas, img_size, anchors, variances, pre_nms_top_n=6000, post_nms_top_n=1000,
                       nms_thresh=0.5, min_size=0.1, eta=1.0, pixel_offset=False, return_rois_num=False, name=None):
    """Region proposals of a Faster R-CNN RPN (Paddle's ``generate_proposals``): per image, the
    ``pre_nms_top_n`` best-scored anchors are decoded with ``bbox_deltas`` and ``variances``, clipped to
    ``img_size`` (height, width), boxes smaller than ``min_size`` dropped, then NMS keeps at most
    ``post_nms_top_n``. ``scores`` ``[N, A, H, W]``, ``bbox_deltas`` ``[N, 4A, H, W]``, ``anchors`` and
    ``variances`` ``[H, W, A, 4]``. Returns ``(rpn_rois [K, 4], rpn_roi_probs [K, 1], rpn_rois_num [N] or None)``.

    >>> import oar
    >>> anchors = oar.to_tensor([[[[0.0, 0.0, 7.0, 7.0]]]])
    >>> rois, probs, num = generate_proposals(oar.ones([1, 1, 1, 1]), oar.zeros([1, 4, 1, 1]),
    ...     oar.to_tensor([[16.0, 16.0]]), anchors, oar.ones([1, 1, 1, 4]), return_rois_num=True)
    >>> rois.tolist(), probs.tolist(), num.tolist()
    ([[0.0, 0.0, 7.0, 7.0]], [[1.0]], [1])
    """
    fn = "generate_proposals"
    score_values = _numpy(scores, fn, "scores")
    delta_values = _numpy(bbox_deltas, fn, "bbox_deltas")
    sizes = _numpy(img_size, fn, "img_size")
    anchor_values = _numpy(anchors, fn, "anchors").reshape(-1, 4)
    variance_values = _numpy(variances, fn, "variances").reshape(-1, 4)
    batch, num_anchors, height, width = score_values.shape
    if delta_values.shape != (batch, 4 * num_anchors, height, width) or len(anchor_values) != num_anchors * height * width:
        raise ShapeError(f"{fn}: scores {list(score_values.shape)}, bbox_deltas {list(delta_values.shape)} and "
                         f"anchors {list(_numpy(anchors, fn, 'anchors').shape)} do not match ([N, A, H, W], "
                         f"[N, 4A, H, W], [H, W, A, 4])")
    one = 1.0 if pixel_offset else 0.0
    dtype = score_values.dtype
    all_rois, all_probs, counts = [], [], []
    for image in range(batch):
        image_scores = score_values[image].transpose(1, 2, 0).reshape(-1)
        deltas = delta_values[image].transpose(1, 2, 0).reshape(-1, 4)
        order = _descending(image_scores)
        if 0 < pre_nms_top_n < len(order):
            order = order[:pre_nms_top_n]
        anchor, variance, delta = anchor_values[order], variance_values[order], deltas[order]
        anchor_w = anchor[:, 2] - anchor[:, 0] + one
        anchor_h = anchor[:, 3] - anchor[:, 1] + one
        center_x = variance[:, 0] * delta[:, 0] * anchor_w + anchor[:, 0] + 0.5 * anchor_w
        center_y = variance[:, 1] * delta[:, 1] * anchor_h + anchor[:, 1] + 0.5 * anchor_h
        box_clip = np.log(1000.0 / 16.0)  # Paddle's cap on the size deltas
        box_w = np.exp(np.minimum(variance[:, 2] * delta[:, 2], box_clip)) * anchor_w
        box_h = np.exp(np.minimum(variance[:, 3] * delta[:, 3], box_clip)) * anchor_h
        proposals = np.stack([center_x - box_w / 2, center_y - box_h / 2, center_x + box_w / 2 - one,
                              center_y + box_h / 2 - one], axis=1)
        image_h, image_w = float(sizes[image, 0]), float(sizes[image, 1])
        proposals[:, 0::2] = np.clip(proposals[:, 0::2], 0, image_w - one)
        proposals[:, 1::2] = np.clip(proposals[:, 1::2], 0, image_h - one)
        widths = proposals[:, 2] - proposals[:, 0] + one
        heights = proposals[:, 3] - proposals[:, 1] + one
        smallest = max(min_size, 1.0)
        keep = (widths >= smallest) & (heights >= smallest)
        if pixel_offset:
            keep &= (proposals[:, 0] + widths / 2 <= image_w) & (proposals[:, 1] + heights / 2 <= image_h)
        keep = np.flatnonzero(keep)
        if len(keep) == 0:  # Paddle's kernel then returns a single zero box with score 0
            all_rois.append(np.zeros((1, 4)))
            all_probs.append(np.zeros(1))
            counts.append(1)
            continue
        proposals, kept_scores = proposals[keep], image_scores[order][keep]
        if nms_thresh > 0:
            chosen = _nms_adaptive(proposals, nms_thresh, eta, one)
            if 0 < post_nms_top_n < len(chosen):
                chosen = chosen[:post_nms_top_n]
            proposals, kept_scores = proposals[chosen], kept_scores[chosen]
        all_rois.append(proposals)
        all_probs.append(kept_scores)
        counts.append(len(proposals))
    rois = oar.to_tensor(np.concatenate(all_rois).reshape(-1, 4).astype(dtype))
    probs = oar.to_tensor(np.concatenate(all_probs).reshape(-1, 1).astype(dtype))
    rois_num = oar.to_tensor(np.asarray(counts, dtype=np.int32)) if return_rois_num else None
    return rois, probs, rois_num

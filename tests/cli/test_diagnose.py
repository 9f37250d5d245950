"""relulab diagnose: any model by factory, data from a file or Gaussian, clear errors."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from relulab import cli


def test_diagnose_compares_inits_and_writes_a_report(tmp_path, capsys):
    out = tmp_path / "diag"
    args = [
        "diagnose",
        "relulab.nn.examples:small_cnn",
        "--samples",
        "16",
        "--input-shape",
        "3,16,16",
        "--compare-inits",
        "default,kaiming_normal,scale_bias",
        "--out",
        str(out),
    ]
    assert cli.main(args) == 0
    frame = pd.read_csv(out / "probe.csv")
    assert set(frame["init"]) == {"default", "kaiming_normal", "scale_bias"}
    assert frame["layer"].nunique() == 4  # the CNN's four ReLUs
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "dead_fraction" in html
    assert "dead_fraction" in capsys.readouterr().out


def test_diagnose_reads_npy_data(tmp_path):
    data = tmp_path / "x.npy"
    np.save(data, np.random.default_rng(0).standard_normal((40, 64)).astype(np.float32))
    out = tmp_path / "d"
    assert (
        cli.main(
            [
                "diagnose",
                "relulab.nn.examples:deep_mlp",
                "--data",
                str(data),
                "--init",
                "lsuv",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert (out / "probe.csv").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["relulab.nn.examples"], "module.path:factory"),
        (["no.such.module:make"], "cannot load"),
        (["relulab.nn.examples:nothing"], "cannot load"),
        (["relulab.nn.examples:deep_mlp", "--init", "he"], "unknown init"),
        (["relulab.nn.examples:deep_mlp", "--data", "missing.npy"], "no data file"),
        (["relulab.nn.examples:deep_mlp", "--input-shape", "3,x"], "comma-separated integers"),
        (["relulab.nn.examples:deep_mlp", "--input-shape", "7"], "could not run on data"),
    ],
)
def test_diagnose_bad_requests_exit_2_and_write_nothing(tmp_path, capsys, args, message):
    out = tmp_path / "never"
    assert cli.main(["diagnose", *args, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def _diagnose(out, *extra):
    return cli.main(
        ["diagnose", "relulab.nn.examples:deep_mlp", "--samples", "16", "--out", str(out), *extra]
    )


def test_diagnose_rewrites_its_own_report_but_never_another_directory(tmp_path, capsys):
    out = tmp_path / "diag"
    assert _diagnose(out) == 0
    assert (out / ".relulab-diagnose").is_file()
    assert _diagnose(out, "--init", "lsuv") == 0, "an earlier diagnose report may be replaced"
    run = tmp_path / "run"  # e.g. an experiment's run directory with its own report.html
    run.mkdir()
    (run / "report.html").write_text("the run's report")
    (run / "runs.sqlite").write_bytes(b"")
    capsys.readouterr()
    assert _diagnose(run) == 2
    assert "holds a relulab run, not a diagnose report" in capsys.readouterr().err
    assert (run / "report.html").read_text() == "the run's report"
    assert sorted(p.name for p in run.iterdir()) == ["report.html", "runs.sqlite"]


@pytest.mark.parametrize(
    ("array", "message"),
    [
        (np.array(["a", "b"]), "expected numbers"),
        (np.array(1.5), "single number"),
        (np.full((3, 64), np.nan), "NaN or infinite"),
        (np.zeros((0, 64)), "no samples"),
    ],
)
def test_diagnose_refuses_unusable_arrays_in_one_line(tmp_path, capsys, array, message):
    data = tmp_path / "x.npy"
    np.save(data, array)
    assert _diagnose(tmp_path / "d", "--data", str(data)) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "d").exists()


PACKAGE = '''
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    """Bias-free convolutions with BatchNorm, one in-place ReLU called twice."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(4)
        self.relu = nn.ReLU(inplace=True)
        self.head = nn.Linear(4, 8)

    def forward(self, x):
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.relu(self.bn2(self.conv2(x)))
        return F.gelu(self.head(x.mean(dim=(2, 3))))


def make_net():
    return Block()
'''


def test_diagnose_imports_from_the_current_directory_and_skips_inits_that_cannot_apply(
    tmp_path, monkeypatch, capsys
):
    import sys

    (tmp_path / "r10pkg").mkdir()
    (tmp_path / "r10pkg" / "__init__.py").write_text("")
    (tmp_path / "r10pkg" / "models.py").write_text(PACKAGE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    path_before = list(sys.path)
    args = ["diagnose", "r10pkg.models:make_net", "--samples", "8", "--input-shape", "3,6,6"]
    try:
        _diagnose_the_package(tmp_path, capsys, args, path_before)
    finally:
        for name in [name for name in sys.modules if name.startswith("r10pkg")]:
            del sys.modules[name]


def _diagnose_the_package(tmp_path, capsys, args, path_before):
    import sys

    assert cli.main([*args, "--compare-inits", "--out", "d"]) == 0
    out = capsys.readouterr().out
    assert "note: skipped init scale_bias" in out and "Conv2d" in out
    assert "probed in train mode" in out
    assert sys.path == path_before, "the current directory is on sys.path only while importing"
    frame = pd.read_csv(tmp_path / "d" / "probe.csv")
    assert "scale_bias" not in set(frame["init"]) and {"default", "lsuv"} <= set(frame["init"])
    assert set(frame["mode"]) == {"train"}
    assert list(frame["name"].unique()) == ["relu#0", "relu#1", ":gelu#0"]
    html = (tmp_path / "d" / "report.html").read_text()
    assert "Skipped scale_bias" in html and "probed in train mode" in html
    assert "never_positive_fraction" in html, "the GELU call gets sign states, not dead units"
    assert cli.main([*args, "--init", "rai", "--out", "e"]) == 2
    assert "no init applies" in capsys.readouterr().err
    # issue 46: the bias-free ResNet-style block gets the inits that set biases, as asked
    inits = ["--compare-inits", "rai,raai,scale_bias", "--format", "csv"]
    assert cli.main([*args, *inits, "--bias-free", "scale", "--out", "f"]) == 0
    assert set(pd.read_csv(tmp_path / "f" / "probe.csv")["init"]) == {"rai", "raai", "scale_bias"}
    err = capsys.readouterr().err
    assert "note: bias-free layers (init: layers) rai 2, raai 2, scale_bias 2" in err
    assert "--bias-free scale" in err and "skipped" not in err
    assert cli.main([*args, "--init", "rai", "--bias-free", "add", "--out", "g"]) == 0
    assert cli.main([*args, "--mode", "eval", "--out", "d"]) == 0
    assert set(pd.read_csv(tmp_path / "d" / "probe.csv")["mode"]) == {"eval"}


def test_a_missing_package_names_the_directory_searched(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["diagnose", "mypkg.models:make_net", "--out", "d"]) == 2
    err = capsys.readouterr().err
    assert "No module named 'mypkg'" in err and str(tmp_path) in err and err.count("\n") == 1


def test_the_default_report_directory_is_runs_diagnose_model(tmp_path, monkeypatch, capsys):
    """Like ``relulab run``: runs/diagnose-<model> (rewritten by a later diagnose: see above),
    never a foreign directory; nothing else is written in the current directory."""
    monkeypatch.chdir(tmp_path)
    foreign = Path("runs/diagnose-relulab.nn.examples-small_cnn")
    (tmp_path / foreign).mkdir(parents=True)
    (tmp_path / foreign / "notes.txt").write_text("mine")
    assert cli.main(["diagnose", "relulab.nn.examples:small_cnn"]) == 2
    assert f"--out {foreign} is not empty" in capsys.readouterr().err
    assert cli.main(["diagnose", "relulab.nn.examples:deep_mlp", "--samples", "16"]) == 0
    out = tmp_path / "runs" / "diagnose-relulab.nn.examples-deep_mlp"
    assert (out / "report.html").is_file() and (out / "probe.csv").is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["runs"]
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [out.name, foreign.name]


TOKEN_MODEL = """
import torch
from torch import nn


class TokenNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.fc = nn.Embedding(30, 8), nn.Linear(8, 12)
        self.act = Squash()

    def forward(self, input_ids, attention_mask=None):
        return self.act(self.fc(self.embed(input_ids))).mean(dim=1)


class Squash(nn.Module):
    def forward(self, x):
        return x / (1 + x.abs())


def make():
    torch.manual_seed(0)
    return TokenNet()
"""


@pytest.fixture
def token_model(tmp_path, monkeypatch):
    import sys

    (tmp_path / "r34tokens.py").write_text(TOKEN_MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    yield tmp_path
    sys.modules.pop("r34tokens", None)


def test_token_ids_stay_integers_from_npz_and_pt_files(token_model, capsys):
    import torch

    ids = np.random.default_rng(0).integers(0, 30, (12, 7))
    np.savez(token_model / "ids.npz", input_ids=ids.astype(np.int32), attention_mask=ids > 3)
    torch.save({"input_ids": torch.from_numpy(ids)}, token_model / "ids.pt")
    np.save(token_model / "ids.npy", ids.astype(np.int16))
    common = ["diagnose", "r34tokens:make", "--activation-types", "r34tokens:Squash"]
    for name in ("ids.npz", "ids.pt", "ids.npy"):
        out = token_model / name.replace(".", "-")
        assert cli.main([*common, "--data", name, "--batch-size", "5", "--out", str(out)]) == 0
        frame = pd.read_csv(out / "probe.csv")
        assert set(frame["name"]) == {"act#0"} and set(frame["units"]) == {12}
        assert set(frame["unit_axis_rule"]) == {"producer"}
    axis = cli.main([*common, "--data", "ids.pt", "--unit-axis", "1", "--out", "axis"])
    assert axis == 0 and set(pd.read_csv(token_model / "axis" / "probe.csv")["units"]) == {7}
    capsys.readouterr()
    assert cli.main(["diagnose", "r34tokens:make", "--data", "ids.pt", "--out", "none"]) == 2
    assert "no ReLU-family or smooth activation" in capsys.readouterr().err
    assert cli.main([*common[:2], "--activation-types", "r34tokens:nothing", "--out", "x"]) == 2
    assert "has no attribute 'nothing'" in capsys.readouterr().err


def test_mismatched_token_arrays_are_refused_in_one_line(token_model, capsys):
    np.savez(
        token_model / "bad.npz", input_ids=np.zeros((4, 7), int), attention_mask=np.ones((3, 7))
    )
    assert cli.main(["diagnose", "r34tokens:make", "--data", "bad.npz", "--out", "d"]) == 2
    err = capsys.readouterr().err
    assert "different numbers of samples (input_ids: 4, attention_mask: 3)" in err
    assert err.count("\n") == 1 and not (token_model / "d").exists()


# -- issue 35: advice, the format of the printed tables, progress lines, the report's flags ----
LONG_NAMES = '''
import torch
from torch import nn


class Net(nn.Module):
    """Three ReLU blocks whose call names share a long prefix (as a transformer's do)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.encoder_with_a_long_name = nn.ModuleList(
            nn.Sequential(nn.Linear(8, 8), nn.ReLU()) for _ in range(3)
        )
        nn.init.constant_(self.encoder_with_a_long_name[1][0].bias, -20.0)  # dead units

    def forward(self, x):
        for block in self.encoder_with_a_long_name:
            x = block(x)
        return x


def make():
    return Net()
'''
PROGRESS_LINE = r"relulab: diagnose r35names:make: .+, [\d.]+ s elapsed"


@pytest.fixture
def long_names(tmp_path, monkeypatch):
    import sys

    (tmp_path / "r35names.py").write_text(LONG_NAMES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    yield ["diagnose", "r35names:make", "--samples", "64", "--compare-inits", "default,lsuv"]
    sys.modules.pop("r35names", None)


def test_off_a_terminal_names_are_printed_in_full_with_the_advice(long_names, capsys):
    import re

    assert cli.main([*long_names, "--out", "d"]) == 0
    out, err = capsys.readouterr()
    assert "| 1 | encoder_with_a_long_name.1.1#0 | ReLU | 8 |" in out  # markdown, not truncated
    assert "## dead_fraction" in out and "## advice" in out
    assert "| default | dead units | encoder_with_a_long_name.1.1#0, " in out
    lines = err.splitlines()
    assert all(re.fullmatch(PROGRESS_LINE, line) for line in lines), err
    assert [line.split(": ")[2].split(",")[0].split(" (")[0] for line in lines] == [
        "model built",
        "data ready",
        "init default probed",
        "init lsuv probed",
        "report written to d/report.html",
    ]
    html = Path("d/report.html").read_text()
    assert 'id="advice"' in html and "seed 003" in html and 'id="figure-key"' in html
    assert 'title="encoder_with_a_long_name.2.1#0 (ReLU)"' in html


def test_format_csv_prints_one_row_per_init_and_call_and_quiet_silences_progress(
    long_names, capsys
):
    import io

    assert cli.main([*long_names, "--format", "csv", "--quiet", "--out", "d"]) == 0
    out, err = capsys.readouterr()
    frame = pd.read_csv(io.StringIO(out))
    assert len(frame) == 6 and list(frame["init"]) == ["default"] * 3 + ["lsuv"] * 3
    assert frame.loc[1, "name"] == "encoder_with_a_long_name.1.1#0"
    assert frame.loc[1, "dead_fraction"] == 1.0
    assert {"rank_at_sample_cap", "unit_states_by_batch_norm", "delta_relative"} <= set(frame)
    assert err.splitlines() == ["relulab: report: d/report.html"]


def test_format_table_folds_long_names_instead_of_cutting_them(long_names, capsys):
    assert cli.main([*long_names, "--format", "table", "--quiet", "--out", "d"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and "advice" in out


def test_batch_norm_before_the_activation_is_flagged_in_train_mode(tmp_path, monkeypatch, capsys):
    import sys

    (tmp_path / "r35bn").mkdir()
    (tmp_path / "r35bn" / "__init__.py").write_text("")
    (tmp_path / "r35bn" / "models.py").write_text(PACKAGE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    args = ["diagnose", "r35bn.models:make_net", "--samples", "8", "--input-shape", "3,6,6"]
    try:
        assert cli.main([*args, "--quiet", "--out", "d"]) == 0
        out = capsys.readouterr().out
        assert "take a BatchNorm's output in train mode (relu#0, relu#1)" in out
        assert "| 0 | relu#0 (ReLU) | 0 (BN) |" in out  # the dead fraction, marked
        html = (tmp_path / "d" / "report.html").read_text()
        assert '<span class="flag" title="the input is a train-mode BatchNorm' in html
        assert cli.main([*args, "--quiet", "--mode", "eval", "--out", "d"]) == 0
        assert "(BN)" not in capsys.readouterr().out  # eval: running statistics, no flag
    finally:
        for name in [name for name in sys.modules if name.startswith("r35bn")]:
            del sys.modules[name]


def test_progress_lines_wait_for_the_first_probe(capsys):
    from relulab.cli.diagnose import DiagnoseLines

    now = [0.0]
    lines = DiagnoseLines("m:f", 2, clock=lambda: now[0])
    lines.stage("model built")
    assert capsys.readouterr().err == "", "held: the model may still be refused"
    now[0] = 1.0
    lines.init_done("default", "probed")
    assert capsys.readouterr().err.splitlines() == [
        "relulab: diagnose m:f: model built, 0.0 s elapsed",
        "relulab: diagnose m:f: init default probed: 1/2 steps (50%), 1.0 s elapsed",
    ]
    slow = DiagnoseLines("m:f", 1, clock=lambda: now[0])
    now[0] = 40.0
    slow.stage("model built")  # a slow stage is reported at once
    assert capsys.readouterr().err == "relulab: diagnose m:f: model built, 39.0 s elapsed\n"


def test_a_note_that_holds_for_several_inits_is_given_once():
    """Issue 46: the sample-cap note was repeated once per init."""
    import torch

    from relulab.nn.examples import deep_mlp
    from relulab.probe.diagnose import diagnose

    inits = ["default", "kaiming_normal", "lecun_normal"]
    found = diagnose(lambda: deep_mlp(depth=2, width=64), torch.randn(8, 64), inits)
    capped = [note for note in found.notes if "sample cap" in note]
    assert len(capped) == 1 and capped[0].startswith("every init: the centred effective rank")


def test_bias_free_models_are_offered_rai_raai_and_scale_bias_or_told_how():
    import torch
    from torch import nn

    from relulab.probe.diagnose import diagnose

    def bias_free() -> nn.Module:  # Llama- or T5-style: no bias anywhere
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(8, 16, bias=False), nn.ReLU(), nn.Linear(16, 1, bias=False))

    x, inits = torch.randn(32, 8), ["default", "rai", "raai", "scale_bias"]
    refused = diagnose(bias_free, x, inits)
    assert refused.inits == ["default"] and set(refused.skipped) == {"rai", "raai", "scale_bias"}
    (note,) = [note for note in refused.notes if "bias" in note]
    assert "--bias-free add" in note and "--bias-free scale" in note
    for how in ("add", "scale"):
        found = diagnose(bias_free, x, inits, bias_free=how)
        assert found.inits == inits and not found.skipped
        (note,) = [note for note in found.notes if "bias-free" in note]
        assert note.startswith("bias-free layers (init: layers) rai 2, raai 2, scale_bias 2")

"""relulab diagnose: any model by factory, data from a file or Gaussian, clear errors."""

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
    assert "holds no relulab diagnose report" in capsys.readouterr().err
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

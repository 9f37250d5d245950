"""init-training (seed 002 §3.3, §5): end to end at a tiny size, the run contract's exit-2 paths
for data, a counter-example per kind of claim, and the two architectures."""

from __future__ import annotations

import json
import pickle

import numpy as np
import torch
from torch import nn

from relulab import cli
from relulab.experiments.init_training import PRESETS
from relulab.experiments.init_training.claims import (
    mlp_theory_ratio,
    ratio_claims,
    training_claims,
)
from relulab.nn import AllCNNC, UNet

TINY = [
    "--set=allcnn_width=0.03",
    "--set=unet_width=0.03",
    "--set=ratio_networks=3",
    "--set=ratio_images=6",
    "--set=ratio_batch=6",
    "--set=steps=2",
    "--set=record_every=1",
    "--set=sgd_lrs=0.001",
    "--set=adam_lrs=0.0001",
    "--set=optimisers=sgd",
    "--set=cifar_batch=4",
    "--set=init_batches=1",
    "--set=probe_images=4",
]


def test_tiny_run_end_to_end_and_resume(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["run", "init-training", "--quiet", "--threads", "1", "--out", str(out), *TINY]
    assert cli.main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    ids = [c["id"] for c in summary["claims"]]
    assert "allcnn-ratio-rises" in ids and "unet-ratio-peaks-near-12" in ids
    assert "scale-bias-faster-isbi2012-sgd" in ids and "ratios-converge-cifar10-sgd" in ids
    for claim in summary["claims"]:
        assert claim["source"].startswith("seed 002 §")
        assert "stand-in" in claim["scale"]
        assert claim["measured"] is None or np.isfinite(claim["measured"])
    for name in (
        "ratios_at_init.png",
        "training_loss.png",
        "training_ratios.png",
        "ratio_trajectories.png",
        "time_to_level.png",
        "report.html",
        "runs.sqlite",
    ):
        assert (out / name).exists()
    assert summary["units"]["train-cifar10-sgd-scale_bias"]["networks"] == 3
    # re-running resumes: every unit is already stored
    capsys.readouterr()
    assert cli.main(args) == 0


def _refused(tmp_path, capsys, *settings: str, preset: str = "quick") -> str:
    out = tmp_path / "refused"
    args = ["run", "init-training", "--preset", preset, "--quiet", "--out", str(out), *settings]
    assert cli.main(args) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert err.startswith("relulab: error:") and err.count("\n") == 1
    return err


def test_missing_data_dir_is_refused_before_anything_is_written(tmp_path, capsys):
    err = _refused(
        tmp_path, capsys, f"--set=data_dir={tmp_path / 'nowhere'}", "--set=tasks=cifar10"
    )
    assert "does not exist" in err


def test_malformed_cifar_batches_are_refused(tmp_path, capsys):
    batches = tmp_path / "data" / "cifar-10-batches-py"
    batches.mkdir(parents=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (batches / name).write_bytes(pickle.dumps({"data": "not pixels", "labels": [0]}))
    err = _refused(tmp_path, capsys, f"--set=data_dir={tmp_path / 'data'}", "--set=tasks=cifar10")
    assert "cifar10" in err


def test_missing_isbi_stack_is_refused(tmp_path, capsys):
    (tmp_path / "data").mkdir()
    err = _refused(tmp_path, capsys, f"--set=data_dir={tmp_path / 'data'}", "--set=tasks=isbi2012")
    assert "isbi" in err


def test_paper_preset_refuses_the_stand_in(tmp_path, capsys):
    err = _refused(tmp_path, capsys, preset="paper")
    assert "data_dir" in err


def test_presets():
    quick, paper = PRESETS["quick"], PRESETS["paper"]
    assert paper.allcnn_width == 1.0 and paper.unet_width == 1.0 and paper.real_data
    assert paper.sgd_lrs == (3e-4, 1e-3, 3e-3, 1e-2) and paper.adam_lrs == (3e-5, 1e-4, 3e-4, 1e-3)
    assert paper.n_seeds == 3 and paper.init_batches == 5 and paper.scale_eps == 1e-5
    assert paper.ratio_networks == 30 and quick.ratio_networks == 30
    assert not quick.real_data and quick.allcnn_width < 1


# ---------------------------------------------------------------------------------------------
# Counter-examples: each claim can fail.
# ---------------------------------------------------------------------------------------------
def _verdicts(claims) -> dict[str, str]:
    return {c.id: c.verdict for c in claims}


def _profiles(shape_cifar, shape_unet, rng) -> dict[str, np.ndarray]:
    noise = lambda n: 0.01 * rng.standard_normal((30, n))  # noqa: E731
    return {
        "cifar10": shape_cifar + noise(len(shape_cifar)),
        "isbi2012": shape_unet + noise(len(shape_unet)),
    }


def test_ratio_claims_hold_on_the_seeds_shapes_and_fail_on_counter_examples():
    config = PRESETS["quick"]
    rng = np.random.default_rng(0)
    mlp10, mlp23 = mlp_theory_ratio(10), mlp_theory_ratio(23)
    rising = mlp10 + 0.1 + np.linspace(0, 1, 10)  # rises everywhere, above the MLP at the end
    peaked = mlp23 + 0.5
    peaked[12:] = np.linspace(peaked[11] * 0.9, peaked[11] * 0.2, 11)  # peak at layer 12, falls
    good = _verdicts(ratio_claims(_profiles(rising, peaked, rng), config))
    assert set(good.values()) == {"holds"}, good

    falling = rising[::-1].copy()  # decreases: never rises, ends below the MLP value
    monotone = np.linspace(0.1, 1.0, 23)  # peak at the last layer, no fall, below the MLP
    bad = _verdicts(ratio_claims(_profiles(falling, monotone, rng), config))
    assert set(bad.values()) == {"fails"}, bad


def _summary(speed_scale, speed_bias, ratios_scale, ratios_bias) -> dict:
    def runs(speed, ratios):
        speed = np.asarray(speed, dtype=float)
        ratios = np.asarray(ratios, dtype=float)[None, :, None].repeat(3, axis=0)
        return {"lr": 1e-3, "speed": speed, "late": np.exp(speed), "ratios": ratios}

    return {
        "scale": runs(speed_scale, ratios_scale),
        "scale_bias": runs(speed_bias, ratios_bias),
        "batchnorm": runs(np.asarray(speed_bias) - 0.1, ratios_bias),
    }


def test_training_claims_hold_and_fail():
    config = PRESETS["quick"]
    faster = _summary([1.0, 1.1, 1.2], [0.5, 0.55, 0.6], [1.0, 2.0], [1.05, 2.1])
    good = _verdicts(training_claims(faster, config, "cifar10", "sgd"))
    assert set(good.values()) == {"holds"}, good

    slower = _summary([0.5, 0.55, 0.6], [1.0, 1.1, 1.2], [1.0, 2.0], [3.0, 0.5])
    bad = _verdicts(training_claims(slower, config, "cifar10", "sgd"))
    assert bad["scale-bias-faster-cifar10-sgd"] == "fails"
    assert bad["scale-bias-lower-late-cifar10-sgd"] == "fails"
    assert bad["ratios-converge-cifar10-sgd"] == "fails"

    diverged = _summary([np.inf, 1.0, 1.0], [0.5, 0.5, 0.6], [1.0], [1.0])
    assert (
        _verdicts(training_claims(diverged, config, "cifar10", "sgd"))[
            "scale-bias-faster-cifar10-sgd"
        ]
        == "fails"
    )  # a NaN measurement fails: no speed to compare


# ---------------------------------------------------------------------------------------------
# The architectures.
# ---------------------------------------------------------------------------------------------
def test_allcnn_c_layout():
    net = AllCNNC(width=0.25, batchnorm=True)
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    assert [c.out_channels for c in convs] == [24, 24, 24, 48, 48, 48, 48, 48, 10]
    assert [c.stride[0] for c in convs] == [1, 1, 2, 1, 1, 2, 1, 1, 1]
    assert all(c.padding == (0, 0) for c in convs)  # padding is by reflection, separately
    assert sum(isinstance(m, nn.ReflectionPad2d) for m in net.modules()) == 6
    assert sum(isinstance(m, nn.BatchNorm2d) for m in net.modules()) == 9
    assert net(torch.zeros(2, 3, 32, 32)).shape == (2, 10)


def test_unet_layout_preserves_sizes():
    net = UNet(width=1 / 32, batchnorm=True)
    convs = [m for m in net.modules() if isinstance(m, nn.Conv2d)]
    assert len(convs) == 23
    assert sum(isinstance(m, nn.MaxPool2d) for m in net.modules()) == 1  # applied 4 times
    assert sum(isinstance(m, nn.BatchNorm2d) for m in net.modules()) == 18
    assert all(c.padding == (0, 0) for c in convs)
    x = torch.randn(1, 1, 48, 48)
    assert net(x).shape == (1, 2, 48, 48)
    full = UNet()
    assert [c.out_channels for c in full.modules() if isinstance(c, nn.Conv2d)][:10] == [
        64,
        64,
        128,
        128,
        256,
        256,
        512,
        512,
        1024,
        1024,
    ]


def test_paper_preset_runs_on_real_format_files(tmp_path):
    """The paper path (real files, refuses stand-ins) at a tiny size; on the CPU, the same code
    a ``--device cuda`` run takes (the device only changes where tensors live)."""
    from test_images import write_cifar, write_isbi

    data = tmp_path / "data"
    write_cifar(data, n=4)
    write_isbi(data / "isbi2012", n=3, size=32)
    out = tmp_path / "paper"
    settings = [
        f"--set=data_dir={data}",
        "--set=allcnn_width=0.03",
        "--set=unet_width=0.03",
        "--set=ratio_networks=3",
        "--set=ratio_images=6",
        "--set=steps=1",
        "--set=record_every=1",
        "--set=optimisers=adam",
        "--set=adam_lrs=0.0001",
        "--set=inits=scale,scale_bias",
        "--set=cifar_batch=2",
        "--set=init_batches=1",
        "--set=probe_images=4",
    ]
    args = ["run", "init-training", "--preset", "paper", "--quiet", "--threads", "1"]
    assert cli.main([*args, "--device", "cpu", "--out", str(out), *settings]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert all("real data" in c["scale"] for c in summary["claims"])
    assert summary["units"]["ratios-isbi2012"]["networks"] == 3

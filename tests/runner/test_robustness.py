"""``relulab robustness``: declared alternatives of inferred settings, the readings they make,
the record that says which verdicts depend on which reading, the page, resume after ``kill -9``
and refusals that write nothing."""

import dataclasses
import json
import signal
import subprocess
import sys

import pytest

from relulab import cli
from relulab.config import (
    ConfigError,
    alternatives,
    apply_overrides,
    override_text,
    setting,
    undeclared_alternatives,
)
from relulab.experiments import REGISTRY, get_experiment
from relulab.faults import FAULT_ENV
from relulab.records import ClaimRecord
from relulab.records.robustness import classify
from relulab.records.sweep import SweepPointRecord, SweepRecord
from relulab.runner.robustness import (
    BASELINE,
    pair_variants,
    robustness_record,
    single_variants,
)

# Experiments whose inferred settings all declare alternatives or say why none is plausible
# (issue 32 declares the rest study by study).
DECLARED = (
    "anisotropy",
    "prepost-ln",
    "sample-variance",
    "single-neuron",
    "bias-after-relu",
    "init-training",
    "correlated-init",
    "early-linearization",
    "linearization-images",
)

TINY = [
    "--quiet",
    "--threads",
    "1",
    "--set=d=6",
    "--set=D=12",
    "--set=n_samples=40",
    "--set=slopes=5",
    "--set=spectrum_points=5",
]


def _presets():
    for name in REGISTRY:
        for preset, config in get_experiment(name).presets.items():
            yield name, preset, config


# --- declaring alternatives -------------------------------------------------------------------
def test_only_inferred_settings_have_alternatives():
    with pytest.raises(ValueError, match="only an inferred"):
        setting(1, "stated", alternatives=(2,))
    with pytest.raises(ValueError, match="not an alternative to itself"):
        setting(1, "inferred", alternatives=(1, 2))
    with pytest.raises(ValueError, match="not both"):
        setting(1, "inferred", alternatives=(2,), no_alternative="why")


@pytest.mark.parametrize(("name", "preset", "config"), list(_presets()), ids=lambda v: str(v)[:20])
def test_every_alternative_passes_the_configs_own_validation(name, preset, config):
    """Each declared alternative, written as ``--set`` text, parses back to itself and passes
    the config's field checks and ``validate()`` with every other field at the preset. A preset
    refused on this machine for a reason of its own (init-training's paper preset without the
    real data sets) must refuse each alternative for that same reason and no other."""
    check_alternatives_pass_validation(config)


def check_alternatives_pass_validation(config) -> None:
    try:
        apply_overrides(config, [])
        refused = None
    except ConfigError as error:
        refused = str(error)
    for field, values in alternatives(config).items():
        for value in values:
            if refused is not None:
                with pytest.raises(ConfigError) as error:
                    apply_overrides(config, [override_text(field, value)])
                assert str(error.value) == refused, (field, value)
                continue
            changed = apply_overrides(config, [override_text(field, value)])
            parsed = getattr(changed, field)
            assert parsed == (tuple(value) if isinstance(value, list) else value), (field, value)


@pytest.mark.parametrize("name", DECLARED)
def test_every_inferred_setting_declares_alternatives_or_says_why_not(name):
    for preset, config in get_experiment(name).presets.items():
        assert undeclared_alternatives(config) == [], preset


def test_override_text_reads_back_through_set():
    @dataclasses.dataclass(frozen=True)
    class C:
        levels: tuple[float, ...] = (0.0, 1.0)
        centre: bool = True
        eps: float = 0.1

    for key, value in (("levels", (-1.0, 1.0)), ("centre", False), ("eps", 1e-20)):
        assert getattr(apply_overrides(C(), [override_text(key, value)]), key) == value


# --- readings and the record ------------------------------------------------------------------
def test_readings_are_the_preset_then_one_alternative_at_a_time():
    variants = single_variants("anisotropy", "quick")
    assert variants[0].name == BASELINE and variants[0].overrides == ()
    declared = alternatives(get_experiment("anisotropy").presets["quick"])
    assert len(variants) == 1 + sum(len(v) for v in declared.values())
    assert all(len(v.fields) == 1 for v in variants[1:])
    pairs = pair_variants("anisotropy", "quick", ["init", "crossover_tolerance"])
    assert [v.name for v in pairs] == [
        "init=kaiming_normal,crossover_tolerance=0.05",
        "init=kaiming_normal,crossover_tolerance=0.2",
    ]


def test_classify():
    assert classify(["holds", "holds"]) == "robust holds"
    assert classify(["fails", "not tested", "fails"]) == "robust fails"
    assert classify(["holds", "inconclusive"]) == "depends"
    assert classify(["not tested"]) == "not tested"


def _point(name, settings, verdicts, check=()):
    claims = tuple(
        ClaimRecord(k, k, "", 0.0, v == "holds", verdict=v, kind="check" if k in check else "claim")
        for k, v in verdicts.items()
    )
    return SweepPointRecord(
        name,
        settings,
        tuple(c for c in claims if not c.is_check),
        tuple(c for c in claims if c.is_check),
        finished=True,
    )


def test_the_record_names_the_fields_that_flip_a_verdict():
    record = robustness_record(
        SweepRecord(
            "x",
            "quick",
            points=(
                _point(
                    BASELINE,
                    {"a": 1, "b": "p"},
                    {"c1": "holds", "c2": "holds", "c3": "fails", "k": "holds"},
                    check=("k",),
                ),
                _point("a=2", {"a": 2, "b": "p"}, {"c1": "fails", "c2": "holds", "c3": "fails"}),
                _point(
                    "b=q", {"a": 1, "b": "q"}, {"c1": "holds", "c2": "not tested", "c3": "fails"}
                ),
            ),
        )
    )
    claims = {c.id: c for c in record.claims}
    assert claims["c1"].standing == "depends" and claims["c1"].flipped_by == ("a",)
    assert (claims["c1"].holds, claims["c1"].tested) == (2, 3)
    # a reading that cannot test a claim is left out of its n, not counted against it
    assert claims["c2"].standing == "robust holds" and claims["c2"].tested == 2
    assert claims["c3"].standing == "robust fails"
    assert record.summary["depends_on"] == {"a": ["c1"]}
    # the check is recorded, but never counted among the claims
    assert claims["k"].kind == "check" and record.summary["checks"] == 1
    assert record.summary["robust holds"] == 1 and record.summary["claims"] == 3


# --- the command ------------------------------------------------------------------------------
def _robustness(out, *extra, fields="crossover_tolerance"):
    return [
        "robustness",
        "anisotropy",
        "--fields",
        fields,
        *TINY,
        "--out",
        str(out),
        *extra,
    ]


def test_robustness_runs_resumes_and_writes_its_page(tmp_path):
    out = tmp_path / "rb"
    assert cli.main(_robustness(out)) == 0
    record = json.loads((out / "robustness.json").read_text())
    assert [r["name"] for r in record["readings"]] == [
        BASELINE,
        "crossover_tolerance=0.05",
        "crossover_tolerance=0.2",
    ]
    assert {c["id"] for c in record["claims"]} == {
        "relu-top-singular-stands-out",
        "leaky-crossover-near-0.8",
        "mean-shift-explains-sigma1",
    }
    # crossover_tolerance is read by the claims only: its readings are judged on the preset's
    # stored units, not run again
    assert [r["judged_on"] for r in record["readings"]] == [None, BASELINE, BASELINE]
    assert (out / BASELINE / "summary.json").is_file()
    assert not (out / "crossover_tolerance=0.05").exists()
    page = (out / "robustness.html").read_text()
    assert "crossover_tolerance" in page and "holds in" in page.lower()
    first = (out / "robustness.json").read_text()
    assert cli.main(_robustness(out)) == 0  # resumes: nothing recomputed, the same record
    assert (out / "robustness.json").read_text() == first
    # every reading re-judged from the stored units gives the record back, byte for byte
    assert cli.main(["rejudge", str(out), "--check"]) == 0
    assert record["registration"]["hash"] and record["schema"] == 2


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_kill_9_then_resume_equals_an_uninterrupted_robustness_run(tmp_path):
    fields = "init,crossover_tolerance"  # one reading run, two judged on the preset's units
    reference = tmp_path / "reference"
    assert cli.main(_robustness(reference, fields=fields)) == 0
    out = tmp_path / "killed"
    command = [sys.executable, "-m", "relulab", *_robustness(out, fields=fields)]
    import os

    done = subprocess.run(
        command,
        env={**os.environ, FAULT_ENV: "unit-saved:leaky-sweep"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert not (out / "robustness.json").exists()
    assert cli.main(_robustness(out, fields=fields)) == 0
    resumed = json.loads((out / "robustness.json").read_text())
    assert [r["name"] for r in resumed["readings"]] == [
        BASELINE,
        "init=kaiming_normal",
        "crossover_tolerance=0.05",
        "crossover_tolerance=0.2",
    ]
    assert (out / "init=kaiming_normal" / "summary.json").is_file()
    uninterrupted = json.loads((reference / "robustness.json").read_text())
    assert resumed["claims"] == uninterrupted["claims"]


@pytest.mark.parametrize(
    "argv",
    [
        ["robustness", "no-such-experiment"],
        ["robustness", "anisotropy", "--preset", "nope"],
        ["robustness", "anisotropy", "--fields", "d"],  # stated: no alternatives
        [
            "robustness",
            "anisotropy",
            "--fields",
            "crossover_tolerance",
            "--set",
            "crossover_tolerance=0.3",
        ],
        ["robustness", "anisotropy", "--set", "d=-4"],
        # inferred, but says why no other reading is plausible
        ["robustness", "bias-after-relu", "--fields", "seeds_per_shift"],
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys, argv):
    out = tmp_path / "rb"
    assert cli.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("relulab:")
    assert not out.exists()


# --- readings judged on the preset's units ----------------------------------------------------
def _unit_sources(experiment) -> str:
    """The source of the module that plans the experiment's units and of every module of the
    same study it imports (claims, readings and figures aside)."""
    import importlib
    import inspect
    import re

    module = inspect.getmodule(experiment.plan)
    package = module.__name__.rpartition(".")[0]
    seen, todo, text = set(), [module.__name__], []
    while todo:
        name = todo.pop()
        if name in seen or re.search(r"\.(claims\w*|readings|figures)$", name):
            continue
        seen.add(name)
        source = inspect.getsource(importlib.import_module(name))
        text.append(source)
        todo += [m for m in re.findall(rf"from ({re.escape(package)}[\w.]*) import", source)]
    return "\n".join(text)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_judging_fields_are_never_read_by_the_units(name):
    """A ``judging`` field is judged on stored units (robustness re-judges instead of re-running),
    so the modules that compute the units must not read it."""
    check_judging_fields_unread(get_experiment(name))


def check_judging_fields_unread(experiment) -> None:
    import re

    name = experiment.name
    config = next(iter(experiment.presets.values()))
    judging = [f.name for f in dataclasses.fields(config) if f.metadata.get("judging")]
    source = _unit_sources(experiment)
    # a field's own declaration through seed 004's shared setting functions is no read
    read = [field for field in judging if re.search(rf"(?<!seed004)\.{field}\b", source)]
    assert read == [], f"{name}: the units read {read}"


def test_a_judged_reading_equals_the_run_reading(tmp_path):
    """Judging the preset's stored units under ``crossover_tolerance=0.05`` gives the claims a
    full run at that setting gives."""
    from relulab.runner.outputs import judge_reading

    assert cli.main(["run", "anisotropy", *TINY, "--out", str(tmp_path / "preset")]) == 0
    changed = "--set=crossover_tolerance=0.05"
    assert cli.main(["run", "anisotropy", *TINY, changed, "--out", str(tmp_path / "run")]) == 0
    judged = judge_reading(tmp_path / "preset", ["crossover_tolerance=0.05"]).to_dict()
    ran = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert judged["claims"] == ran["claims"] and judged["checks"] == ran["checks"]
    assert judged["metrics"] == ran["metrics"]
    with pytest.raises(ValueError, match="changes what the units compute"):
        judge_reading(tmp_path / "preset", ["init=kaiming_normal"])


def test_an_alternative_equal_to_the_presets_own_value_is_no_reading():
    """sample-variance's paper preset already runs at width 3000, one of histogram_width's
    alternatives: that reading would repeat the preset."""
    config = get_experiment("sample-variance").presets["paper"]
    names = [v.name for v in single_variants("sample-variance", "paper")]
    assert f"histogram_width={config.histogram_width}" not in names
    assert "histogram_width=300" in names

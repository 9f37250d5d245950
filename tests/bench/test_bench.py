"""The benchmark computes the same thing on every path; its timings are not tested here."""

import json

import pytest
import torch

from relulab import cli
from relulab.bench import summary_rows, workloads
from relulab.bench.peers import jax_available

CPU = torch.device("cpu")


def test_w1_engine_naive_loop_and_jax_train_the_same_networks():
    result = workloads.w1_tiny(CPU, steps=30, n_networks=4, naive_networks=4)
    assert result["engine_vs_naive_max_abs_diff"] < 1e-6
    if jax_available():
        assert result["engine_vs_jax_max_abs_diff"] < 1e-6
    assert result["engine_network_steps_per_s"] > 0 and result["speedup_vs_naive"] > 0
    assert result["compiled_vs_eager_max_abs_diff"] < 1e-6  # train(..., compiled_steps=10)
    measures = [row[1] for row in summary_rows({"w1": result}) if row[0] == "W1 compiled"]
    assert "compiled / naive" in measures
    assert ("compiled / JAX" in measures) == jax_available()


def test_w2_counts_the_fastest_of_its_runs_and_keeps_them_all():
    result = workloads.w2_medium(CPU, steps=2, n_networks=2, naive_steps=1, repeats=2)
    assert len(result["engine_runs_s"]) == 2
    assert result["engine_s"] == min(result["engine_runs_s"])
    assert 0 < result["fraction_of_peak"] and result["meets_peak_target"] in (True, False)


def test_w3_reports_the_split_between_drawing_and_propagating():
    result = workloads.w3_wide(CPU, n_networks=2, depth=3, n_samples=10)
    assert result["width"] == 1000 and result["generate_s"] > 0 and result["propagate_s"] > 0
    assert 0 < result["fraction_of_peak"] and result["matmul_peak_flops_per_s"] > 0
    assert result["gram_total_s"] > 0 and result["gram_speedup_end_to_end"] > 0
    assert result["gram_last_layer_mean_ratio"] > 0


def test_w3_draws_on_the_device_by_counter_when_asked():
    result = workloads.w3_wide(CPU, n_networks=2, depth=3, n_samples=10, rng="counter")
    assert result["rng"] == "counter" and result["generate_s"] > 0


def test_gpu_sizes_run_beside_the_cpu_sizes_only_on_cuda(monkeypatch):
    import relulab.bench as bench

    calls = []
    for name in ("w1_tiny", "w2_medium", "w3_wide"):
        monkeypatch.setattr(
            workloads, name, lambda device, *a, _n=name, **k: calls.append((_n, k)) or {}
        )
    results = bench._gpu_sized(["w1", "w2", "w3"], torch.device("cuda"), lambda _: None)
    assert set(results) == {"w1_gpu", "w2_gpu", "w3_gpu"}
    sizes = {name: kwargs["n_networks"] for name, kwargs in calls}
    assert sizes["w1_tiny"] >= 1000 and sizes["w3_wide"] > 30
    assert dict(calls)["w3_wide"]["rng"] == "counter" and dict(calls)["w3_wide"]["full"]


def test_bench_cli_writes_json(tmp_path):
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "--workloads", "w3", "--quiet", "--out", str(out)]) == 0
    assert "w3" in json.loads(out.read_text())


@pytest.mark.parametrize("args", [["--workloads", "w9"], ["--device", "tpu"]])
def test_bench_cli_rejects_bad_requests(tmp_path, capsys, args):
    out = tmp_path / "bench.json"
    assert cli.main(["bench", *args, "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("relulab: error:")
    assert not out.exists()


def test_w4_times_both_single_neuron_paths_and_they_agree():
    result = workloads.w4_single_neuron(CPU, n_networks=50, n_points=100, steps=20)
    assert result["prefix_vs_direct_max_abs_diff"] < 1e-4
    assert result["direct_roofline_s"] > 0 and result["memory_bandwidth_bytes_per_s"] > 0
    rows = summary_rows({"w4": result})
    assert any("prefix / elementwise" in row[1] for row in rows)


def test_scaling_curve_reports_rates_crossovers_and_draws_its_figure(tmp_path):
    from relulab.bench import write_bench

    result = workloads.scaling_curve(
        CPU, counts=(1, 4), widths=(8, 16), width_networks=3, steps=5, naive_networks=2
    )
    assert len(result["engine_by_count"]) == 2 and len(result["naive_by_width"]) == 2
    assert "engine_beats_naive_from_networks" in result
    path = tmp_path / "bench.json"
    write_bench({"scaling": result}, path)
    assert path.with_suffix(".scaling.png").stat().st_size > 0
    assert any(row[0] == "Scaling" for row in summary_rows({"scaling": result}))

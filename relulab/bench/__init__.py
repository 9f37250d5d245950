"""``relulab bench``: how close the engine comes to the machine, and to what users would write.

Every number is measured in one process, side by side, on the same data and step count (see
:mod:`relulab.bench.workloads`). Where a target is missed the result carries the operator
profile that explains why. Timings never enter the test suite. The ``monitor`` workload
(:mod:`relulab.bench.monitor`) times :class:`relulab.probe.Monitor` in a ResNet-18 training
loop.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from relulab.bench import cnn, workloads
from relulab.bench import monitor as monitor_workload
from relulab.files import write_atomic
from relulab.runner.environment import library_versions

__all__ = [
    "WORKLOADS",
    "plot_scaling",
    "run_bench",
    "summary_rows",
    "top_operators",
    "write_bench",
]

WORKLOADS = ("w1", "w2", "w3", "w4", "w5", "scaling", "monitor")


def top_operators(run: Callable[[], object], limit: int = 8) -> list[dict[str, Any]]:
    """The operators taking the most self time while ``run()`` executes (torch.profiler)."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        run()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    return [
        {
            "operator": e.key,
            "self_ms": round(e.self_cpu_time_total / 1e3, 3),
            "calls": e.count,
            "mean_us": round(e.self_cpu_time_total / max(e.count, 1), 2),
        }
        for e in events[:limit]
    ]


def _w1_profile(device: torch.device) -> list[dict[str, Any]]:
    return top_operators(lambda: workloads.w1_tiny(device, steps=50, naive_networks=1))


def _w2_profile(device: torch.device) -> list[dict[str, Any]]:
    return top_operators(lambda: workloads.w2_medium(device, steps=2, naive_steps=1, repeats=1))


def run_bench(
    names: list[str],
    device: torch.device,
    full: bool = False,
    naive_networks: int | None = None,
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the named workloads; returns the ``bench.json`` content."""
    results: dict[str, Any] = {
        "machine": {
            "processor": platform.processor() or platform.machine(),
            "cpu_count": torch.get_num_threads(),
            "device": str(device),
            "cuda": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        },
        "versions": library_versions(),
    }
    if "w1" in names:
        progress("W1 tiny: engine, naive loop, JAX …")
        w1 = workloads.w1_tiny(device, naive_networks=naive_networks)
        if not (w1["meets_naive_target"] and w1.get("meets_jax_target", True)):
            w1["profile_engine_top_operators"] = _w1_profile(device)
        results["w1"] = w1
    if "w2" in names:
        progress("W2 medium: residual post-LN toy, engine and naive loop …")
        w2 = workloads.w2_medium(device)
        if not w2["meets_peak_target"]:
            w2["profile_engine_top_operators"] = _w2_profile(device)
        results["w2"] = w2
    if "w3" in names:
        progress(f"W3 wide forward statistics ({'full' if full else 'scaled-down'}) …")
        results["w3"] = workloads.w3_wide(device, full=full)
    if "w4" in names:
        progress("W4 single neurons: elementwise pass vs roofline, prefix sums …")
        results["w4"] = workloads.w4_single_neuron(device)
    if "w5" in names:
        progress("W5 CNN ensemble: the family's executions vs the per-model loop …")
        results["w5"] = cnn.w5_cnn_ensemble(device, naive_networks=naive_networks)
    if device.type == "cuda":
        results.update(_gpu_sized(names, device, progress))
    if "scaling" in names:
        progress("Scaling: network-steps/s against the number of networks and the width …")
        results["scaling"] = workloads.scaling_curve(device)
    if "monitor" in names:
        progress("Monitor: ResNet-18 SGD steps with relulab.probe.Monitor(every=50) and without …")
        results["monitor"] = monitor_workload.monitor_overhead(device)
    return results


#: GPU sizes (issue 44): W1 with thousands of networks, W2 with ten times the CPU's networks,
#: W3 at the seed's width 3000 with the weights drawn on the device
GPU_W1_NETWORKS = 4096
GPU_W2_NETWORKS = 300
GPU_W3_NETWORKS = 100


def _gpu_sized(
    names: list[str], device: torch.device, progress: Callable[[str], None]
) -> dict[str, Any]:
    """The workloads again at sizes that fill a large GPU, beside the CPU-sized runs."""
    results: dict[str, Any] = {}
    if "w1" in names:
        progress(f"W1 at GPU size: {GPU_W1_NETWORKS} networks …")
        results["w1_gpu"] = workloads.w1_tiny(
            device, steps=500, n_networks=GPU_W1_NETWORKS, naive_networks=8
        )
    if "w2" in names:
        progress(f"W2 at GPU size: {GPU_W2_NETWORKS} networks …")
        results["w2_gpu"] = workloads.w2_medium(device, n_networks=GPU_W2_NETWORKS, naive_steps=2)
    if "w3" in names:
        progress(f"W3 at the seed's width 3000, {GPU_W3_NETWORKS} networks drawn on the device …")
        results["w3_gpu"] = workloads.w3_wide(
            device, full=True, n_networks=GPU_W3_NETWORKS, rng="counter"
        )
    return results


def write_bench(results: dict[str, Any], path: Path) -> None:
    """Write ``bench.json``, and with the scaling workload its figure beside it
    (``<name>.scaling.png``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(results, indent=2, default=str))
    if "scaling" in results:
        plot_scaling(results["scaling"], path.with_suffix(".scaling.png"))


def plot_scaling(scaling: dict[str, Any], path: Path) -> Path:
    """Network-steps/s of engine, naive loop and JAX against S and against the hidden width
    (log–log), the crossovers marked; saved as PNG at ``path``."""
    from relulab.report.plotting import plt, save_figure

    fig, (by_count, by_width) = plt.subplots(1, 2, figsize=(11, 4))
    for name, style in (("engine", "o-"), ("naive", "s--"), ("jax", "^:")):
        if f"{name}_by_count" in scaling:
            by_count.loglog(scaling["counts"], scaling[f"{name}_by_count"], style, label=name)
            by_width.loglog(scaling["widths"], scaling[f"{name}_by_width"], style, label=name)
    for key, colour in (
        ("engine_beats_naive_from_networks", "tab:grey"),
        ("engine_beats_jax_from_networks", "tab:green"),
    ):
        if scaling.get(key):
            by_count.axvline(scaling[key], color=colour, lw=0.8, ls="--")
    by_count.set(xlabel="networks S (hidden 64)", ylabel="network-steps / s", title="against S")
    by_width.set(
        xlabel="hidden width",
        ylabel="network-steps / s",
        title=f"against width (S = {scaling['width_networks']})",
    )
    by_count.legend()
    save_figure(fig, path)
    return path


def _verdict(target: str, met: bool) -> str:
    return f"{target} " + ("met" if met else "NOT met")


def _w1_ratio_rows(
    w1: dict[str, Any], workload: str, label: str, prefix: str
) -> tuple[tuple[str, str, str, str], tuple[str, str, str, str] | None]:
    """W1's ratio rows against the naive loop and (if measured) JAX, with their verdicts, for
    the eager engine (``prefix`` "") or the compiled one ("compiled_")."""
    against_naive = (
        workload,
        f"{label} / naive",
        f"{w1[prefix + 'speedup_vs_naive']:.1f}×",
        _verdict(f"≥ {workloads.W1_NAIVE_TARGET:g}×", w1[prefix + "meets_naive_target"]),
    )
    if prefix + "speedup_vs_jax" not in w1:
        return against_naive, None
    against_jax = (
        workload,
        f"{label} / JAX",
        f"{w1[prefix + 'speedup_vs_jax']:.2f}×",
        _verdict(f"≥ {workloads.W1_JAX_TARGET:g}×", w1[prefix + "meets_jax_target"]),
    )
    return against_naive, against_jax


def summary_rows(results: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(workload, measure, value, target) rows for the printed table."""
    rows: list[tuple[str, str, str, str]] = []
    if w1 := results.get("w1"):
        rows += _w1_rows(w1)
    if w1 and "compiled_s" in w1:
        rows += _w1_compiled_rows(w1)
    for name, key, achieved_key in (
        ("W2 medium", "w2", "engine_flops_per_s"),
        ("W3 wide", "w3", "propagate_flops_per_s"),
    ):
        if result := results.get(key):
            rows += _peak_rows(name, result, achieved_key)
    if w2 := results.get("w2"):
        rows.append(("W2 medium", "engine / naive", f"{w2['speedup_vs_naive']:.1f}×", ""))
    if w3 := results.get("w3"):
        rows += _w3_rows(w3)
    if w4 := results.get("w4"):
        rows += _w4_rows(w4)
    if w5 := results.get("w5"):
        rows += _w5_rows(w5)
    if scaling := results.get("scaling"):
        rows += _scaling_rows(scaling)
    if monitor := results.get("monitor"):
        rows += _monitor_rows(monitor)
    return rows


def _w1_rows(w1: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """W1's network-steps/s of the engine, the naive loop and JAX, and their ratios."""
    against_naive, against_jax = _w1_ratio_rows(w1, "W1 tiny", "engine", "")
    rows = [
        ("W1 tiny", "engine network-steps/s", f"{w1['engine_network_steps_per_s']:,.0f}", ""),
        (
            "W1 tiny",
            "naive loop network-steps/s",
            f"{w1['naive_network_steps_per_s']:,.0f}",
            "",
        ),
        against_naive,
    ]
    if against_jax is not None:
        rows += [
            ("W1 tiny", "JAX network-steps/s", f"{w1['jax_network_steps_per_s']:,.0f}", ""),
            against_jax,
        ]
    return rows


def _w1_compiled_rows(w1: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """W1 compiled: its network-steps/s, the compilation time, when it pays off, its ratios."""
    against_naive, against_jax = _w1_ratio_rows(w1, "W1 compiled", "compiled", "compiled_")
    break_even = w1["compiled_break_even_steps"]
    return [
        (
            "W1 compiled",
            f"engine, {w1['compiled_steps_per_call']} steps per compiled call",
            f"{w1['compiled_network_steps_per_s']:,.0f}",
            "",
        ),
        (
            "W1 compiled",
            "compilation (once; inductor caches it on disk)",
            f"{w1['compile_s']:.1f} s",
            "",
        ),
        (
            "W1 compiled",
            "pays off after",
            "never" if break_even is None else f"{break_even:,.0f} steps",
            "",
        ),
        against_naive,
        *([] if against_jax is None else [against_jax]),
    ]


def _peak_rows(
    name: str, result: dict[str, Any], achieved_key: str
) -> list[tuple[str, str, str, str]]:
    """W2's or W3's matmul peak, the GFLOP/s achieved and their fraction, against its target."""
    return [
        (name, "matmul peak GFLOP/s", f"{result['matmul_peak_flops_per_s'] / 1e9:.1f}", ""),
        (name, "achieved GFLOP/s", f"{result[achieved_key] / 1e9:.1f}", ""),
        (
            name,
            "fraction of peak",
            f"{result['fraction_of_peak']:.1%}",
            _verdict(f"≥ {result['target_fraction_of_peak']:.0%}", result["meets_peak_target"]),
        ),
    ]


def _w3_rows(w3: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """W3 end to end (weights drawn included) against its target, and the Gram sampler's."""
    rows = [
        (
            "W3 wide",
            "end to end, with weight drawing",
            f"{w3['end_to_end_fraction_of_peak']:.1%}",
            _verdict(f"≥ {w3['target_end_to_end_fraction']:.0%}", w3["meets_end_to_end_target"]),
        )
    ]
    if "gram_total_s" in w3:
        rows.append(
            (
                "W3 wide",
                "sampler='gram' (no weights) end to end",
                f"{w3['gram_total_s']:.2f} s vs {w3['total_s']:.2f} s: "
                f"{w3['gram_speedup_end_to_end']:.1f}×",
                "",
            )
        )
    return rows


def _w4_rows(w4: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """W4's elementwise and prefix-sum paths: network-steps/s, roofline fraction, ratios."""
    return [
        (
            "W4 neurons",
            "elementwise network-steps/s",
            f"{w4['direct_network_steps_per_s']:,.0f}",
            "",
        ),
        (
            "W4 neurons",
            "elementwise, fraction of bandwidth roofline",
            f"{w4['direct_fraction_of_roofline']:.1%}",
            "",
        ),
        (
            "W4 neurons",
            "prefix-sum network-steps/s",
            f"{w4['prefix_network_steps_per_s']:,.0f}",
            "",
        ),
        ("W4 neurons", "prefix / elementwise", f"{w4['prefix_vs_direct']:.1f}×", ""),
        (
            "W4 neurons",
            "prefix / elementwise roofline",
            f"{w4['prefix_vs_direct_roofline']:.1f}×",
            "",
        ),
    ]


def _scaling_rows(scaling: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """From how many networks the engine beats the naive loop and JAX."""
    rows = []
    for key, label in (
        ("engine_beats_naive_from_networks", "engine beats naive loop from S ="),
        ("engine_beats_jax_from_networks", "engine beats JAX from S ="),
    ):
        if key in scaling:
            value = scaling[key]
            rows.append(("Scaling", label, "never" if value is None else f"{value:,.0f}", ""))
    return rows


def _w5_rows(w5: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """W5's rows per width: CPU-s per network-step of every path, the chosen path against the
    per-model loop (with its target), and the engine's per-network loop against its ``vmap``."""
    rows = []
    for width, measured in w5["by_width"].items():
        workload = f"W5 CNN ensemble ×{width}"
        paths = measured["paths"]
        rows.append(
            (
                workload,
                "CPU-s per network-step: " + ", ".join(paths),
                ", ".join(f"{row['cpu_s_per_network_step']:.4f}" for row in paths.values()),
                "",
            )
        )
        auto = measured["auto_execution"]
        target = cnn.W5_TARGET_VS_NAIVE
        rows += [
            (
                workload,
                f"engine ({auto}) / per-model loop",
                f"{measured['auto_vs_naive']:.2f}×",
                _verdict(f"≥ {target:g}×", measured["auto_vs_naive"] >= target),
            ),
            (workload, "engine loop (faster layout) / engine vmap", _ratio(measured), ""),
        ]
    return rows


def _ratio(measured: dict[str, Any]) -> str:
    """The per-network loop against ``vmap``: above 1× the loop is faster."""
    return f"{measured['loop_vs_vmap']:.2f}×"


def _monitor_rows(monitor: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """The monitor workload's rows: overhead against its target, and its parts."""
    every = monitor["every"]
    return [
        (
            "Monitor",
            f"overhead on a ResNet-18 SGD step, every={every}",
            f"{monitor['overhead']:+.1%}",
            _verdict(f"≤ {monitor['target_overhead']:.0%}", monitor["meets_overhead_target"]),
        ),
        (
            "Monitor",
            f"one measurement / ({every} steps)",
            f"{monitor['expected_overhead']:.1%}",
            "",
        ),
        (
            "Monitor",
            "one measurement, one step, probe()",
            f"{monitor['measure_s'] * 1e3:.0f} ms, {monitor['train_step_s'] * 1e3:.0f} ms, "
            f"{monitor['probe_s'] * 1e3:.0f} ms",
            "",
        ),
    ]

"""Export a run's recorded curves to TensorBoard event files.

Layout: one TensorBoard *run* per trained network, ``LOGDIR/UNIT/NNNN_CONDITION`` (``UNIT`` the
unit's name made one safe directory name, :func:`safe_component`; ``NNNN`` the network's index in
its unit, ``CONDITION`` the settings that vary within the unit, e.g.
``b1=1.2,lr=0.01``), so that
TensorBoard overlays the networks of a unit in one chart per recorded curve (``loss``,
``dead_fraction``, …) against the training step. Each run also carries its condition as text.
Writing goes through ``torch.utils.tensorboard.SummaryWriter``, which needs the ``tensorboard``
package (``pip install 'relulab[tensorboard]'``).

>>> export_tensorboard("runs/sn", "tb/sn")          # doctest: +SKIP
>>> # then: tensorboard --logdir tb/sn
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relulab.files import check_no_links_inside, check_path_name
from relulab.store import STORE_FILENAME, RunStore

__all__ = ["ExportedUnit", "export_tensorboard", "safe_component", "summary_writer_class"]

_UNSAFE = re.compile(r"[^A-Za-z0-9=.,_+-]+")


@dataclass(frozen=True)
class ExportedUnit:
    """What was written for one unit: networks written of how many, curves, records each."""

    unit: str
    written: int
    networks: int
    curves: tuple[str, ...]
    records: int


def summary_writer_class() -> type:
    """``torch.utils.tensorboard.SummaryWriter``; ``ImportError`` naming the extra to install
    when the ``tensorboard`` package is missing."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise ImportError(
            "TensorBoard export needs the tensorboard package: pip install 'relulab[tensorboard]'"
        ) from None
    return SummaryWriter


def _varying_keys(conditions: Sequence[dict[str, Any]]) -> list[str]:
    """The condition keys whose values differ between a unit's networks."""
    keys = list(dict.fromkeys(key for condition in conditions for key in condition))
    return [k for k in keys if len({json.dumps(c.get(k), sort_keys=True) for c in conditions}) > 1]


def safe_component(name: str) -> str:
    """A unit name as one directory name that cannot leave its parent: unsafe characters
    (separators among them) become ``_``, and ``.`` / ``..`` / an empty name get a ``_``
    prefix.

    Example:
        >>> safe_component("../../etc"), safe_component(".."), safe_component("b2-sweep")
        ('.._.._etc', '_..', 'b2-sweep')
    """
    text = _UNSAFE.sub("_", name)
    return f"_{text}" if text in ("", ".", "..") else text


def _run_name(index: int, condition: dict[str, Any], keys: Sequence[str]) -> str:
    """``NNNN_key=value,…`` over the keys that vary within the unit (file-system safe)."""
    label = ",".join(f"{key}={condition.get(key)}" for key in keys)
    label = _UNSAFE.sub("_", label)[:80].strip("_")
    return f"{index:04d}_{label}" if label else f"{index:04d}"


def _check_no_links(logdir: Path, units: Sequence[str], label: str) -> None:
    """No symbolic link where a network's event files go (``logdir/UNIT/RUN``), checked before
    the first file is written: SummaryWriter would write through it, outside ``logdir``."""
    unit_dirs = [logdir / safe_component(name) for name in units]
    check_no_links_inside(logdir, unit_dirs, label)
    for unit_dir in unit_dirs:
        children = list(unit_dir.iterdir()) if unit_dir.is_dir() else []
        check_no_links_inside(logdir, children, label)


def export_tensorboard(
    run_dir: str | Path,
    logdir: str | Path,
    units: Sequence[str] | None = None,
    max_networks: int | None = None,
    label: str = "logdir",
) -> list[ExportedUnit]:
    """Write the recorded curves of the run in ``run_dir`` as TensorBoard event files.

    Args:
        run_dir: a run directory (holding ``runs.sqlite``).
        logdir: where to write; one sub-directory per unit, one per network inside it.
        units: the units to export (default: every finished unit).
        max_networks: at most this many networks per unit, the first ones (default: all).
        label: how the user named ``logdir``, for messages.

    Returns:
        One :class:`ExportedUnit` per unit exported.

    Raises:
        ImportError: the ``tensorboard`` package is not installed.
        StoreError: ``run_dir`` holds no readable run store.
        KeyError: a unit named in ``units`` is not in the store.
        OutputPathError: a symbolic link inside ``logdir`` where event files would go.
    """
    check_path_name(run_dir, "run_dir")  # '' would mean the working directory, silently
    check_path_name(logdir, label)
    writer_class = summary_writer_class()
    logdir = Path(logdir)
    exported = []
    with RunStore.open(Path(run_dir) / STORE_FILENAME) as store:
        store.verify()  # every unit, before the first file is written
        names = sorted(store.done_units())
        for name in units or names:
            if name not in names:
                raise KeyError(f"unit {name!r} is not in {run_dir}; units: {', '.join(names)}")
        _check_no_links(logdir, units or names, label)
        for name in units or names:
            result = store.unit(name)
            count = min(max_networks or result.n_networks, result.n_networks)
            steps = [int(step) for step in result.steps]
            keys = _varying_keys(result.conditions)
            for index in range(count):
                condition = result.conditions[index]
                run_name = _run_name(index, condition, keys)
                writer = writer_class(log_dir=str(logdir / safe_component(name) / run_name))
                try:
                    writer.add_text("condition", json.dumps(condition, sort_keys=True), 0)
                    for curve, values in result.curves.items():
                        for step, value in zip(steps, values[index], strict=True):
                            value = float(value)
                            if math.isfinite(value):
                                writer.add_scalar(curve, value, step)
                finally:
                    writer.close()
            exported.append(
                ExportedUnit(name, count, result.n_networks, tuple(result.curves), len(steps))
            )
    return exported

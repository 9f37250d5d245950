"""The ``monitor`` workload of ``relulab bench``: what :class:`relulab.probe.Monitor` costs a
training loop.

A ResNet-18 (torchvision's layout: 7×7 stride-2 stem, max-pool, BasicBlocks [2, 2, 2, 2] of
64–512 channels; built here, torchvision is not a dependency) trains with SGD (momentum 0.9,
cross-entropy) on a fixed random batch of 16×3×32×32 images. Rounds alternate ``every`` plain
steps and ``every`` steps that call ``monitor.step`` (one measurement per round), so a loaded
machine slows both arms alike; the overhead is the monitored time over the plain time, minus 1.
Beside it: one measurement's time against one step's (the overhead to expect,
``measure_s / (every · step_s)``), and against :func:`relulab.probe.probe` on the same batch.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from relulab.engine.device import synchronise

__all__ = ["MONITOR_OVERHEAD_TARGET", "BasicBlock", "monitor_overhead", "resnet18"]

#: The overhead the monitor should stay under at ``every=50`` (issue 35).
MONITOR_OVERHEAD_TARGET = 0.10


class BasicBlock(nn.Module):
    """torchvision's BasicBlock: one ``nn.ReLU(inplace=True)`` called twice (also the tests'
    reference ResNet's block)."""

    def __init__(self, inputs: int, outputs: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.downsample = None
        if stride != 1 or inputs != outputs:
            self.downsample = nn.Sequential(
                nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class _ResNet18(nn.Module):
    def __init__(self, width: int, classes: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        inputs, stages = width, []
        for index, stride in enumerate((1, 2, 2, 2)):
            outputs = width * 2**index
            stages.append(
                nn.Sequential(BasicBlock(inputs, outputs, stride), BasicBlock(outputs, outputs))
            )
            inputs = outputs
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.fc = nn.Linear(inputs, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet18(width: int = 64, classes: int = 10) -> nn.Module:
    """ResNet-18 in torchvision's layout (17 ReLU calls), ``width`` channels in the stem.

    Args:
        width: the stem's channels (64 in torchvision); the stages have 1, 2, 4, 8 times it.
        classes: outputs of the final Linear layer.

    Returns:
        The model, PyTorch's default init.

    Example:
        >>> resnet18(width=4)(torch.randn(2, 3, 32, 32)).shape
        torch.Size([2, 10])
    """
    return _ResNet18(width, classes)


def _timed(run: Callable[[], object], device: torch.device) -> float:
    synchronise(device)
    started = time.perf_counter()
    run()
    synchronise(device)
    return time.perf_counter() - started


def _trainer(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> Callable[[], None]:
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def train_step() -> None:
        optimiser.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        optimiser.step()

    return train_step


def monitor_overhead(
    device: torch.device,
    every: int = 50,
    rounds: int = 3,
    batch_size: int = 16,
    image_size: int = 32,
    width: int = 64,
    repeats: int = 3,
) -> dict[str, Any]:
    """Time a ResNet-18 training loop with and without a :class:`relulab.probe.Monitor`.

    Args:
        device: where to train.
        every: the monitor's period.
        rounds: plain / monitored round pairs, each of ``every`` steps.
        batch_size: images per step (and in the monitored batch).
        image_size: their side.
        width: the ResNet's stem width (64: ResNet-18 itself).
        repeats: timings of one measurement, one step and one probe, the median kept.

    Returns:
        The ``bench.json`` entry: ``overhead`` (monitored / plain − 1), ``expected_overhead``,
        ``measure_s``, ``train_step_s``, ``probe_s``, ``probe_vs_measure``, the rounds and the
        settings.
    """
    from relulab.probe import probe
    from relulab.probe.monitor import Monitor

    torch.manual_seed(0)
    model = resnet18(width).to(device)
    x = torch.randn(batch_size, 3, image_size, image_size, device=device)
    y = torch.randint(0, 10, (batch_size,), device=device)
    probe_batch = torch.randn(batch_size, 3, image_size, image_size, device=device)
    train_step = _trainer(model, x, y)
    warm = Monitor(model, probe_batch, every=every, thresholds=None, wandb=False)
    for _ in range(3):  # warm up both paths
        train_step()
        warm.measure(0)
    monitor = Monitor(model, probe_batch, every=every, thresholds=None, wandb=False)
    plain_runs, monitored_runs, global_step = [], [], 0
    for _ in range(rounds):
        plain_runs.append(_timed(lambda: [train_step() for _ in range(every)], device))

        def monitored(start: int = global_step) -> None:
            for step in range(start, start + every):
                monitor.step(step)
                train_step()

        monitored_runs.append(_timed(monitored, device))
        global_step += every
    step_s = statistics.median(_timed(train_step, device) for _ in range(repeats))
    measure_s = statistics.median(_timed(lambda: warm.measure(0), device) for _ in range(repeats))
    probe_s = statistics.median(
        _timed(lambda: probe(model, probe_batch), device) for _ in range(repeats)
    )
    overhead = sum(monitored_runs) / sum(plain_runs) - 1
    return {
        "model": f"ResNet-18 (torchvision layout, width {width})",
        "device": str(device),
        "batch": [batch_size, 3, image_size, image_size],
        "optimiser": "SGD lr 0.01 momentum 0.9, cross-entropy",
        "every": every,
        "rounds": rounds,
        "plain_runs_s": plain_runs,
        "monitored_runs_s": monitored_runs,
        "measurements": len(monitor.history["step"].unique()),
        "overhead": overhead,
        "overhead_ratio": 1 + overhead,
        "train_step_s": step_s,
        "measure_s": measure_s,
        "expected_overhead": measure_s / (every * step_s),
        "probe_s": probe_s,
        "probe_vs_measure": probe_s / measure_s,
        "target_overhead": MONITOR_OVERHEAD_TARGET,
        "meets_overhead_target": overhead <= MONITOR_OVERHEAD_TARGET,
    }

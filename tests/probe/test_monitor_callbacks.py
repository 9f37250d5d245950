"""The Lightning and Hugging Face callbacks over relulab.probe.Monitor, each in a tiny real run
of its framework (skipped where the framework is not installed): measurements at the right
steps, TensorBoard through the trainer's logger, and training bit-identical to a run without
the callback (the monitor's dropout draws and BatchNorm updates are undone)."""

import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from relulab.probe.monitor import Monitor, MonitorConfig


def test_importing_relulab_probe_imports_no_framework():
    code = (
        "import sys, relulab.probe, relulab.probe.monitor, relulab.probe.callbacks; "
        "print(any(m in sys.modules for m in ('lightning', 'pytorch_lightning', 'transformers')))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "False", result.stderr


def test_callbacks_take_a_batch_or_a_monitor_not_both():
    from relulab.probe.callbacks import _MonitorHolder

    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    with pytest.raises(ValueError, match="batch"):
        _MonitorHolder()
    ready = Monitor(model, torch.randn(4, 2))
    with pytest.raises(ValueError, match="batch"):
        _MonitorHolder(torch.randn(4, 2), monitor=ready)
    with pytest.raises(ValueError, match="already made"):
        _MonitorHolder(monitor=ready, log_dir="runs")
    assert _MonitorHolder(monitor=ready)._ensure(nn.Identity()) is ready


class _Writer:
    """A trainer's TensorBoard writer, as the callbacks hand it to the monitor."""

    def __init__(self) -> None:
        self.scalars: list[str] = []
        self.histograms: list[tuple[str, int]] = []

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        self.scalars.append(tag)

    def add_histogram_raw(self, tag: str, global_step: int, **values: object) -> None:
        self.histograms.append((tag, global_step))


def test_callbacks_pass_the_histogram_option_to_the_trainer_writer():
    from relulab.probe.callbacks import _MonitorHolder

    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    writer, quiet = _Writer(), _Writer()
    options = {"every": 1, "thresholds": None}
    _MonitorHolder(torch.randn(8, 2), histograms=True, **options)._ensure(model, writer).step(0)
    _MonitorHolder(torch.randn(8, 2), **options)._ensure(model, quiet).step(0)
    assert writer.histograms == [("relulab/pre_activation/1#0", 0)]
    assert quiet.scalars and not quiet.histograms  # off by default
    config = MonitorConfig(every=7, thresholds=None)
    assert _MonitorHolder(torch.randn(8, 2), config=config)._ensure(model).every == 7
    assert _MonitorHolder(torch.randn(8, 2))._ensure(model).every == 50  # Monitor's default


# ---------------------------------------------------------------------------------------------
# PyTorch Lightning
# ---------------------------------------------------------------------------------------------
def _lightning_fit(tmp_path, callbacks: list, seed: int = 0):
    L = pytest.importorskip("lightning")

    class Module(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = nn.Sequential(
                nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3)
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.net(x)

        def training_step(self, batch, batch_idx):
            x, y = batch
            return F.cross_entropy(self(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    L.seed_everything(seed, verbose=False)
    data = torch.utils.data.TensorDataset(torch.randn(64, 6), torch.randint(0, 3, (64,)))
    loader = torch.utils.data.DataLoader(data, batch_size=8, shuffle=True)
    module = Module()
    trainer = L.Trainer(
        max_steps=6,
        accelerator="cpu",
        devices=1,
        logger=L.pytorch.loggers.TensorBoardLogger(str(tmp_path), name="tb"),
        callbacks=callbacks,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(module, loader)
    return module, trainer


def test_lightning_callback_measures_logs_and_changes_nothing(tmp_path):
    pytest.importorskip("lightning")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from relulab.probe.callbacks import RelulabLightningCallback

    callback = RelulabLightningCallback(torch.randn(16, 6), every=2, thresholds=None)
    monitored, trainer = _lightning_fit(tmp_path / "with", [callback])
    assert sorted(callback.monitor.history["step"].unique()) == [0, 2, 4, 6]
    assert callback.monitor.model is monitored
    # issue 46: the trainer's optimiser is the monitor's, its learning rate recorded
    assert callback.monitor.config.optimizer is trainer.optimizers[0]
    assert set(callback.monitor.learning_rates) == {0, 2, 4, 6}
    events = EventAccumulator(trainer.logger.log_dir).Reload()  # the trainer's own logger
    assert [e.step for e in events.Scalars("relulab/dead_fraction/net.2#0")] == [0, 2, 4, 6]
    plain, _ = _lightning_fit(tmp_path / "without", [])
    for a, b in zip(monitored.state_dict().values(), plain.state_dict().values(), strict=True):
        assert torch.equal(a, b)


class _FakeLightningTrainer:
    """What the callback reads of a Lightning trainer."""

    def __init__(self, global_step: int, is_global_zero: bool = True, logger=None) -> None:
        self.global_step, self.is_global_zero, self.logger = global_step, is_global_zero, logger


def test_lightning_callback_with_a_ready_monitor_and_off_the_main_process():
    pytest.importorskip("lightning")
    from relulab.probe.callbacks import RelulabLightningCallback

    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    monitor = Monitor(model, torch.randn(8, 2), every=1, thresholds=None)
    callback = RelulabLightningCallback(monitor=monitor)
    callback.on_train_start(_FakeLightningTrainer(0, is_global_zero=False), model)
    callback.on_train_batch_end(_FakeLightningTrainer(1, is_global_zero=False), model, 0, 0, 0)
    assert monitor.history.empty  # other ranks never measure
    callback.on_train_batch_end(_FakeLightningTrainer(1), model, None, None, 0)
    assert monitor.history["step"].unique().tolist() == [1]


# ---------------------------------------------------------------------------------------------
# Hugging Face Trainer
# ---------------------------------------------------------------------------------------------
def _hf_train(tmp_path, callbacks: list):
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")  # the Trainer needs it
    config = transformers.BertConfig(
        vocab_size=40,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        hidden_act="relu",
        num_labels=2,
    )
    transformers.set_seed(0)
    model = transformers.BertForSequenceClassification(config)
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 40, (32, 8), generator=generator)
    labels = torch.randint(0, 2, (32,), generator=generator)
    data = [{"input_ids": ids[i], "labels": labels[i]} for i in range(32)]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        max_steps=6,
        per_device_train_batch_size=4,
        learning_rate=1e-3,
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
        seed=0,
    )
    transformers.Trainer(model=model, args=args, train_dataset=data, callbacks=callbacks).train()
    return model


def test_hf_trainer_callback_measures_and_changes_nothing(tmp_path):
    pytest.importorskip("transformers")
    from relulab.probe.callbacks import RelulabTrainerCallback

    batch = {"input_ids": torch.randint(0, 40, (8, 8), generator=torch.Generator().manual_seed(2))}
    callback = RelulabTrainerCallback(batch, every=3, thresholds=None, log_dir=tmp_path / "tb")
    monitored = _hf_train(tmp_path / "with", [callback])
    history = callback.monitor.history
    assert sorted(history["step"].unique()) == [0, 3, 6]
    # the two encoder layers' ReLUs (on (N, T, d): d units) and the pooler's tanh
    assert list(dict.fromkeys(history["layer"])) == [
        "bert.encoder.layer.0.intermediate.intermediate_act_fn#0",
        "bert.encoder.layer.1.intermediate.intermediate_act_fn#0",
        "bert.pooler.activation#0",
    ]
    relu = callback.monitor.table(6).loc["bert.encoder.layer.0.intermediate.intermediate_act_fn#0"]
    assert 0 <= relu["dead_fraction"] <= 1 and relu["delta"] > 0
    # issue 46: the Trainer's optimiser is the monitor's (linear decay from 1e-3 over 6 steps)
    rates = callback.monitor.learning_rates
    assert sorted(rates) == [0, 3, 6] and rates[0] > rates[3] > rates[6] >= 0
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))
    plain = _hf_train(tmp_path / "without", [])
    for a, b in zip(monitored.state_dict().values(), plain.state_dict().values(), strict=True):
        assert torch.equal(a, b)

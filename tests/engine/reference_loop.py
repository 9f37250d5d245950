"""What a user would write instead of the batched engine: each network trained on its own with
``torch.optim``, one after the other — the reference the engine is compared with on the CPU
(``test_engine_families.py``) and on a GPU (``test_cuda.py``)."""

import torch


def loop_reference(modules, x, y, steps, make_optimiser, lrs, loss, batch_size=None, seed=0):
    """Train each module in turn: full batch, or minibatches of ``batch_size`` in the order of
    a ``randperm`` from a CPU generator seeded ``seed`` (a new permutation per epoch), on the
    device of ``x``. ``loss``: ``"mse"`` (mean of squares) or ``"half_sum"``."""
    for module, lr in zip(modules, lrs, strict=True):
        optimiser = make_optimiser(module.parameters(), lr)
        generator = torch.Generator().manual_seed(seed)
        order, cursor = None, 0
        for _ in range(steps):
            xb, yb = x, y
            if batch_size is not None:
                if order is None or cursor + batch_size > len(x):
                    order, cursor = torch.randperm(len(x), generator=generator), 0
                index = order[cursor : cursor + batch_size].to(x.device)
                cursor += batch_size
                xb, yb = x[index], y[index]
            optimiser.zero_grad()
            squared = (module(xb) - yb).square()
            (squared.mean() if loss == "mse" else 0.5 * squared.sum()).backward()
            optimiser.step()


def assert_same_parameters(batched, modules):
    """Network ``s`` of ``batched`` has the parameters of ``modules[s]`` (float64 tolerances)."""
    for s, module in enumerate(modules):
        trained = batched.module(s)
        for got, want in zip(trained.parameters(), module.parameters(), strict=True):
            assert got.device == want.device
            torch.testing.assert_close(got, want, rtol=1e-9, atol=1e-11)

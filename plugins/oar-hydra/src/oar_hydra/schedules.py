"""The ``lr_scheduler`` options of ``oar-run``: factories of ``oar.optimizer.lr`` schedulers.

``oar-run`` steps the scheduler after every batch, so a factory receives the run's length with
the learning rate: ``factory(learning_rate=..., epochs=..., steps_per_epoch=..., **config)``. A
``lr_scheduler`` config may name your own factory with the same keyword arguments.
"""

from __future__ import annotations

from oar.optimizer.lr import CosineAnnealingDecay, StepDecay


def cosine(learning_rate: float, epochs: int, steps_per_epoch: int, eta_min: float = 0.0) -> CosineAnnealingDecay:
    """Cosine annealing from ``learning_rate`` to ``eta_min`` over all the batches of the run.

    >>> from oar_hydra.schedules import cosine
    >>> schedule = cosine(0.1, epochs=2, steps_per_epoch=5)
    >>> schedule.T_max, schedule()
    (10, 0.1)
    """
    return CosineAnnealingDecay(learning_rate, T_max=epochs * steps_per_epoch, eta_min=eta_min)


def step(learning_rate: float, epochs: int, steps_per_epoch: int, step_epochs: int = 5, gamma: float = 0.1) -> StepDecay:
    """``learning_rate`` times ``gamma`` every ``step_epochs`` epochs.

    >>> from oar_hydra.schedules import step
    >>> step(0.1, epochs=10, steps_per_epoch=4, step_epochs=2).step_size
    8
    """
    return StepDecay(learning_rate, step_size=step_epochs * steps_per_epoch, gamma=gamma)

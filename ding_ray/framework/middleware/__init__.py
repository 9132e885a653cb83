"""DI-engine's middleware: factories that return stages (``def _stage(ctx)``) for ``Task.use``.

Each stage calls only the plain interface of the component it is given (``collect``, ``push``,
``sample``, ``update``, ``train``, ``eval``), so a local object and a Ray actor of the same class
fit the same stage.
"""

__all__: list[str] = []  # each group below adds its names with `__all__ += [...]`

# --- data stages (data.py, offline.py, her.py) ---
from ding_ray.framework.middleware.data import (  # noqa: E402
    buffer_saver,
    data_pusher,
    offpolicy_data_fetcher,
    priority_calculator,
    sqil_data_pusher,
)
from ding_ray.framework.middleware.her import her_data_enhancer  # noqa: E402
from ding_ray.framework.middleware.offline import offline_data_fetcher, offline_data_saver  # noqa: E402
from ding_ray.framework.middleware.offline_dataset import HDF5Dataset, NaiveRLDataset  # noqa: E402

__all__ += [
    "HDF5Dataset",
    "NaiveRLDataset",
    "buffer_saver",
    "data_pusher",
    "her_data_enhancer",
    "offline_data_fetcher",
    "offline_data_saver",
    "offpolicy_data_fetcher",
    "priority_calculator",
    "sqil_data_pusher",
]

# --- collect / train / evaluate / control stages (collect.py, train.py, evaluate.py, control.py) ---
from ding_ray.framework.middleware.collect import (  # noqa: E402
    EpisodeCollector,
    StepCollector,
    TransitionList,
    collector,
    inferencer,
    rolloutor,
)
from ding_ray.framework.middleware.control import (  # noqa: E402
    ckpt_saver,
    epoch_timer,
    eps_greedy_handler,
    eps_greedy_masker,
    termination_checker,
)
from ding_ray.framework.middleware.evaluate import (  # noqa: E402
    interaction_evaluator,
    interaction_evaluator_ttorch,
)
from ding_ray.framework.middleware.train import (  # noqa: E402
    OffPolicyLearner,
    gae_estimator,
    multistep_trainer,
    reward_estimator,
    trainer,
)

__all__ += [
    "EpisodeCollector",
    "OffPolicyLearner",
    "StepCollector",
    "TransitionList",
    "ckpt_saver",
    "collector",
    "epoch_timer",
    "eps_greedy_handler",
    "eps_greedy_masker",
    "gae_estimator",
    "inferencer",
    "interaction_evaluator",
    "interaction_evaluator_ttorch",
    "multistep_trainer",
    "reward_estimator",
    "rolloutor",
    "termination_checker",
    "trainer",
]

# --- loggers (logger.py) ---
from ding_ray.framework.middleware.logger import offline_logger, online_logger  # noqa: E402
from ding_ray.framework.middleware.wandb_logger import wandb_offline_logger, wandb_online_logger  # noqa: E402

__all__ += ["offline_logger", "online_logger", "wandb_offline_logger", "wandb_online_logger"]

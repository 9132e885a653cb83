"""``Policy``: one algorithm, seen through three modes (learn, collect, eval).

A pipeline hands each component only the mode it needs: the learner gets ``policy.learn_mode``,
a collector ``policy.collect_mode``, an evaluator ``policy.eval_mode``. Each mode is a namedtuple
of bound methods, so a component cannot reach into another mode's state.
"""

from __future__ import annotations

import copy
from collections import namedtuple
from collections.abc import Callable, Iterable
from typing import Any

import torch
from easydict import EasyDict

from ding_ray.config.merge import checked_config, default_config_of
from ding_ray.errors import ConfigError, DataFormatError, EnvError
from ding_ray.model import create_model
from ding_ray.model.foreign_state import translate_learn_state as learn_state_from_di_engine
from ding_ray.policy.common import (
    check_replay_memory,
    obs_batch,
    outputs_to_numpy,
    per_env,
    set_mode,
    transition,
)
from ding_ray.utils.registry import POLICY_REGISTRY


class Policy:
    """Base of every policy. Subclasses implement ``_init_learn``/``_init_collect``/``_init_eval``
    and the forwards of those modes (see ``columnar_collect`` for the batched form)."""

    learn_function = namedtuple(
        "learn_function",
        [
            "forward",
            "reset",
            "info",
            "monitor_vars",
            "get_attribute",
            "set_attribute",
            "state_dict",
            "load_state_dict",
        ],
    )
    collect_function = namedtuple(
        "collect_function",
        [
            "forward",
            "process_transition",
            "get_train_sample",
            "reset",
            "get_attribute",
            "set_attribute",
            "state_dict",
            "load_state_dict",
        ],
    )
    eval_function = namedtuple(
        "eval_function",
        ["forward", "reset", "get_attribute", "set_attribute", "state_dict", "load_state_dict"],
    )
    total_field = {"learn", "collect", "eval"}
    default_collector_type = "sample"  # collector compile_config picks when the config names none
    action_space = "discrete"  # 'discrete' or 'continuous': which env action spaces fit

    config = dict(
        type=None,  # registered name, e.g. 'dqn'
        on_policy=False,  # on-policy algorithms train only on data of the current weights
        cuda=False,  # put the model on a GPU when one is present (falls back to CPU otherwise)
        multi_gpu=False,  # data-parallel training: on Ray a learner group of ray.num_learners (>= 2)
        bp_update_sync=True,  # with multi_gpu: all-reduce gradients before the optimizer step
        traj_len_inf=False,  # collectors keep whole episodes before calling get_train_sample
        # True: the random_collect_size steps use the policy itself, not uniform random actions
        transition_with_policy_data=False,
        load_path=None,  # checkpoint the eval entry loads (training ignores it, as DI-engine does)
        # the command-mode section of DI-engine's '<type>_command' configs (dizoo's SAC configs set
        # command=dict()); DI-engine 0.5.3 reads nothing from it and neither does ding_ray
        command=dict(),
        model=dict(),  # kwargs of the model; 'type' defaults to default_model()
        learn=dict(
            resume_training=False,  # continue train_iter and envstep of load_ckpt_before_run's checkpoint
            # False (DI-engine): a time limit ends the episode as a termination does ('done' is the
            # env's done), so targets do not bootstrap there. True: 'done' marks real terminations
            # only and targets bootstrap from next_obs at a time limit (SB3's and rl-zoo3's handling)
            bootstrap_on_truncation=False,
        ),
        collect=dict(
            n_episode=None,  # episodes per collect call, for an episode collector (create_config collector)
            # offline data: the file collect_demo_data writes (when not given it) and its format,
            # 'naive' (ding_ray's msgpack, not DI-engine's pickle) or 'hdf5'; the file offline entries read
            save_path=None,
            data_type="naive",
            data_path=None,
        ),
        eval=dict(),
        other=dict(),
    )

    @classmethod
    def default_config(cls) -> EasyDict:
        if cls is Policy:
            raise RuntimeError("Policy is abstract; ask a registered subclass for its default config.")
        return default_config_of(cls)

    @classmethod
    def check_config(cls, cfg: EasyDict) -> None:
        """Refuse (``ConfigError``) what this policy cannot run with in the compiled config ``cfg``,
        before anything is built (``compile_config`` calls it): a replay buffer larger than this
        machine's memory. A policy with checks of its own extends it."""
        check_replay_memory(cfg)

    def __init__(
        self,
        cfg: dict,
        model: torch.nn.Module | None = None,
        enable_field: Iterable[str] | None = None,
    ) -> None:
        cfg = checked_config(type(self), cfg, "policy")
        if cfg.multi_gpu:
            raise ConfigError(
                "policy.multi_gpu=True trains data-parallel with a learner group, which runs on Ray: use "
                "ray_pipeline with ray.num_learners=N (one learner per GPU with ray.learner_num_gpus=1), "
                "or set multi_gpu=False for one learner (policy.cuda=True puts it on a GPU)."
            )
        self._cfg = cfg
        self._on_policy = cfg.on_policy
        self._enable_field = set(self.total_field if enable_field is None else enable_field)
        unknown = self._enable_field - self.total_field
        if unknown:
            raise ConfigError(
                f"enable_field {sorted(unknown)} unknown; choose from {sorted(self.total_field)}."
            )
        self._cuda = bool(cfg.cuda) and torch.cuda.is_available()
        self._device = torch.device("cuda" if self._cuda else "cpu")
        self._rank = 0
        if self._enable_field & {"learn", "collect", "eval"}:
            self._model = self._create_model(cfg, model).to(self._device)
        init = self._field_initializers()
        for field in sorted(self._enable_field):
            init[field]()

    def _field_initializers(self) -> dict[str, Callable[[], None]]:
        """Each field of ``total_field`` -> the hook that sets it up when ``enable_field`` names it."""
        return {"learn": self._init_learn, "collect": self._init_collect, "eval": self._init_eval}

    def _create_model(self, cfg: EasyDict, model: torch.nn.Module | None) -> torch.nn.Module:
        if model is not None:
            if not isinstance(model, torch.nn.Module):
                raise ConfigError(f"model must be a torch.nn.Module, got {type(model).__name__}.")
            return model
        model_cfg = copy.deepcopy(dict(cfg.model))
        if "type" not in model_cfg:
            model_cfg["type"], model_cfg["import_names"] = self.default_model()
        return create_model(model_cfg)

    # ----- the three modes -------------------------------------------------------------------
    @property
    def cfg(self) -> EasyDict:
        return self._cfg

    @property
    def learn_mode(self) -> Policy.learn_function:
        return Policy.learn_function(
            self._forward_learn,
            self._reset_learn,
            self.__repr__,
            self._monitor_vars_learn,
            self._get_attribute,
            self._set_attribute,
            self._state_dict_learn,
            self._load_learn_state,
        )

    @property
    def collect_mode(self) -> Policy.collect_function:
        return Policy.collect_function(
            self._forward_collect,
            self._process_transition,
            self._get_train_sample,
            self._reset_collect,
            self._get_attribute,
            self._set_attribute,
            self._state_dict_collect,
            self._load_state_dict_collect,
        )

    @property
    def eval_mode(self) -> Policy.eval_function:
        return Policy.eval_function(
            self._forward_eval,
            self._reset_eval,
            self._get_attribute,
            self._set_attribute,
            self._state_dict_eval,
            self._load_state_dict_eval,
        )

    # ----- attributes ------------------------------------------------------------------------
    def _set_attribute(self, name: str, value: Any) -> None:
        """Store ``value`` as the policy's ``_<name>``, which ``get_attribute(name)`` reads back."""
        setattr(self, "_" + name, value)

    def _get_attribute(self, name: str) -> Any:
        """What ``_attribute_getters`` computes for ``name``, else the policy's own ``_<name>`` (its
        model, optimizer, device, or what ``set_attribute`` stored)."""
        getter = self._attribute_getters().get(name)
        if getter is not None:
            return getter()
        try:
            return vars(self)["_" + name]
        except KeyError:
            raise NotImplementedError(f"{type(self).__name__} has no attribute '{name}'.") from None

    def _attribute_getters(self) -> dict[str, Callable[[], Any]]:
        """The attributes ``get_attribute`` computes rather than reads (DI-engine's ``_get_<name>``
        hooks), by name; a policy with more extends the dict."""
        return {
            "batch_size": self._get_batch_size,
            "n_sample": self._get_n_sample,
            "n_episode": self._get_n_episode,
            "nstep": self._get_nstep,
            "priority": self._get_priority,
            "traj_len_inf": self._get_traj_len_inf,
            "transition_with_policy_data": self._get_transition_with_policy_data,
        }

    def _get_batch_size(self) -> int:
        return self._cfg.get("batch_size", self._cfg.learn.get("batch_size"))

    def _get_n_sample(self) -> int | None:
        return self._cfg.get("n_sample", self._cfg.collect.get("n_sample"))

    def _get_n_episode(self) -> int | None:
        return self._cfg.get("n_episode", self._cfg.collect.get("n_episode"))

    def _get_nstep(self) -> int:
        return int(self._cfg.get("nstep", 1))

    def _get_priority(self) -> bool:
        return bool(self._cfg.get("priority", False))

    def _get_traj_len_inf(self) -> bool:
        return bool(self._cfg.get("traj_len_inf", False))

    def _get_transition_with_policy_data(self) -> bool:
        return bool(self._cfg.get("transition_with_policy_data", False))

    def __repr__(self) -> str:
        return f"ding_ray {type(self).__name__}\n{self._model!r}"

    # ----- what subclasses provide -----------------------------------------------------------
    def default_model(self) -> tuple[str, list[str]]:
        """Registered model name and the modules to import so that it is registered."""
        raise NotImplementedError

    def check_spaces(self, obs_shape: tuple[int, ...], action_kind: str, action_dim: int) -> None:
        """Raise ``EnvError`` if the env's spaces do not fit this policy's model config."""
        if action_kind != self.action_space:
            raise EnvError(
                f"{type(self).__name__} needs a {self.action_space} action space, but the env's is "
                f"{action_kind}. Pick a policy for {action_kind} actions or another env."
            )
        model_cfg = self._cfg.model
        want_obs = model_cfg.get("obs_shape")
        if want_obs is not None:
            want = (want_obs,) if isinstance(want_obs, int) else tuple(want_obs)
            if want != tuple(obs_shape):
                fix = list(obs_shape) if len(obs_shape) > 1 else obs_shape[0]
                if len(obs_shape) == 3 and obs_shape[2] < min(obs_shape[:2]):  # (H, W, C) frames
                    first = [obs_shape[2], *obs_shape[:2]]
                    then = "" if list(want) == first else f" and set obs_shape={first}"
                    raise EnvError(
                        f"policy.model.obs_shape is {want_obs} but the env's observations have shape "
                        f"{tuple(obs_shape)}, channels last; ding_ray's conv models take channels first "
                        f"(C, H, W): move the channel axis first in the env (an observation wrapper "
                        f"with np.moveaxis(obs, -1, 0)){then}."
                    )
                raise EnvError(
                    f"policy.model.obs_shape is {want_obs} but the env's observations have shape "
                    f"{tuple(obs_shape)}. Set obs_shape={fix}."
                )
        want_act = model_cfg.get("action_shape")
        if want_act is not None and int(want_act) != action_dim:
            raise EnvError(
                f"policy.model.action_shape is {want_act} but the env has {action_dim} actions. "
                f"Set action_shape={action_dim}."
            )

    def _init_learn(self) -> None:
        raise NotImplementedError

    def _init_collect(self) -> None:
        raise NotImplementedError

    def _init_eval(self) -> None:
        self._eval_model = self._model  # one model for every mode; subclasses may keep their own

    def _forward_learn(self, data: Any) -> dict[str, Any]:
        raise NotImplementedError

    # Collect and eval forwards. DI-engine's hooks are ``_forward_collect`` / ``_forward_eval``,
    # which give DI-engine's types: per env a dict of CPU tensors. A ding_ray policy computes its
    # outputs for all envs at once instead, in ``_collect_columns`` / ``_eval_columns`` (by default
    # ``_eval_tensors`` of the batched observations), and says so with ``columnar_collect`` /
    # ``columnar_eval``: the public forwards then hand the columns out per env, and the ``_numpy``
    # fast path that ding_ray's collectors and evaluators run (``policy.common.numpy_forward``)
    # hands them out as numpy rows and Python numbers. A policy that leaves a flag False overrides
    # that mode's forward; its fast path converts the forward's tensors to numpy.
    columnar_collect = False
    columnar_eval = False

    def _collect_columns(self, data: dict[int, Any], **kwargs: Any) -> tuple[list[int], dict[str, Any]]:
        """``(env ids, {key: batched tensor (or dicts/lists of them)})`` of one collect forward."""
        raise NotImplementedError

    @torch.inference_mode()
    def _eval_columns(self, data: dict[int, Any]) -> tuple[list[int], dict[str, Any]]:
        """``_eval_tensors`` of the envs' observations batched, the eval model in eval mode."""
        env_ids, obs = self._obs_tensor(data, self._eval_model)
        return env_ids, self._eval_tensors(obs)

    def _obs_tensor(self, data: dict[int, Any], model: torch.nn.Module) -> tuple[list[int], torch.Tensor]:
        """``(env ids, their observations as one tensor on the device)``, ``model`` put in eval mode
        for the forward (the learner may share it and leave it in train mode)."""
        env_ids, obs = obs_batch(data)
        set_mode(model, False)
        return env_ids, torch.from_numpy(obs).to(self._device)

    def _eval_tensors(self, obs: torch.Tensor) -> dict[str, Any]:
        """The eval forward of a batch of observation tensors: ``{'action', 'logit'}``. Tensor
        operations only, so that ``torch.jit.trace`` records it whole (``ding_ray.load_policy``'s
        ``act`` and ``ding-ray export`` run it)."""
        raise NotImplementedError

    def _forward_collect(self, data: dict[int, Any], **kwargs: Any) -> dict[int, Any]:
        return per_env(*self._collect_columns(data, **kwargs))

    def _forward_eval(self, data: dict[int, Any], **kwargs: Any) -> dict[int, Any]:
        return per_env(*self._eval_columns(data, **kwargs))

    def _forward_collect_numpy(self, data: dict[int, Any], **kwargs: Any) -> dict[int, Any]:
        if self.columnar_collect:
            return per_env(*self._collect_columns(data, **kwargs), numpy=True)
        return outputs_to_numpy(self._forward_collect(data, **kwargs))

    def _forward_eval_numpy(self, data: dict[int, Any], **kwargs: Any) -> dict[int, Any]:
        if self.columnar_eval:
            return per_env(*self._eval_columns(data, **kwargs), numpy=True)
        return outputs_to_numpy(self._forward_eval(data, **kwargs))

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any, *keys: str) -> dict:
        """``common.transition`` with this policy's ``learn.bootstrap_on_truncation``."""
        bootstrap = self._cfg.learn.bootstrap_on_truncation
        return transition(obs, policy_output, timestep, *keys, bootstrap_on_truncation=bootstrap)

    def _reset_learn(self, data_id: list[int] | None = None) -> None:
        pass

    def _reset_collect(self, data_id: list[int] | None = None) -> None:
        pass

    def _reset_eval(self, data_id: list[int] | None = None) -> None:
        pass

    def _monitor_vars_learn(self) -> list[str]:
        return ["cur_lr", "total_loss"]

    def _state_dict_learn(self) -> dict[str, Any]:
        return {"model": self._learn_model.state_dict(), "optimizer": self._optimizer.state_dict()}

    def _load_learn_state(self, state_dict: dict[str, Any]) -> None:
        """``learn_mode.load_state_dict``: a learn state DI-engine saved has its models renamed and
        its optimizer states re-indexed for this policy's model first."""
        optimizers = {key: opt for key, opt in self._learn_optimizers().items() if key in state_dict}
        self._load_state_dict_learn(learn_state_from_di_engine(self._model, state_dict, optimizers))

    def _learn_optimizers(self) -> dict[str, torch.optim.Optimizer]:
        """The learn mode's optimizers by their key in ``_state_dict_learn``: ``_optimizer`` where the
        policy has one; a policy with other optimizers overrides it."""
        optimizer = getattr(self, "_optimizer", None)
        return {"optimizer": optimizer} if isinstance(optimizer, torch.optim.Optimizer) else {}

    def _load_state_dict_learn(self, state_dict: dict[str, Any]) -> None:
        self._learn_model.load_state_dict(state_dict["model"])
        if "optimizer" in state_dict:
            # torch keeps CPU tensors of a loaded optimizer state as they are: without the copy, a
            # state dict taken from a live policy would share Adam's moments with it.
            self._optimizer.load_state_dict(copy.deepcopy(state_dict["optimizer"]))
            check_optimizer_fits(self._optimizer)

    def _state_dict_collect(self) -> dict[str, Any]:
        return {"model": self._collect_model.state_dict()}

    def _load_state_dict_collect(self, state_dict: dict[str, Any]) -> None:
        self._collect_model.load_state_dict(state_dict["model"], strict=True)

    def _state_dict_eval(self) -> dict[str, Any]:
        return {"model": self._eval_model.state_dict()}

    def _load_state_dict_eval(self, state_dict: dict[str, Any]) -> None:
        self._eval_model.load_state_dict(state_dict["model"], strict=True)


class CommandModePolicy(Policy):
    """A policy that also answers a commander: per-mode settings derived from command info."""

    command_function = namedtuple(
        "command_function", ["get_setting_learn", "get_setting_collect", "get_setting_eval"]
    )
    total_field = {"learn", "collect", "eval", "command"}

    @property
    def command_mode(self) -> CommandModePolicy.command_function:
        return CommandModePolicy.command_function(
            self._get_setting_learn, self._get_setting_collect, self._get_setting_eval
        )

    def _field_initializers(self) -> dict[str, Callable[[], None]]:
        return {**super()._field_initializers(), "command": self._init_command}

    def _init_command(self) -> None:
        pass

    def _get_setting_learn(self, command_info: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _get_setting_collect(self, command_info: dict[str, Any]) -> dict[str, Any]:
        return {}

    def _get_setting_eval(self, command_info: dict[str, Any]) -> dict[str, Any]:
        return {}


def create_policy(cfg: dict, **kwargs: Any) -> Policy:
    """Instantiate the policy registered under ``cfg.type``."""
    return POLICY_REGISTRY.build(cfg["type"], cfg=cfg, **kwargs)


def get_policy_cls(cfg: dict) -> type:
    return POLICY_REGISTRY.get(cfg["type"])


def check_optimizer_fits(optimizer: torch.optim.Optimizer) -> None:
    """Each parameter's loaded moments have its shape; else a ``DataFormatError`` (torch would fail
    later, inside the update). VAC's parameters come in DI-engine's order, critic head before actor
    head; a PPO or IMPALA checkpoint whose optimizer lists the actor head first holds them the other
    way round."""
    for group in optimizer.param_groups:
        for param in group["params"]:
            moments = optimizer.state.get(param, {})
            for key, value in moments.items():
                if isinstance(value, torch.Tensor) and value.dim() and value.shape != param.shape:
                    raise DataFormatError(
                        f"The checkpoint's optimizer state does not fit this model: its {key!r} has shape "
                        f"{tuple(value.shape)} where the parameter has {tuple(param.shape)}. A PPO or "
                        "IMPALA checkpoint whose optimizer lists the actor head before the critic head "
                        "(ding_ray's order is DI-engine's, critic first) does not fit; load it without its "
                        "'optimizer' entry (the weights load by name) to go on with fresh Adam moments."
                    )

"""dizoo's env types on ding_ray: a dizoo config's ``env.type`` (``cartpole``, ``pendulum``, ``mujoco``,
...) names one of DI-engine's env classes, each a wrapper of a gym env; ding_ray runs the gymnasium
env that class wraps. ``gymnasium_config`` changes a config's env type and id (and nothing else)
accordingly, for the ``ding`` command and the compat tests.
"""

from __future__ import annotations

from easydict import EasyDict

from ding_ray.errors import ConfigError

# dizoo env type -> (the env_id a config gives -> the id gymnasium 1.x registers); None: the id
# dizoo's env class uses when the config names none
_ENV_IDS = {
    "cartpole": {None: "CartPole-v0"},
    "pendulum": {None: "Pendulum-v1"},
    "acrobot": {"Acrobot-v1": "Acrobot-v1"},
    "lunarlander": {
        "LunarLander-v2": "LunarLander-v3",
        "LunarLanderContinuous-v2": "LunarLanderContinuous-v3",
    },
    "bipedalwalker": {None: "BipedalWalker-v3", "BipedalWalker-v3": "BipedalWalker-v3"},
    "carracing": {"CarRacing-v2": "CarRacing-v3"},
}

# dizoo's MuJoCo configs name gym's v3 ids, which need mujoco-py; gymnasium 1.x runs v4 and v5 on the
# mujoco bindings. v5 is the same task except Ant: v3's 111 observation features (contact forces of
# every body, the world's too) are only in v4 with use_contact_forces=True (v5 has 105).
_MUJOCO_KWARGS = {"Ant": ("Ant-v4", {"use_contact_forces": True})}

DIZOO_ENV_TYPES = (*_ENV_IDS, "mujoco")


def gymnasium_env(env_type: str, env_id: str | None) -> tuple[str, dict]:
    """The gymnasium id (and ``gymnasium.make`` arguments) of the env that a dizoo env type and the
    ``env.env_id`` of its config stand for."""
    if env_type == "mujoco":
        if not env_id:
            raise ConfigError("A dizoo 'mujoco' env config needs env.env_id (e.g. 'Hopper-v3').")
        name = env_id.rsplit("-v", 1)[0]
        return _MUJOCO_KWARGS.get(name, (name + "-v5", {}))
    ids = _ENV_IDS[env_type]
    if env_id in ids:
        return ids[env_id], {}
    if None not in ids:
        raise ConfigError(
            f"dizoo env type {env_type!r} with env.env_id={env_id!r}: ding_ray maps only "
            f"{sorted(ids)} of it; set create_config.env.type='gymnasium' and a gymnasium id."
        )
    return ids[None], {}


def gymnasium_config(main: EasyDict, create: EasyDict) -> tuple[EasyDict, EasyDict]:
    """``(main, create)`` of a dizoo config with the env type ``'gymnasium'`` (``'atari'``, ding_ray's
    type with DI-engine's keys, for an Atari config) and the gymnasium ``env.env_id`` (for Ant with the
    ``env.kwargs`` that give gym's Ant-v3 observation); ``import_names`` of the env are dropped (they
    name dizoo's modules). A config of any other env type is returned as it is."""
    env_type = (create.get("env") or {}).get("type")
    if env_type == "atari":
        create.env = EasyDict(type="atari")
    elif env_type in DIZOO_ENV_TYPES:
        main.env.env_id, kwargs = gymnasium_env(env_type, main.env.get("env_id"))
        if kwargs:
            main.env.kwargs = kwargs
        create.env = EasyDict(type="gymnasium")
    return main, create

"""DI-engine's names and habits that ding_ray's own code does not need, so that DI-engine's scripts,
dizoo's configs and DI-engine's checkpoints work as they are written.

The core imports none of these modules; each one wraps or registers with the core, and the public
facades a DI-engine user imports import it:

- ``global_task``: the global ``task`` and ``ding_init`` (``ding_ray.framework``)
- ``exchange``: ``ContextExchanger`` and ``ModelExchanger``, no-op stages (``ding_ray.framework.middleware``)
- ``model_loader``, ``storage_loader``: ``FileModelLoader`` and ``FileStorageLoader``, refused when
  built (``ding_ray.framework``)
- ``env_managers_v2``: ``BaseEnvManagerV2`` and ``SubprocessEnvManagerV2``, types ``base_v2`` and
  ``subprocess_v2`` (``ding_ray.envs``)
- ``dizoo_env_keys``: the check of dizoo's env keys, installed on ``GymnasiumEnv`` (``ding_ray.envs``)
- ``dizoo_envs``: dizoo's env types (``cartpole``, ``mujoco``, ...) as the gymnasium envs they wrap
  (the ``ding`` command, ``ding-ray train`` of a config file)
- ``di_engine_names``: DI-engine's parameter names, installed as a translator of
  ``ding_ray.model.foreign_state`` (``ding_ray.model``)
- ``to_di_engine``: the other way, ``save_for_di_engine``: a ding_ray checkpoint DI-engine loads
"""

# The facades that re-export names of this package load first, whichever module of it is imported
# first: a module of this package imported before its facade would meet itself half-built there.
import ding_ray.envs  # noqa: F401
import ding_ray.framework  # noqa: F401

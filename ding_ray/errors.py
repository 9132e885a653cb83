"""Exceptions users can cause. Each message says what went wrong and what to do about it."""


class DingRayError(Exception):
    """Base class of every error ding_ray raises on purpose."""


class ConfigError(DingRayError, KeyError):
    """A config key is unknown, has the wrong type, or a value is out of range."""

    def __str__(self) -> str:  # KeyError would quote the message; keep it readable
        return str(self.args[0]) if self.args else ""


class RegistryError(DingRayError, KeyError):
    """A name asked of a registry (policy type, env id, buffer type, ...) is not registered."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class EnvError(DingRayError):
    """An environment cannot be created or does not fit the policy (spaces, shapes)."""


class ShapeError(DingRayError, ValueError):
    """Data or weights do not have the shape the receiver expects."""


class DataFormatError(DingRayError, ValueError):
    """A file on disk is truncated, tampered with, of another format or of an unknown version."""


class ClusterError(DingRayError, RuntimeError):
    """Ray cannot be reached, or the cluster cannot hold what the pipeline asks for."""


class ActorDiedError(DingRayError, RuntimeError):
    """A Ray actor the pipeline cannot run without has died."""


class NonFiniteError(DingRayError, ValueError):
    """A loss or an input became NaN or infinite; training stops before the weights are ruined."""


class StageError(DingRayError, RuntimeError):
    """A pipeline stage raised; the message names the stage, the original error is the cause."""


class NotSupportedError(DingRayError, NotImplementedError):
    """A DI-engine feature ding_ray does not offer; the message names what to use instead."""


class StorageError(DingRayError, OSError):
    """A file of the run cannot be written (a full disk, no permission); the message names the folder
    and the free space there."""

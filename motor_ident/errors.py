"""Exception types of motor_ident. The library raises these; nodes and the CLI catch them."""


class MotorIdentError(Exception):
    """Base class of every error motor_ident raises on purpose."""


class ConfigError(MotorIdentError, ValueError):
    """A configuration value is wrong; the message names the key, the value and what was expected."""


class ModelError(MotorIdentError):
    """A robot description cannot be turned into a model motor_ident supports."""


class DataError(MotorIdentError, ValueError):
    """Recorded or streamed data is missing, malformed or inconsistent."""


class EstimationError(MotorIdentError):
    """An estimate cannot be computed (no data, no excitation, singular problem)."""


class ClusterError(MotorIdentError):
    """A Dask scheduler cannot be reached, or a parameter store cannot be written."""


class NodeProcessError(MotorIdentError):
    """A node started as its own process did not come up, or exited before it was asked to."""

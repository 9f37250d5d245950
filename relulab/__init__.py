"""relulab: a laboratory for how biases and initialisation shape ReLU networks."""

from importlib import metadata

try:
    __version__ = metadata.version("relulab")
except metadata.PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+source"

__all__ = ["__version__"]

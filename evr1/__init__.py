"""evr1: reinforcement learning from verifiable rewards for video-language models.

Importing `evr1` is cheap: no torch, Ray or vLLM. Heavy parts load when used.
"""

from evr1.errors import ConfigError, Evr1Error
from evr1.problem_types import ProblemType

__version__ = "0.1.0"

__all__ = ["ConfigError", "Evr1Error", "ProblemType", "__version__"]

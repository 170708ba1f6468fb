"""Homeport: project memory, file areas and the project database for AI coding agents, per workspace."""

__version__ = "0.1.0"
__all__ = ["__version__"]

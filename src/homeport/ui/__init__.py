"""The dashboard: server-rendered pages at /ui for people to see, audit and correct a project's memory."""

from homeport.ui.app import build_dashboard

__all__ = ["build_dashboard"]

"""Calls that leave this process: to the owner of a workspace, the daemon, or a team server.

A front end hands this package a tool name, the resolved route and the arguments; it never sees a
tool declaration and never imports `homeport.core` (tests/test_architecture.py), so the decision
whether a call leaves is made once, in the core's pipeline, and the mesh only carries it.
"""

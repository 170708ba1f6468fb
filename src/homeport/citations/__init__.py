"""Citations from memory items to the project's code, and their status now (fresh, moved, changed,
missing, unverifiable): `spans` compares (pure), `symbols` names definitions, `worktree` reads the
workspace's files and git index. The store keeps the anchors (`homeport.store.citations`); the core
anchors them on write and checks them on read (`homeport.core.citing`)."""

__all__: list[str] = []

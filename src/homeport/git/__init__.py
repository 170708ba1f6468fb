"""A project's git repository as memory needs it: where a write is made, and what a branch has merged.

`refs` reads HEAD and refs from the repository's files (no process, a few small reads: it runs on
every write and read); `command` runs the git program with every setting that could start another
program switched off; `topology` asks it the questions whose answers never change (is this commit an
ancestor of that one, does that branch have these patches); `visibility` decides from those answers
whether a reader sees an item written on another branch. Nothing here knows the store.
"""

from homeport.git.refs import Head, Location, Repository, default_branch, find_repository, location_of

__all__ = ["Head", "Location", "Repository", "default_branch", "find_repository", "location_of"]

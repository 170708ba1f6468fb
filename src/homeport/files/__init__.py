"""File areas: the executor and the data it needs, with no permission logic inside.

- `homeport.files.areas`: safe joins, atomic writes, reads, deletes, listings in one area
  (``<data dir>/organizations/{org}/workspaces/{folder_id}/{private|shared}``);
- `homeport.files.directory`: organizations, teams, agents and leadership, from a TOML file;
- `homeport.files.tokens`: hashed bearer tokens for agents calling over HTTP.

Who may do what is decided before these are called, by `homeport.policy.file_areas`.
"""

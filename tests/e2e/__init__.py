"""End-to-end tests: real homeport processes over stdio and Streamable HTTP."""

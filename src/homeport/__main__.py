"""`python -m homeport` runs the `homeport` command."""

from homeport.cli import main

main()

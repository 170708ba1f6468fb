"""Tests of the project database layer (homeport.projectdb)."""

"""Reviewer pages: server-rendered HTML over the service's functions and store (no second code
path for review or sign-off rules), and the standalone one-file draft report."""

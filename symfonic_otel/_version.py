"""The package version, in a module of its own so the handler can name it without importing
the package's ``__init__`` (which imports the handler)."""

__version__ = "0.1.0"

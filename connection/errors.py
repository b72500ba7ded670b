"""Errors of setting up a connection, under one root: the programs that share this package catch it beside
their own error roots."""

from __future__ import annotations

from topics.errors import PlacementStreamError

__all__ = ["ConnectionSetupError", "CredentialsError", "KubeConfigError", "SettingsError"]


class ConnectionSetupError(PlacementStreamError):
    """Root of the errors of this package: a client cannot be built from what it was given."""


class SettingsError(ConnectionSetupError):
    """A setting is missing or invalid; the message names its source, the field and the problem."""


class CredentialsError(ConnectionSetupError):
    """A credential or certificate file named in the settings cannot be read; the message names the setting and
    the file, never the content."""


class KubeConfigError(ConnectionSetupError):
    """A kubeconfig cannot be read or does not name the context asked for; the message names the file."""

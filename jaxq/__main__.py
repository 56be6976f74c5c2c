"""``python -m jaxq`` is the ``jaxq`` command."""

from jaxq.cli import command

command()

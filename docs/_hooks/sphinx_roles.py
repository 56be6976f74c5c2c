"""mkdocs hook: show Sphinx cross-reference roles of the docstrings as code.

The docstrings name objects as ``:class:`jaxq.mc.result.SimResult``` (readable in ``help()`` and in the
source); mkdocstrings renders the backticked part as code and leaves the role prefix as text. This hook drops
the prefix, so the API reference reads ``jaxq.mc.result.SimResult`` in code type.
"""

import re

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|obj|exc):(?=<code>)")


def on_page_content(html, **kwargs):
    return _ROLE.sub("", html)

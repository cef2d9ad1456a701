"""The studies netloop is built from, reproduced: ``netloop reproduce STUDY``.

One module per study; each defines ``STUDY`` (a :class:`netloop.studies.core.Study`): its parts
(the experiment files that reproduce its tables and figures) and the ``compare`` function that
sets netloop's numbers against the published ones (:mod:`netloop.studies.core` holds the types
and the verdict rules). A study module imports only the standard library and PyYAML at import
time, so ``netloop reproduce --list`` works on a fresh clone.
"""
from __future__ import annotations

import importlib

#: study word -> module (the order of ``netloop reproduce --list``)
STUDY_MODULES = {
    "pound": "netloop.studies.pound",
    "jordan": "netloop.studies.jordan",
    "maruyama": "netloop.studies.maruyama",
    "sanap": "netloop.studies.sanap",
}


class UnknownStudy(KeyError):
    pass


def load(name: str):
    """The ``Study`` of ``name``; UnknownStudy listing the studies when there is none."""
    if name not in STUDY_MODULES:
        raise UnknownStudy(f"no study {name!r}; the studies: {', '.join(STUDY_MODULES)}")
    return importlib.import_module(STUDY_MODULES[name]).STUDY


def available() -> dict:
    """{name: Study or the reason it cannot be loaded}, every registered study."""
    out: dict = {}
    for name in STUDY_MODULES:
        try:
            out[name] = load(name)
        except ImportError as err:
            out[name] = f"not available: {err}"
    return out

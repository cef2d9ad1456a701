"""A registry of the implementations of one interface, chosen by a word in a configuration
file (loop kinds, simulators, transports): a fresh instance for every lookup, and an error
that lists the allowed words."""
from __future__ import annotations

from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, what: str, factories: dict[str, Callable[[], T]]):
        self.what, self._factories = what, dict(factories)

    def names(self) -> list[str]:
        """The accepted words, in a stable order."""
        return list(self._factories)

    def get(self, name: str) -> T:
        """A new instance of the implementation called ``name``; KeyError lists the allowed names."""
        try:
            factory = self._factories[name]
        except KeyError:
            raise KeyError(f"unknown {self.what} {name!r}; allowed: {', '.join(self._factories)}") from None
        return factory()

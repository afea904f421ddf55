"""A resource that is its own context manager: `with Resource(...) as r:` closes it at the end."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Self


class Closing(ABC):
    """`__enter__` gives the object itself and `__exit__` calls its `close`, so a class that holds
    a file or a connection only writes `close` (`contextlib.AbstractContextManager` would type
    `__enter__` as the base class, not the subclass)."""

    @abstractmethod
    def close(self) -> None:
        """Release what the object holds."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

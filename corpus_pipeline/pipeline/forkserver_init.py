"""The forkserver's tie to the process that started it: imported first by the server (the head
of `processes.PRELOAD`) and by nothing else.

Without it the server outlives a `kill -9` of its starter: each process it forked holds the
server's "alive" pipe, so the server never sees its starter go, and they never see the server
go (~1.5 GB of workers left running). With it the server exits when its starter dies, and
every process it forks gets SIGKILL when the server goes: set in the child right after the fork,
before it unpickles (and imports) anything, so no worker is ever without it.

Linux sends the parent-death signal when the *thread* that started the server ends, which need
not be the end of the process (the upload API may start it from a worker or server thread). So
the signal is a catchable one, and the server leaves only when it was really orphaned: its
parent is no longer the process that started it.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

from corpus_pipeline.pipeline import processes

_SIGNAL = signal.SIGUSR1
_SERVER = os.getpid()
_STARTER = os.getppid()


def _on_parent_death(signum: int, frame: FrameType | None) -> None:
    if os.getpid() == _SERVER and os.getppid() != _STARTER:
        os._exit(0)


_forker = 0  # the pid of the process forking, read in the child (the hooks are inherited)


def _before_fork() -> None:
    global _forker
    _forker = os.getpid()


def _in_child() -> None:
    """A process the server forks dies with the server (and at once if it already went), and
    has the default action for the server's signal again; processes forked further down
    (a parse worker's helper) are left to their own parent."""
    if _forker != _SERVER:
        return
    signal.signal(_SIGNAL, signal.SIG_DFL)
    if processes.die_with_parent(signal.SIGKILL) and os.getppid() != _SERVER:
        os._exit(1)


if processes.FORKSERVER_COMMAND in processes.cmdline(_SERVER):  # only ever in the server
    signal.signal(_SIGNAL, _on_parent_death)
    os.register_at_fork(before=_before_fork, after_in_child=_in_child)
    if processes.die_with_parent(_SIGNAL) and os.getppid() != _STARTER:
        os._exit(0)  # the starter died before the signal was set

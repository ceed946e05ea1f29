"""CPU time from ``/proc``: of a process, of a PostgreSQL server's whole tree, of the box.

Shared by the benchmarks that weigh PostgreSQL's cost (``bench_pgcost``,
``bench_scaleout``): each counted it the same way, so it is written once.
"""

from __future__ import annotations

import os

__all__ = ["box_cpu", "children_of", "cpu_seconds", "postgres_cpu", "task_cpu"]

_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int, children: bool = False) -> float:
    """utime + stime of a process (and of its reaped children), in seconds; 0 if gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / _TICKS


def task_cpu(pid: int) -> float:
    """CPU seconds of a one-threaded process (a PostgreSQL process) to the nanosecond.

    ``/proc/<pid>/schedstat`` holds the scheduler's own count of the time the task
    ran; ``/proc/<pid>/stat`` counts in ticks of 10 ms, and a run of 150 lifecycles
    is some 60 ticks over five processes, each read twice: a tick either way at
    every read moved a ratio of two runs by up to a tenth. Ticks where there is no
    schedstat (a kernel without ``CONFIG_SCHED_INFO``).
    """
    try:
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as stat:
            return int(stat.read().split()[0]) / 1e9
    except (OSError, IndexError, ValueError):
        return cpu_seconds(pid)


def children_of(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                    if int(stat.read().rpartition(")")[2].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


def postgres_cpu(postmaster: int) -> float:
    """The whole server's CPU so far: the postmaster, its live and its reaped children."""
    return cpu_seconds(postmaster, children=True) + sum(
        cpu_seconds(pid) for pid in children_of(postmaster)
    )


def box_cpu() -> float:
    """CPU seconds spent by the whole box so far, every CPU, every process and the kernel.

    Our processes' ``/proc/<pid>/stat`` miss the kernel's loopback and
    softirq work and whatever else shares the box (other users' tests): on a
    shared 2-core machine that was half a CPU, enough to hide that the box
    was already full at one service.
    """
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(f) for f in stat.readline().split()[1:]]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return (sum(ticks[:8]) - idle) / _TICKS  # guest time is already inside user

"""Deadlock check of the threadblock-serialized execution.

The runtime runs each threadblock's steps strictly in order. A step first waits for its
dependency (``depid``/``deps``: that threadblock has finished that step), then receives (if it
receives; its message must have been sent), then sends (if it sends). A connection (sender,
receiver, channel) buffers ``buffer_slots`` messages: a send waits while that many are sent
and not yet received. `find_deadlock` plays this out; when threadblocks remain stuck it
follows the waits from one of them until they close a cycle and describes it.
"""

from __future__ import annotations

from collections import deque

from backends.msccl_xml.graph import Graph
from backends.msccl_xml.model import XAlgo, XStep

TbKey = tuple[int, int]  # (rank, threadblock id)


def _describe(step: XStep, rank: int, tb: int, s: int) -> str:
    return f"rank {rank} threadblock {tb} step {s} ({step.type})"


def find_deadlock(algo: XAlgo, g: Graph, buffer_slots: int) -> str | None:
    """None if every threadblock finishes, else a description of a cycle of waits."""
    tbs: dict[TbKey, list[XStep]] = {}
    chan_of: dict[TbKey, int] = {}
    send_at: dict[int, tuple[TbKey, int]] = {}
    recv_at: dict[int, tuple[TbKey, int]] = {}
    for gpu in algo.gpus:
        for tb in gpu.tbs:
            key = (gpu.id, tb.id)
            tbs[key] = tb.steps
            chan_of[key] = tb.chan
            for s, step in enumerate(tb.steps):
                if step.send_msg >= 0:
                    send_at[step.send_msg] = (key, s)
                if step.recv_msg >= 0:
                    recv_at[step.recv_msg] = (key, s)

    def conn(m: int) -> tuple[int, int, int]:
        msg = g.messages[m]
        return (msg.src, msg.dst, chan_of[send_at[m][0]])

    pc = dict.fromkeys(tbs, 0)
    phase = dict.fromkeys(tbs, 0)  # 0 dependency, 1 receive, 2 send
    queues: dict[tuple[int, int, int], deque[int]] = {}
    waiters: dict[object, set[TbKey]] = {}
    ready = deque(sorted(tbs))

    def wait(on: object, key: TbKey) -> None:
        waiters.setdefault(on, set()).add(key)

    def wake(on: object) -> None:
        ready.extend(sorted(waiters.pop(on, ())))

    while ready:
        key = ready.popleft()
        steps = tbs[key]
        rank = key[0]
        while pc[key] < len(steps):
            step = steps[pc[key]]
            if phase[key] == 0:
                if step.depid >= 0 and pc[(rank, step.depid)] <= step.deps:
                    wait(("tb", rank, step.depid), key)
                    break
                phase[key] = 1
            if phase[key] == 1:
                if step.recv_msg >= 0:
                    c = conn(step.recv_msg)
                    q = queues.get(c)
                    if not q:
                        wait(("sent", c), key)
                        break
                    assert q[0] == step.recv_msg, "messages would pair differently"
                    q.popleft()
                    wake(("space", c))
                phase[key] = 2
            if step.send_msg >= 0:
                c = conn(step.send_msg)
                q = queues.setdefault(c, deque())
                if len(q) >= buffer_slots:
                    wait(("space", c), key)
                    break
                q.append(step.send_msg)
                wake(("sent", c))
            pc[key] += 1
            phase[key] = 0
            wake(("tb", rank, key[1]))
    stuck = [k for k in sorted(tbs) if pc[k] < len(tbs[k])]
    if not stuck:
        return None

    def waits_for(key: TbKey) -> tuple[TbKey, str]:
        rank = key[0]
        s = pc[key]
        step = tbs[key][s]
        if phase[key] == 0:
            return (
                rank,
                step.depid,
            ), f"waits for threadblock {step.depid} to finish step {step.deps}"
        if phase[key] == 1:
            other = send_at[step.recv_msg][0]
            return other, f"waits for a message from rank {other[0]} threadblock {other[1]}"
        c = conn(step.send_msg)
        front = queues[c][0]
        other = recv_at[front][0]
        return other, (
            f"waits for rank {other[0]} threadblock {other[1]} to receive an earlier message "
            f"on channel {c[2]} (buffer full)"
        )

    seen: dict[TbKey, int] = {}
    path: list[TbKey] = []
    key = stuck[0]
    while key not in seen:
        seen[key] = len(path)
        path.append(key)
        key = waits_for(key)[0]
    cycle = path[seen[key] :]
    parts = []
    for k in cycle:
        why = waits_for(k)[1]
        parts.append(f"{_describe(tbs[k][pc[k]], k[0], k[1], pc[k])} {why}")
    return "; ".join(parts)

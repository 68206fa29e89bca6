"""The load scenarios' drivers (``dlbench_client.load``, src/load/load_generator.h): single
stream, multi stream and offline on the calling thread, and the server's issue thread, stream
workers and flush thread."""

from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

from .load_schedule import QuerySchedule, ScheduledQuery, decide_batch, sample_indices
from .load_settings import LoadSettings

_clock_gettime_ns = time.clock_gettime_ns
_CLOCK_MONOTONIC = time.CLOCK_MONOTONIC

#: Records are sent every FLUSH_RECORDS records or FLUSH_INTERVAL_NS, as STEPS are.
FLUSH_RECORDS = 1024
FLUSH_INTERVAL_NS = 50_000_000
#: The last stretch of a wait for a scheduled time is spun rather than slept: a timed wake-up is
#: tens of microseconds late, and lateness counts against the server (MonotonicLoadClock's 100 us).
SPIN_NS = 100_000
#: After the last issue, how long the server's outstanding queries may take to complete.
DRAIN_TIMEOUT_NS = 10_000_000_000


# -- the driver -----------------------------------------------------------------------------------
class QueryPhases(NamedTuple):
    """What ``issue`` may return: the durations (ns) of the work that served the batch, as far as
    it measured them; None is absent (not zero). They fill the query records' decomposition
    (docs/load.md, "Latency decomposition"): for a query served in several batches (offline) the
    sums over its batches."""

    host_pre_ns: Optional[int] = None
    h2d_ns: Optional[int] = None
    compute_ns: Optional[int] = None
    d2h_ns: Optional[int] = None
    host_post_ns: Optional[int] = None


class LoadResult(NamedTuple):
    """How a load run ended: ``reason`` for DONE (stopped, max_steps: ``limits.max_steps`` queries,
    max_time, too_many_outstanding; peak_search when a peak search ended by its own rule), the
    queries issued (DONE's count), and what EXTRAS carries under ``info.load`` (a peak search's
    report), or None."""

    reason: str
    queries: int
    info: Optional[Dict[str, Any]] = None


IssueFn = Callable[[List[int]], Optional[QueryPhases]]

_local = threading.local()


def current_stream() -> int:
    """The server stream (0 .. streams - 1) whose worker thread is calling ``issue``; 0 in the other
    scenarios. A GPU runner picks its CUDA stream by it."""
    return getattr(_local, "stream", 0)


def _add_phases(total: Optional[QueryPhases], part: Optional[QueryPhases]) -> Optional[QueryPhases]:
    if part is None:
        return total
    if total is None:
        return part
    return QueryPhases(*(None if a is None and b is None else (a or 0) + (b or 0) for a, b in zip(total, part)))


def _sleep_until(due_ns: int, stopped: Callable[[], bool]) -> bool:
    """Waits until CLOCK_MONOTONIC reaches ``due_ns``: sleeps in slices of at most the flush
    interval (asking ``stopped`` after each), spins the last SPIN_NS. False when stopped."""
    clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
    sleep = time.sleep
    while True:
        left = due_ns - clock(mono)
        if left <= 0:
            return True
        if left > SPIN_NS:
            sleep(min(left - SPIN_NS, FLUSH_INTERVAL_NS) * 1e-9)
            if stopped():
                return False


def _run_closed(session: Any, s: LoadSettings, issue: IssueFn, limits: Any, library_size: int) -> LoadResult:
    """Single stream, multi stream and offline, on the calling thread."""
    schedule = QuerySchedule(s, library_size)
    clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
    record = session.record_query
    max_queries = max(int(limits.max_steps), 1)
    max_ns = int(limits.max_time_s * 1e9)
    interval = s.query_interval_ns
    offline = s.scenario == "offline"
    batch = s.max_batch
    batch_samples = min(batch, s.samples_per_query)

    def stopped() -> bool:
        session.poll_stop()
        return bool(session.stop_requested)

    n = 0
    reason = "stopped"
    start = clock(mono)
    try:
        while True:
            # Everything the query needs is made before its stamps.
            q = schedule.next()
            samples = sample_indices(q, library_size)
            parts = [samples[i:i + batch] for i in range(0, len(samples), batch)] if offline else None
            if interval is not None:
                due = start + q.offset_ns
                if due - start >= max_ns:
                    reason = "max_time"
                    break
                if not _sleep_until(due, stopped):
                    reason = "stopped"
                    break
                issued = clock(mono)
                scheduled = due
            else:
                issued = clock(mono)
                scheduled = issued
            if parts is None:
                phases = issue(samples)
                done = clock(mono)
            else:
                phases = None
                for part in parts:
                    phases = _add_phases(phases, issue(part))
                done = clock(mono)
            record(n, scheduled, issued, done, q.samples, batch_samples, phases)
            n += 1
            if session.stop_requested:
                reason = "stopped"
                break
            if n >= max_queries:
                reason = "max_steps"
                break
            if done - start >= max_ns:
                reason = "max_time"
                break
    finally:
        session.flush_queries()
    return LoadResult(reason, n)


class _ServerRun:
    """The server scenario: Poisson arrivals on the calling thread, ``streams`` batching workers,
    a flush thread. Per-query state lives in pre-sized lists indexed by ``id & mask`` (a ring of
    max_outstanding slots), written by one thread at a time."""

    def __init__(self, session: Any, s: LoadSettings, issue: IssueFn, library_size: int) -> None:
        self.session = session
        self.s = s
        self.issue = issue
        self.schedule = QuerySchedule(s, library_size)
        self.pending: Optional[ScheduledQuery] = None  # drawn, not issued when the last run ended
        self.next_id = 0
        #: When a list: every delivered record's (latency, scheduled, issued) is appended (a probe's).
        self.kept: Optional[List[tuple]] = None
        cap = 1
        while cap < max(s.max_outstanding, 2):
            cap <<= 1
        self.cap = cap
        self.mask = cap - 1
        self.sample = [0] * cap
        self.scheduled = [0] * cap
        self.issued_ns = [0] * cap
        self.done_ns = [0] * cap
        self.done_id = [-1] * cap  # the id whose record the slot holds once complete
        self.batch = [0] * cap
        self.phases: List[Optional[QueryPhases]] = [None] * cap
        self.queue: "collections.deque[int]" = collections.deque()
        self.cv = threading.Condition()
        self.flushing = False
        self.quit = False
        self.stop = False
        self.failure: Optional[BaseException] = None
        self.issued = 0  # ids below this were issued
        self.flushed = 0  # ids below this were sent
        self.completed = [0] * s.streams  # per worker, so that each counter has one writer
        self.flush_wake = threading.Event()
        self.flush_quit = False

    # The stream workers -------------------------------------------------------------------------
    def worker(self, stream: int) -> None:
        _local.stream = stream
        clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
        s, cv, queue, mask = self.s, self.cv, self.queue, self.mask
        max_batch, timeout = s.max_batch, s.batch_timeout_ns
        issued_ns, sample = self.issued_ns, self.sample
        done_ns, done_id, batch_of, phases_of = self.done_ns, self.done_id, self.batch, self.phases
        issue = self.issue
        cv.acquire()
        try:
            while True:
                if not queue:
                    if self.quit:
                        return
                    cv.wait()
                    continue
                queued = len(queue)
                fit = queued if queued < max_batch else max_batch  # server queries have one sample each
                now = clock(mono)
                d = decide_batch(queued, fit, fit, issued_ns[queue[0] & mask], now, max_batch, timeout,
                                 self.flushing or self.quit or self.failure is not None)
                if not d.dispatch:
                    cv.wait(max(d.wake_at_ns - now, 1000) * 1e-9)
                    continue
                ids = [queue.popleft() for _ in range(d.queries)]
                skip = self.failure is not None
                cv.release()
                try:
                    phases = None
                    if not skip:
                        try:
                            phases = issue([sample[i & mask] for i in ids])
                        except BaseException as e:  # reported by the issue thread after the drain
                            with cv:
                                if self.failure is None:
                                    self.failure = e
                                self.stop = True
                    t = clock(mono)
                    for i in ids:
                        slot = i & mask
                        done_ns[slot] = t
                        batch_of[slot] = d.samples
                        phases_of[slot] = phases
                        done_id[slot] = i
                    self.completed[stream] += len(ids)
                finally:
                    cv.acquire()
        finally:
            cv.release()

    # The flush thread ---------------------------------------------------------------------------
    def deliver(self) -> None:
        """Sends the completed prefix of records not yet sent (one thread at a time)."""
        record, mask = self.session.record_query, self.mask
        i, issued = self.flushed, self.issued
        while i < issued:
            slot = i & mask
            if self.done_id[slot] != i:
                break
            record(i, self.scheduled[slot], self.issued_ns[slot], self.done_ns[slot], 1, self.batch[slot],
                   self.phases[slot])
            if self.kept is not None:
                self.kept.append((self.done_ns[slot] - self.scheduled[slot], self.scheduled[slot],
                                  self.issued_ns[slot]))
            i += 1
        self.flushed = i
        self.session.flush_queries()
        if self.session.stop_requested:
            self.stop = True

    def flusher(self) -> None:
        while not self.flush_quit:
            self.flush_wake.wait(FLUSH_INTERVAL_NS * 1e-9)
            self.flush_wake.clear()
            if self.flush_quit:
                return
            try:
                self.deliver()
            except BaseException as e:  # a record the session refused: the run ends, the issue thread raises it
                with self.cv:
                    if self.failure is None:
                        self.failure = e
                    self.stop = True
                return

    # The issue thread ---------------------------------------------------------------------------
    def set_target_qps(self, rate: float) -> None:
        """The Poisson rate of the next run, its offsets restarting at 0 (a peak-search probe); the
        schedule's random streams continue (``QuerySchedule.restart``)."""
        self.schedule.restart(rate)
        self.pending = None

    def run(self, max_queries: int, max_ns: int) -> "_Run":
        """Issues queries from the current id until STOP, ``max_queries`` issued in this run, the
        next arrival ``max_ns`` or more after the run's start, or the ring full of outstanding
        queries; then drains (raising what ``issue`` raised). May be called again: ids continue."""
        clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
        cv, queue, mask, cap = self.cv, self.queue, self.mask, self.cap
        self.flushing = self.quit = False
        self.flush_quit = False
        workers = [threading.Thread(target=self.worker, args=(k,), name="dlbench-load-stream-%d" % k, daemon=True)
                   for k in range(self.s.streams)]
        flusher = threading.Thread(target=self.flusher, name="dlbench-load-flush", daemon=True)
        for t in workers:
            t.start()
        flusher.start()
        stopped = lambda: self.stop  # noqa: E731
        reason = "stopped"
        first = n = self.next_id
        start = clock(mono)
        try:
            while True:
                if self.stop:
                    reason = "stopped"
                    break
                if n - first >= max_queries:
                    reason = "max_steps"
                    break
                if self.pending is None:
                    self.pending = self.schedule.next()
                q = self.pending
                due = start + q.offset_ns
                if due - start >= max_ns:
                    reason = "max_time"
                    break
                # A free slot: the one `cap` queries back must have been sent.
                while n - self.flushed >= cap and not self.stop:
                    if n - sum(self.completed) >= cap:
                        reason = "too_many_outstanding"
                        break
                    self.flush_wake.set()
                    time.sleep(0.0005)
                if reason == "too_many_outstanding":
                    break
                if self.stop:
                    reason = "stopped"
                    break
                slot = n & mask
                self.sample[slot] = q.first_sample
                self.scheduled[slot] = due
                if not _sleep_until(due, stopped):
                    reason = "stopped"
                    break
                # The query's timed path: the issue stamp, then into the batcher's queue.
                self.issued_ns[slot] = clock(mono)
                with cv:
                    self.issued = n + 1
                    queue.append(n)
                    cv.notify()
                self.pending = None
                n += 1
        finally:
            self.next_id = n
            self._drain(n, workers, flusher)
        return _Run(reason, first, n - first)

    def _drain(self, issued: int, workers: Sequence[threading.Thread], flusher: threading.Thread) -> None:
        """Runs what is queued without waiting for the timeout, waits (at most DRAIN_TIMEOUT_NS) for
        every issued query, stops the threads and sends the last records. Raises what ``issue``
        raised, or RuntimeError naming the first query that never completed."""
        clock, mono = _clock_gettime_ns, _CLOCK_MONOTONIC
        with self.cv:
            self.flushing = True
            self.cv.notify_all()
        deadline = clock(mono) + DRAIN_TIMEOUT_NS
        while sum(self.completed) < issued and clock(mono) < deadline:
            time.sleep(0.001)
        with self.cv:
            self.quit = True
            self.cv.notify_all()
        for t in workers:
            t.join(timeout=1.0)
        self.flush_quit = True
        self.flush_wake.set()
        flusher.join()
        try:
            self.deliver()
        except BaseException as e:
            if self.failure is None:
                self.failure = e
        if self.failure is not None:
            raise self.failure
        completed = sum(self.completed)
        if completed < issued:
            raise RuntimeError("query %d was issued and never completed (%d outstanding after a drain of %d ms)"
                               % (self.flushed, issued - completed, DRAIN_TIMEOUT_NS // 1_000_000))


class _Run(NamedTuple):
    end: str  # stopped, max_steps, max_time, too_many_outstanding
    first_id: int
    issued: int


def _run_server(session: Any, s: LoadSettings, issue: IssueFn, limits: Any, library_size: int) -> LoadResult:
    server = _ServerRun(session, s, issue, library_size)
    r = server.run(max(int(limits.max_steps), 1), int(limits.max_time_s * 1e9))
    return LoadResult(r.end, r.issued)

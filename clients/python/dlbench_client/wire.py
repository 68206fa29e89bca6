"""The runner protocol's wire format, as pure functions over bytes (docs/protocol.md).

A stream of frames in each direction::

    u32 payload_length | u16 type | u16 reserved (0) | payload      (little-endian)

Payloads are UTF-8 JSON objects, except STEPS (``u32 rank | u32 count`` then ``count`` step records
of 48 bytes) and QUERIES (``u32 rank | u32 count | u32 version | u32 record_bytes`` then ``count``
query records of 88 bytes, inference under load). This module mirrors src/protocol/wire.h; nothing
here touches a file descriptor, so every rule can be tested on bytes.
"""

from __future__ import annotations

import enum
import json
import math
import struct
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

#: The protocol this client speaks; must equal ``kProtocolVersion`` in src/protocol/wire.h.
PROTOCOL_VERSION = 1

#: A frame whose payload is longer is a protocol violation (``kMaxPayloadBytes``).
MAX_PAYLOAD_BYTES = 64 << 20

HEADER = struct.Struct("<IHH")  # payload length, type, reserved
STEPS_HEADER = struct.Struct("<II")  # rank, count
STEP_RECORD = struct.Struct("<qqqqqII")  # start, end, data_wait, compute, comm (ns), samples, present
assert STEP_RECORD.size == 48, "a step record is 48 bytes on the wire"
QUERIES_HEADER = struct.Struct("<IIII")  # rank, count, version, record_bytes
# query_id; scheduled, issued, completed; host_pre, h2d, compute, d2h, host_post (ns); samples,
# batch_samples, present, reserved (record::QueryRecord in src/record/query.h)
QUERY_RECORD = struct.Struct("<Qqqqqqqqq" "IIII")
assert QUERY_RECORD.size == 88, "a version-1 query record is 88 bytes on the wire"

#: The QUERIES layout this client writes and reads (``kQueriesVersion``); a reader accepts records
#: of ``QUERY_RECORD.size`` to ``MAX_QUERY_RECORD_BYTES`` bytes (longer ones: fields appended later).
QUERIES_VERSION = 1
MAX_QUERY_RECORD_BYTES = 4096

#: Bits of a step record's ``present`` field: which optional phase durations carry a value.
HAS_DATA_WAIT = 1 << 0
HAS_COMPUTE = 1 << 1
HAS_COMM = 1 << 2

#: Bits of a query record's ``present`` field (``QueryFieldBits`` in src/record/query.h).
QUERY_HAS_HOST_PRE = 1 << 0
QUERY_HAS_H2D = 1 << 1
QUERY_HAS_COMPUTE = 1 << 2
QUERY_HAS_D2H = 1 << 3
QUERY_HAS_HOST_POST = 1 << 4
QUERY_FIELD_MASK = 0x1F

_U32_MAX = 2**32 - 1
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


class MessageType(enum.IntEnum):
    """Frame types (``MessageType`` in wire.h). A value outside 1..10 is a protocol violation."""

    HELLO = 1  # runner -> orchestrator: who the runner is, versions, devices
    CONFIGURE = 2  # orchestrator -> runner: the cell's parameters, seed, limits
    READY = 3  # runner -> orchestrator: setup done, the effective parameters
    STEPS = 4  # runner -> orchestrator: a batch of step records (binary)
    MEMORY = 5  # runner -> orchestrator: an allocator/RSS snapshot with a label
    EXTRAS = 6  # runner -> orchestrator: extra metrics and facts about the cell
    ERROR = 7  # runner -> orchestrator: {kind, message}; ends the cell
    DONE = 8  # runner -> orchestrator: the runner ends normally; nothing follows
    STOP = 9  # orchestrator -> runner: stop stepping, flush, report, send DONE
    QUERIES = 10  # runner -> orchestrator: a batch of query records (binary; inference under load)


#: The error kinds of ERROR, and the outcome the orchestrator records for each.
ERROR_KINDS = ("oom", "invalid", "unsupported", "internal")

#: The reasons DONE may carry; for a load cell also ``too_many_outstanding`` (its system under test
#: fell so far behind the schedule that the driver stopped issuing) and ``peak_search`` (a peak
#: search that ended by its own rule) (docs/load.md).
DONE_REASONS = ("stopped", "max_steps", "max_time", "too_many_outstanding", "peak_search")


class ProtocolError(Exception):
    """The byte stream broke a rule of the protocol; it cannot be trusted after this."""


@dataclass(frozen=True)
class Frame:
    """One decoded frame: its type and raw payload bytes."""

    type: MessageType
    payload: bytes


@dataclass(frozen=True)
class StepRecord:
    """One step as the runner saw it. Times are CLOCK_MONOTONIC nanoseconds; a phase duration of
    ``None`` is absent (not zero) and clears its bit in ``present`` on the wire."""

    start_ns: int
    end_ns: int
    samples: int
    data_wait_ns: Optional[int] = None
    compute_ns: Optional[int] = None
    comm_ns: Optional[int] = None


@dataclass(frozen=True)
class QueryRecord:
    """One query as the load driver recorded it (docs/protocol.md "Query record"). Times are
    CLOCK_MONOTONIC nanoseconds; latency is ``completed_ns - scheduled_ns``. A decomposition
    duration of ``None`` is absent (its ``present`` bit clear), not zero."""

    query_id: int
    scheduled_ns: int
    issued_ns: int
    completed_ns: int
    samples: int
    batch_samples: int = 0
    host_pre_ns: Optional[int] = None
    h2d_ns: Optional[int] = None
    compute_ns: Optional[int] = None
    d2h_ns: Optional[int] = None
    host_post_ns: Optional[int] = None


def present_bits(data_wait_ns: Optional[int], compute_ns: Optional[int], comm_ns: Optional[int]) -> int:
    """The ``present`` field for the given optional phase durations."""
    bits = 0
    if data_wait_ns is not None:
        bits |= HAS_DATA_WAIT
    if compute_ns is not None:
        bits |= HAS_COMPUTE
    if comm_ns is not None:
        bits |= HAS_COMM
    return bits


def encode_json_payload(body: Mapping[str, Any]) -> bytes:
    """UTF-8 JSON of ``body``. Raises ValueError for NaN or infinity (JSON has neither, and the
    orchestrator's parser would reject the frame) and for a payload over MAX_PAYLOAD_BYTES."""
    if not isinstance(body, Mapping):
        raise TypeError("a JSON payload must be an object (a mapping), got %s" % type(body).__name__)
    try:
        payload = json.dumps(body, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except ValueError as e:
        raise ValueError("payload holds a NaN or infinite number, which JSON cannot carry: %s" % e) from e
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise ValueError("payload of %d bytes exceeds the protocol's %d" % (len(payload), MAX_PAYLOAD_BYTES))
    return payload


def encode_frame(msg_type: MessageType, payload: bytes) -> bytes:
    """Header plus payload."""
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise ValueError("payload of %d bytes exceeds the protocol's %d" % (len(payload), MAX_PAYLOAD_BYTES))
    return HEADER.pack(len(payload), int(msg_type), 0) + payload


def encode_json_frame(msg_type: MessageType, body: Mapping[str, Any]) -> bytes:
    """A whole JSON frame (``AppendJsonFrame``)."""
    return encode_frame(msg_type, encode_json_payload(body))


def check_step(start_ns: int, end_ns: int, samples: int, data_wait_ns: Optional[int] = None,
               compute_ns: Optional[int] = None, comm_ns: Optional[int] = None) -> None:
    """Raises ValueError for a record the orchestrator would call a violation or that does not fit
    the wire's integer widths."""
    if end_ns < start_ns:
        raise ValueError("step ends (%d ns) before it starts (%d ns)" % (end_ns, start_ns))
    if not 0 <= samples <= _U32_MAX:
        raise ValueError("samples must be in 0..%d, got %d" % (_U32_MAX, samples))
    for name, value in (("start_ns", start_ns), ("end_ns", end_ns), ("data_wait_ns", data_wait_ns),
                        ("compute_ns", compute_ns), ("comm_ns", comm_ns)):
        if value is not None and not _I64_MIN <= value <= _I64_MAX:
            raise ValueError("%s=%d does not fit a signed 64-bit integer" % (name, value))


def encode_steps_frame(rank: int, records: Sequence[StepRecord]) -> bytes:
    """A whole STEPS frame (``AppendStepsFrame``); every record is checked first."""
    parts = [STEPS_HEADER.pack(rank, len(records))]
    for r in records:
        check_step(r.start_ns, r.end_ns, r.samples, r.data_wait_ns, r.compute_ns, r.comm_ns)
        parts.append(STEP_RECORD.pack(r.start_ns, r.end_ns, r.data_wait_ns or 0, r.compute_ns or 0,
                                      r.comm_ns or 0, r.samples,
                                      present_bits(r.data_wait_ns, r.compute_ns, r.comm_ns)))
    return encode_frame(MessageType.STEPS, b"".join(parts))


def query_present_bits(host_pre_ns: Optional[int], h2d_ns: Optional[int], compute_ns: Optional[int],
                       d2h_ns: Optional[int], host_post_ns: Optional[int]) -> int:
    """The ``present`` field of a query record for the given optional decomposition durations."""
    bits = 0
    for bit, value in ((QUERY_HAS_HOST_PRE, host_pre_ns), (QUERY_HAS_H2D, h2d_ns), (QUERY_HAS_COMPUTE, compute_ns),
                       (QUERY_HAS_D2H, d2h_ns), (QUERY_HAS_HOST_POST, host_post_ns)):
        if value is not None:
            bits |= bit
    return bits


def query_record_problem(r: QueryRecord) -> Optional[str]:
    """Why the orchestrator would reject this record (``QueryRecordProblem`` in wire.cc, plus the
    wire's integer widths), or None."""
    if not 0 <= r.query_id < 2**64:
        return "has an id outside u64"
    for name in ("scheduled_ns", "issued_ns", "completed_ns", "host_pre_ns", "h2d_ns", "compute_ns", "d2h_ns",
                 "host_post_ns"):
        value = getattr(r, name)
        if value is not None and not _I64_MIN <= value <= _I64_MAX:
            return "has %s=%d, which does not fit a signed 64-bit integer" % (name, value)
    if r.issued_ns < r.scheduled_ns:
        return "is issued before it is scheduled"
    if r.completed_ns < r.issued_ns:
        return "completes before it is issued"
    if not 1 <= r.samples <= _U32_MAX:
        return "has no samples" if r.samples == 0 else "has samples outside u32"
    if not 0 <= r.batch_samples <= _U32_MAX:
        return "has batch_samples outside u32"
    for value in (r.host_pre_ns, r.h2d_ns, r.compute_ns, r.d2h_ns, r.host_post_ns):
        if value is not None and value < 0:
            return "has a negative decomposition duration"
    return None


def encode_queries_frame(rank: int, records: Sequence[QueryRecord]) -> bytes:
    """A whole QUERIES frame (``AppendQueriesFrame``: layout version 1, 88-byte records); every
    record is checked first (ValueError naming the query id)."""
    parts = [QUERIES_HEADER.pack(rank, len(records), QUERIES_VERSION, QUERY_RECORD.size)]
    for r in records:
        problem = query_record_problem(r)
        if problem is not None:
            raise ValueError("query %d %s" % (r.query_id, problem))
        parts.append(QUERY_RECORD.pack(r.query_id, r.scheduled_ns, r.issued_ns, r.completed_ns, r.host_pre_ns or 0,
                                       r.h2d_ns or 0, r.compute_ns or 0, r.d2h_ns or 0, r.host_post_ns or 0,
                                       r.samples, r.batch_samples,
                                       query_present_bits(r.host_pre_ns, r.h2d_ns, r.compute_ns, r.d2h_ns,
                                                          r.host_post_ns), 0))
    return encode_frame(MessageType.QUERIES, b"".join(parts))


def decode_queries(frame: Frame) -> Tuple[int, List[QueryRecord]]:
    """(rank, records) of a QUERIES frame (``DecodeQueries``): ProtocolError for a short or
    inconsistent payload, another layout version, a record size outside 88..4096, or a record that
    cannot be true (the message names the query id). Longer records are read as their first 88
    bytes."""
    if len(frame.payload) < QUERIES_HEADER.size:
        raise ProtocolError("QUERIES frame shorter than its header")
    rank, count, version, record_bytes = QUERIES_HEADER.unpack_from(frame.payload)
    if version != QUERIES_VERSION:
        raise ProtocolError("QUERIES layout version %d (this client reads version %d)" % (version, QUERIES_VERSION))
    if not QUERY_RECORD.size <= record_bytes <= MAX_QUERY_RECORD_BYTES:
        raise ProtocolError("QUERIES record size %d bytes (expected %d to %d)"
                            % (record_bytes, QUERY_RECORD.size, MAX_QUERY_RECORD_BYTES))
    if len(frame.payload) != QUERIES_HEADER.size + count * record_bytes:
        raise ProtocolError("QUERIES frame length does not match its record count %d" % count)
    records = []
    for i in range(count):
        (qid, scheduled, issued, completed, pre, h2d, compute, d2h, post, samples, batch, present,
         _reserved) = QUERY_RECORD.unpack_from(frame.payload, QUERIES_HEADER.size + i * record_bytes)
        if present & ~QUERY_FIELD_MASK:
            raise ProtocolError("query %d sets decomposition bits %d that version 1 does not define"
                                % (qid, present & ~QUERY_FIELD_MASK))
        record = QueryRecord(qid, scheduled, issued, completed, samples, batch,
                             pre if present & QUERY_HAS_HOST_PRE else None, h2d if present & QUERY_HAS_H2D else None,
                             compute if present & QUERY_HAS_COMPUTE else None,
                             d2h if present & QUERY_HAS_D2H else None,
                             post if present & QUERY_HAS_HOST_POST else None)
        problem = query_record_problem(record)
        if problem is not None:
            raise ProtocolError("query %d %s" % (qid, problem))
        records.append(record)
    return rank, records


def decode_json(frame: Frame) -> Dict[str, Any]:
    """The JSON object of a non-STEPS frame; ProtocolError when it is not an object."""
    try:
        body = json.loads(frame.payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ProtocolError("%s payload is not UTF-8 JSON: %s" % (frame.type.name, e)) from e
    if not isinstance(body, dict):
        raise ProtocolError("%s payload must be a JSON object" % frame.type.name)
    return body


def decode_steps(frame: Frame) -> Tuple[int, List[StepRecord]]:
    """(rank, records) of a STEPS frame; ProtocolError when its length disagrees with its count."""
    if len(frame.payload) < STEPS_HEADER.size:
        raise ProtocolError("STEPS payload shorter than its 8-byte header")
    rank, count = STEPS_HEADER.unpack_from(frame.payload)
    if len(frame.payload) != STEPS_HEADER.size + count * STEP_RECORD.size:
        raise ProtocolError("STEPS payload of %d bytes does not hold %d records" % (len(frame.payload), count))
    records = []
    for i in range(count):
        start, end, wait, compute, comm, samples, present = STEP_RECORD.unpack_from(
            frame.payload, STEPS_HEADER.size + i * STEP_RECORD.size)
        records.append(StepRecord(start, end, samples, wait if present & HAS_DATA_WAIT else None,
                                  compute if present & HAS_COMPUTE else None, comm if present & HAS_COMM else None))
    return rank, records


class FrameReader:
    """Reassembles frames from a byte stream that arrives in arbitrary pieces (``FrameReader``)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> None:
        """Appends bytes read from the stream."""
        self._buffer += data

    @property
    def buffered_bytes(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return len(self._buffer)

    def next(self) -> Optional[Frame]:
        """The next complete frame, or None when more bytes are needed. Raises ProtocolError for an
        unknown type or an oversized frame, checked as soon as the header is complete."""
        if len(self._buffer) < HEADER.size:
            return None
        length, raw_type, _ = HEADER.unpack_from(self._buffer)
        try:
            msg_type = MessageType(raw_type)
        except ValueError:
            raise ProtocolError("unknown frame type %d" % raw_type) from None
        if length > MAX_PAYLOAD_BYTES:
            raise ProtocolError("frame of %d bytes exceeds the protocol's %d" % (length, MAX_PAYLOAD_BYTES))
        end = HEADER.size + length
        if len(self._buffer) < end:
            return None
        payload = bytes(self._buffer[HEADER.size:end])
        del self._buffer[:end]
        return Frame(msg_type, payload)

    def __iter__(self) -> Iterator[Frame]:
        """Every complete frame buffered now."""
        while True:
            frame = self.next()
            if frame is None:
                return
            yield frame


def finite_or_none(value: float) -> Optional[float]:
    """``value`` when it is a finite number, else None: for facts a runner reports that may have
    diverged (a loss), since JSON cannot carry NaN."""
    return value if math.isfinite(value) else None

"""The framing against bytes written by hand from docs/protocol.md ("Frames", "Step record")."""

from __future__ import annotations

import re

import pytest
from conftest import SOURCE_DIR

import dlbench_client
from dlbench_client import wire
from dlbench_client.wire import Frame, FrameReader, MessageType, ProtocolError, StepRecord

# docs/protocol.md: u32 payload_length | u16 type | u16 reserved, little-endian; then the payload.
HELLO_BYTES = bytes.fromhex("0e000000" "0100" "0000") + b'{"protocol":1}'

# One STEPS frame, rank 2, one record: start 1000, end 3500, data_wait 100 (bit 0), no compute,
# comm 7 (bit 2), 32 samples, present = 0b101. Payload: 8 + 48 = 56 = 0x38 bytes.
STEPS_BYTES = bytes.fromhex(
    "38000000" "0400" "0000"  # header
    "02000000" "01000000"  # rank, count
    "e803000000000000"  # start_ns 1000
    "ac0d000000000000"  # end_ns 3500
    "6400000000000000"  # data_wait_ns 100
    "0000000000000000"  # compute_ns (absent)
    "0700000000000000"  # comm_ns 7
    "20000000"  # samples 32
    "05000000")  # present


def test_json_frame_matches_the_documented_bytes():
    assert wire.encode_json_frame(MessageType.HELLO, {"protocol": 1}) == HELLO_BYTES


def test_steps_frame_matches_the_documented_bytes():
    record = StepRecord(1000, 3500, 32, data_wait_ns=100, comm_ns=7)
    assert wire.encode_steps_frame(2, [record]) == STEPS_BYTES


def test_steps_frame_decodes_with_absent_phases_as_none():
    frame = FrameReader()
    frame.feed(STEPS_BYTES)
    decoded = frame.next()
    assert decoded is not None and decoded.type == MessageType.STEPS
    rank, records = wire.decode_steps(decoded)
    assert rank == 2
    assert records == [StepRecord(1000, 3500, 32, data_wait_ns=100, compute_ns=None, comm_ns=7)]


def test_reader_reassembles_frames_fed_one_byte_at_a_time():
    reader = FrameReader()
    stream = HELLO_BYTES + STEPS_BYTES
    frames = []
    for i in range(len(stream)):
        reader.feed(stream[i:i + 1])
        frames.extend(reader)
    assert [f.type for f in frames] == [MessageType.HELLO, MessageType.STEPS]
    assert wire.decode_json(frames[0]) == {"protocol": 1}
    assert reader.buffered_bytes == 0


def test_unknown_type_is_a_violation_as_soon_as_the_header_is_complete():
    for bad_type in (0, 11, 0xFFFF):
        reader = FrameReader()
        reader.feed(bytes.fromhex("05000000") + bad_type.to_bytes(2, "little") + b"\0\0")
        with pytest.raises(ProtocolError, match="unknown frame type %d" % bad_type):
            reader.next()


def test_oversized_frame_is_a_violation_before_its_payload_arrives():
    reader = FrameReader()
    reader.feed((64 * 1024 * 1024 + 1).to_bytes(4, "little") + b"\x01\0\0\0")
    with pytest.raises(ProtocolError, match="exceeds"):
        reader.next()
    at_limit = FrameReader()
    at_limit.feed((64 * 1024 * 1024).to_bytes(4, "little") + b"\x01\0\0\0")
    assert at_limit.next() is None  # allowed: waits for the payload


def test_incomplete_header_and_payload_wait_for_more_bytes():
    reader = FrameReader()
    reader.feed(HELLO_BYTES[:7])
    assert reader.next() is None
    reader.feed(HELLO_BYTES[7:-1])
    assert reader.next() is None
    reader.feed(HELLO_BYTES[-1:])
    assert reader.next() == Frame(MessageType.HELLO, b'{"protocol":1}')


def test_steps_payload_length_must_match_its_count():
    with pytest.raises(ProtocolError, match="does not hold 2 records"):
        wire.decode_steps(Frame(MessageType.STEPS, STEPS_BYTES[8:16].replace(b"\x01", b"\x02", 1) + STEPS_BYTES[16:]))
    with pytest.raises(ProtocolError, match="shorter"):
        wire.decode_steps(Frame(MessageType.STEPS, b"\0\0\0"))


def test_json_payload_must_be_an_object_in_utf8():
    with pytest.raises(ProtocolError, match="object"):
        wire.decode_json(Frame(MessageType.READY, b"[1]"))
    with pytest.raises(ProtocolError, match="UTF-8 JSON"):
        wire.decode_json(Frame(MessageType.READY, b"\xff"))


def test_records_the_orchestrator_would_reject_are_refused_when_encoded():
    with pytest.raises(ValueError, match="before it starts"):
        wire.encode_steps_frame(0, [StepRecord(10, 9, 1)])
    with pytest.raises(ValueError, match="samples"):
        wire.encode_steps_frame(0, [StepRecord(0, 1, 2**32)])
    with pytest.raises(ValueError, match="signed 64-bit"):
        wire.encode_steps_frame(0, [StepRecord(0, 2**63, 1)])


def test_nan_cannot_travel_in_json():
    with pytest.raises(ValueError, match="NaN"):
        wire.encode_json_payload({"value": float("nan")})


def test_message_types_and_sizes_match_wire_h():
    header = (SOURCE_DIR / "src/protocol/wire.h").read_text()
    for member in MessageType:
        name = "k" + "".join(part.capitalize() for part in member.name.split("_"))
        assert re.search(r"\b%s = %d\b" % (name, member.value), header), member
    assert re.search(r"kMaxPayloadBytes = 64u << 20", header)
    assert wire.MAX_PAYLOAD_BYTES == 64 << 20
    # The step record (and its presence bits) is defined once, in the data model.
    step = (SOURCE_DIR / "src/record/step.h").read_text()
    assert re.search(r"kHasDataWait = 1u << 0", step) and wire.HAS_DATA_WAIT == 1
    assert re.search(r"kHasCompute = 1u << 1", step) and wire.HAS_COMPUTE == 2
    assert re.search(r"kHasComm = 1u << 2", step) and wire.HAS_COMM == 4


def test_protocol_version_equals_the_cpp_one_and_leads_the_package_version():
    header = (SOURCE_DIR / "src/protocol/wire.h").read_text()
    m = re.search(r"kProtocolVersion = (\d+);", header)
    assert m, "kProtocolVersion not found in src/protocol/wire.h"
    assert dlbench_client.PROTOCOL_VERSION == int(m.group(1))
    assert dlbench_client.__version__.split(".")[0] == m.group(1)


# One QUERIES frame (docs/protocol.md "QUERIES: query records"), rank 1, one version-1 record of 88
# bytes: query 7 scheduled at 1000, issued at 1500, completed at 4000; host_pre 100 (bit 0) and
# compute 2000 (bit 2) present, h2d, d2h, host_post absent; 1 sample, served in a batch of 4.
# Payload: 16 + 88 = 104 = 0x68 bytes.
QUERIES_BYTES = bytes.fromhex(
    "68000000" "0a00" "0000"  # header: type 10
    "01000000" "01000000" "01000000" "58000000"  # rank 1, count 1, version 1, record_bytes 88
    "0700000000000000"  # query_id 7
    "e803000000000000"  # scheduled_ns 1000
    "dc05000000000000"  # issued_ns 1500
    "a00f000000000000"  # completed_ns 4000
    "6400000000000000"  # host_pre_ns 100
    "0000000000000000"  # h2d_ns (absent)
    "d007000000000000"  # compute_ns 2000
    "0000000000000000"  # d2h_ns (absent)
    "0000000000000000"  # host_post_ns (absent)
    "01000000"  # samples 1
    "04000000"  # batch_samples 4
    "05000000"  # present: bits 0 and 2
    "00000000")  # reserved
QUERY = wire.QueryRecord(7, 1000, 1500, 4000, 1, 4, host_pre_ns=100, compute_ns=2000)


def test_queries_frame_matches_the_documented_bytes():
    assert wire.encode_queries_frame(1, [QUERY]) == QUERIES_BYTES
    reader = FrameReader()
    reader.feed(QUERIES_BYTES)
    frame = reader.next()
    assert frame is not None and frame.type == MessageType.QUERIES
    assert wire.decode_queries(frame) == (1, [QUERY])


def test_the_sessions_in_place_queries_frame_is_the_same_bytes():
    import os
    from dlbench_client import QueryPhases, RunnerSession
    cmd_r, cmd_w = os.pipe()
    out_r, out_w = os.pipe()
    try:
        session = RunnerSession(cmd_r, out_w)
        session._rank = 1
        session.record_query(7, 1000, 1500, 4000, 1, 4, QueryPhases(host_pre_ns=100, compute_ns=2000))
        session.flush_queries()
        assert os.read(out_r, 4096) == QUERIES_BYTES
        with pytest.raises(ValueError, match="query 8 completes before it is issued"):
            session.record_query(8, 1000, 1500, 1400, 1)
        with pytest.raises(ValueError, match="query 9 has a negative decomposition duration"):
            session.record_query(9, 1000, 1500, 1600, 1, 1, QueryPhases(compute_ns=-1))
    finally:
        for fd in (cmd_r, cmd_w, out_r, out_w):
            os.close(fd)


def test_a_queries_frame_the_orchestrator_would_refuse_is_refused_here_too():
    payload = QUERIES_BYTES[8:]
    with pytest.raises(ProtocolError, match="layout version 2"):
        wire.decode_queries(Frame(MessageType.QUERIES, payload[:8] + b"\x02\0\0\0" + payload[12:]))
    with pytest.raises(ProtocolError, match="record size 80 bytes"):
        wire.decode_queries(Frame(MessageType.QUERIES, payload[:12] + b"\x50\0\0\0" + payload[16:]))
    with pytest.raises(ProtocolError, match="does not match its record count 2"):
        wire.decode_queries(Frame(MessageType.QUERIES, payload[:4] + b"\x02\0\0\0" + payload[8:]))
    # A record of a later version-1 layout (fields appended) is read as its first 88 bytes.
    longer = payload[:12] + b"\x60\0\0\0" + payload[16:] + b"\xff" * 8
    assert wire.decode_queries(Frame(MessageType.QUERIES, longer)) == (1, [QUERY])
    with pytest.raises(ProtocolError, match="query 7 sets decomposition bits 32"):
        wire.decode_queries(Frame(MessageType.QUERIES, payload[:-8] + b"\x25\0\0\0" + payload[-4:]))
    with pytest.raises(ValueError, match="query 3 is issued before it is scheduled"):
        wire.encode_queries_frame(0, [wire.QueryRecord(3, 10, 9, 11, 1)])
    with pytest.raises(ValueError, match="query 3 has no samples"):
        wire.encode_queries_frame(0, [wire.QueryRecord(3, 10, 10, 11, 0)])


def test_query_record_layout_matches_query_h_and_wire_h():
    query = (SOURCE_DIR / "src/record/query.h").read_text()
    for name, value in (("kQueryHasHostPre", wire.QUERY_HAS_HOST_PRE), ("kQueryHasH2d", wire.QUERY_HAS_H2D),
                        ("kQueryHasCompute", wire.QUERY_HAS_COMPUTE), ("kQueryHasD2h", wire.QUERY_HAS_D2H),
                        ("kQueryHasHostPost", wire.QUERY_HAS_HOST_POST)):
        m = re.search(r"%s = 1u << (\d+)" % name, query)
        assert m and value == 1 << int(m.group(1)), name
    assert re.search(r"kQueryFieldMask = 0x1f", query) and wire.QUERY_FIELD_MASK == 0x1F
    assert re.search(r"sizeof\(QueryRecord\) == 88", query) and wire.QUERY_RECORD.size == 88
    header = (SOURCE_DIR / "src/protocol/wire.h").read_text()
    assert re.search(r"kQueriesVersion = %d;" % wire.QUERIES_VERSION, header)
    assert re.search(r"kMaxQueryRecordBytes = %d;" % wire.MAX_QUERY_RECORD_BYTES, header)

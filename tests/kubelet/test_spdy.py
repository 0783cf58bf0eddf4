"""SPDY/3 framing against known bytes: frames kubectl 1.32 sent to open a
port-forward (captured with -v=9), and frames we encode, read back."""
from __future__ import annotations

import struct
import zlib

import pytest

from streaming import spdy

# `kubectl port-forward pod/web 8080:80`, one connection: the error stream
# (SYN_STREAM 1), its half-close (an empty DATA with FIN), the data stream
# (SYN_STREAM 3, its headers compressed in the same zlib context as the first).
KUBECTL_ERROR_STREAM = bytes.fromhex(
    "800300010000003d" "00000001" "00000000" "00" "00"
    "78f9e3c6a7c202253a703a2b294a4dcc851625aca9a0808614cb45a024cc6461c0c0c0c0590489c44c50e2663400000000ffff")
KUBECTL_HALF_CLOSE = bytes.fromhex("00000001" "01000000")
KUBECTL_DATA_STREAM = bytes.fromhex("8003000100000018" "00000003" "00000000" "00" "00" "c2aa15540a2512d209000000ffff")


def test_the_dictionary_is_the_one_kubectl_primes_zlib_with():
    # A zlib stream names its dictionary by Adler-32 (bytes 2-5): kubectl's says e3c6a7c2.
    assert zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2 == struct.unpack(">I", KUBECTL_ERROR_STREAM[20:24])[0]
    assert len(spdy.DICTIONARY) == 1423


def test_kubectls_port_forward_streams_decode():
    frames = spdy.Framer().feed(KUBECTL_ERROR_STREAM + KUBECTL_HALF_CLOSE + KUBECTL_DATA_STREAM)
    assert frames == [
        spdy.SynStream(1, {"streamtype": "error", "port": "80", "requestid": "0"}),
        spdy.Data(1, b"", fin=True),
        spdy.SynStream(3, {"streamtype": "data", "port": "80", "requestid": "0"}),
    ]


def test_frames_arriving_a_byte_at_a_time_decode_the_same():
    framer, frames = spdy.Framer(), []
    for byte in KUBECTL_ERROR_STREAM + KUBECTL_HALF_CLOSE:
        frames += framer.feed(bytes([byte]))
    assert [type(f) for f in frames] == [spdy.SynStream, spdy.Data]


@pytest.mark.parametrize("frame, known", [
    (spdy.Data(3, b"hi", fin=True), "00000003" "01000002" "6869"),
    (spdy.RstStream(5, spdy.CANCEL), "80030003" "00000008" "00000005" "00000005"),
    (spdy.Ping(2), "80030006" "00000004" "00000002"),
    (spdy.GoAway(7, 0), "80030007" "00000008" "00000007" "00000000"),
    (spdy.WindowUpdate(1, 65536), "80030009" "00000008" "00000001" "00010000"),
    (spdy.Settings({7: 65536}), "80030004" "0000000c" "00000001" "00000007" "00010000"),
])
def test_fixed_frames_encode_to_known_bytes_and_back(frame, known):
    assert spdy.Framer().encode(frame).hex() == known
    assert spdy.Framer().feed(bytes.fromhex(known)) == [frame]


def test_a_reply_and_its_headers_round_trip_through_shared_compression():
    sender, receiver = spdy.Framer(), spdy.Framer()
    frames = [spdy.SynReply(1), spdy.SynReply(3, {"port": "80"}), spdy.Headers(3, {"a": "b"}, fin=True)]
    wire = b"".join(sender.encode(f) for f in frames)
    assert wire[:8] == bytes.fromhex("8003000200000014")      # SYN_REPLY, 4 + 16 bytes
    assert receiver.feed(wire) == frames


def test_an_unknown_version_or_a_broken_header_block_is_a_protocol_error():
    with pytest.raises(spdy.ProtocolError, match="SPDY version 2"):
        spdy.Framer().feed(bytes.fromhex("80020006" "00000004" "00000002"))
    with pytest.raises(spdy.ProtocolError, match="cannot decompress"):
        spdy.Framer().feed(bytes.fromhex("80030002" "00000008" "00000001" "deadbeef"))


def syn_stream_with_block(block: bytes) -> bytes:
    """A SYN_STREAM whose header block is `block`, compressed as kubectl would."""
    compressor = zlib.compressobj(zdict=spdy.DICTIONARY)
    compressed = compressor.compress(block) + compressor.flush(zlib.Z_SYNC_FLUSH)
    payload = struct.pack(">IIBB", 1, 0, 0, 0) + compressed
    return struct.pack(">HHI", 0x8003, 1, len(payload)) + payload


def test_a_header_block_that_expands_too_far_is_refused_not_decompressed():
    # 20 MB of one header value compresses to ~20 KB: a bomb, refused at 64 KB.
    value = b"\0" * 20_000_000
    block = struct.pack(">I", 1) + struct.pack(">I", 4) + b"port" + struct.pack(">I", len(value)) + value
    with pytest.raises(spdy.ProtocolError, match="larger than 65536 bytes"):
        spdy.Framer().feed(syn_stream_with_block(block))


def test_a_header_that_is_not_utf8_is_a_protocol_error():
    block = struct.pack(">I", 1) + struct.pack(">I", 4) + b"port" + struct.pack(">I", 2) + b"\xff\xfe"
    with pytest.raises(spdy.ProtocolError, match="not UTF-8"):
        spdy.Framer().feed(syn_stream_with_block(block))

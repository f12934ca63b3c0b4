#!/usr/bin/env python3
"""make_rdf.py DIR - small hand-made RDF files for tests/trace_test.sh,
each built to exercise one rule of the RMV importer (docs/TRACE_FORMAT.md,
"Radeon Memory Visualizer traces")."""
import struct
import sys

out = sys.argv[1]


def tok(size, fields):
    """A token of size bytes from (hi, lo, value) bit fields."""
    v = 0
    for hi, lo, val in fields:
        assert val < (1 << (hi - lo + 1))
        v |= val << lo
    return v.to_bytes(size, 'little')


def timestamp(t=1 << 20):
    return struct.pack('<QI', t << 4, 10000000)


def valloc(va, pages=1):
    return tok(12, [(3, 0, 12), (31, 8, pages - 1), (81, 34, va), (83, 82, 1), (92, 90, 1)])


def vfree(va):
    return tok(7, [(3, 0, 11), (55, 8, va)])


def create(rid, rtype, payload):
    return tok(7, [(3, 0, 13), (39, 8, rid), (53, 48, rtype)]) + payload


def update(rid, rtype):
    return tok(16, [(3, 0, 1), (39, 8, rid), (77, 72, rtype)])


MISC = tok(2, [(3, 0, 5), (11, 8, 3)])


def rmt(stream, data, pid=1234, ver=(1, 8), size=None):
    hdr = struct.pack('<IIQIHH', pid, 0, len(data) if size is None else size, stream, ver[0], ver[1])
    return ('RmtData', hdr, data)


def rdf(path, chunks, gap=b''):
    body = b''
    ents = b''
    off = 32
    for cid, hdr, data in chunks:
        ho, do = off, off + len(hdr)
        body += hdr + data
        off += len(hdr) + len(data)
        name = cid.encode() if isinstance(cid, str) else cid
        ents += name.ljust(16, b'\0') + struct.pack('<II', 0, 1) + \
            struct.pack('<QQQQQ', ho if hdr else 0, len(hdr), do, len(data), 0)
    body += gap
    head = b'AMD_RDF ' + struct.pack('<II', 3, 0) + struct.pack('<QQ', 32 + len(body), len(ents))
    open(out + '/' + path, 'wb').write(head + body + ents)


ok_stream = timestamp() + valloc(0x100) + vfree(0x100) + MISC
# A SystemInfo chunk that ends inside a heap object, with text that looks
# like the heap's fields just after it (in another chunk).
rdf('sysinfo.rmv', [('SystemInfo', b'', b'{"local":{ '),
                    ('Padding', b'', b'"physicalAddress":4096,"size":1048576}"gpus":["name":"AMD Outside"]')])
rdf('hdrsize.rmv', [rmt(0, timestamp(), size=99)])
rdf('workgraph.rmv', [rmt(0, timestamp() + create(7, 17, bytes(8)))])
rdf('update.rmv', [rmt(0, timestamp() + create(5, 1, bytes(11)) + update(5, 1) + update(5, 1), ver=(1, 9))])
rdf('split.rmv', [rmt(0, ok_stream[:17]), ('SystemInfo', b'', b'{"processes":[{"processId":1234}]}'),
                  rmt(0, ok_stream[17:])])
rdf('unknown.rmv', [rmt(0, ok_stream), ('FutureChunk', b'', b'12345')])
rdf('badfree.rmv', [rmt(0, timestamp() + vfree(0x1000))])
rdf('onebit.rmv', [('RmtDatc', rmt(0, ok_stream)[1], ok_stream)])
rdf('gap.rmv', [rmt(0, ok_stream)], gap=b'\0\0\0\0')

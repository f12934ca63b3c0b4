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

# multi.rmv: two process streams and the kernel driver's page-table
# updates, on a small adapter (local 16 MiB, invisible 64 MiB, system
# 256 MiB), for the replay of every process and the unattributed mappings.
LOCAL, INVISIBLE, SYSTEM = 0, 1, 2


def valloc_pref(va, pages, prefs):
    f = [(3, 0, 12), (31, 8, pages - 1), (81, 34, va), (92, 90, len(prefs))]
    for i, p in enumerate(prefs):
        f.append((83 + 2 * i, 82 + 2 * i, p))
    return tok(12, f)


def reference(va, remove=0):
    return tok(8, [(3, 0, 6), (8, 8, remove), (56, 9, va)])


def pte(va, pa, pages, pid=4, unmap=0):
    return tok(18, [(3, 0, 3), (43, 8, va >> 12), (79, 44, pa >> 12), (99, 80, pages), (102, 100, 1),
                    (103, 103, unmap), (135, 104, pid), (137, 136, 1)])


def heaps(local, invisible, system):
    return b''.join(struct.pack('<IIQQ', i, 0, base, size) for i, (base, size) in enumerate([local, invisible, system]))


MIB = 1 << 20
app = timestamp() + valloc_pref(0x100000000, 16, [INVISIBLE, LOCAL]) + valloc_pref(0x100100000, 1, [SYSTEM]) + \
    reference(0x100000000) + reference(0x100100000)
comp = timestamp() + valloc_pref(0x200000000, 16, [LOCAL]) + reference(0x200000000)
kmd = timestamp(2 << 20) + pte(0x100000000, 16 * MIB + 0x10000, 16) + pte(0x100100000, 0, 1) + \
    pte(0x200000000, 0x10000, 16) + pte(0x300000000, 0, 1) + pte(0x300000000, 0, 1, unmap=1)
rdf('multi.rmv', [('GpuMemSegment', b'', heaps((0, 16 * MIB), (16 * MIB, 64 * MIB), (0, 256 * MIB))),
                  rmt(0, kmd, pid=0), rmt(1, app, pid=1234), rmt(2, comp, pid=5678)])

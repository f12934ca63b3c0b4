#!/usr/bin/env python3
"""seeds.py - write the hand-made seed inputs of fuzz/corpus/<harness>/
(seed-*).  Deterministic (fixed random seeds), so re-running it rewrites
the same files.  Usage: python3 fuzz/seeds.py [api_stream|driver_desc|cmdbuf|proto]..."""
import os, random, struct, sys

def put(h, name, data):
    d = os.path.join(os.path.dirname(__file__), "corpus", h)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(bytes(data))

# Revision-2 seeds are random streams; the corpus must replay clean in
# `make test`, so the salt picks, per (preset, revision), streams that do
# not hit a defect still open when they were chosen (the others reproduce
# it and are kept out of the corpus).
REV2_SALT = {(1, 3): 1, (2, 2): 1}

def api_stream():
    # header: preset, softgpu options, fail flag, 16-bit fail delay, revision
    # byte (0: revision 1; else revision 2: bit 0 asynchronous softgpu, bits
    # 1-2 the TDR timeout); then calls.
    SCEN = 43
    for preset in range(3):
        r = random.Random(preset)
        # scenario steps, then submissions and residency on what they made
        body = []
        for _ in range(3):
            body += [SCEN, r.randrange(3), r.randrange(2), r.randrange(5), r.randrange(16)]
        for op in (22, 33, 34, 23, 24, 25, 13, 14, 11, 12, 16, 17, 19, 20, 21, 31, 28, 26, 35, 36, 1, 10):
            body += [op] + [r.randrange(256) for _ in range(24)]
        put("api_stream", "preset%d" % preset, [preset, 0, 0, 0, 0, 0] + body)
        for k in range(4):
            put("api_stream", "preset%d-random%d" % (preset, k),
                [preset, r.randrange(256), r.randrange(256) & ~1, 0, 0, 0] + [r.randrange(256) for _ in range(600)])
        put("api_stream", "preset%d-hostfail" % preset, [preset, 0, 1, 40, 0, 0] + body)
        # Revision 2: power transitions, TDR, injected paging hangs and
        # restarts, private allocations and device locks, hostile trim
        # callbacks, waits with a timeout; synchronous and asynchronous.
        for rev in (2, 3):
            r2 = random.Random(1000 * REV2_SALT.get((preset, rev), 0) + 10 * preset + rev)
            b2 = []
            for _ in range(3):
                b2 += [SCEN, r2.randrange(3), r2.randrange(2), r2.randrange(5), r2.randrange(16)]
            for op in (50, 51, 22, 44, 45, 44, 22, 33, 48, 22, 54, 47, 45, 53, 28, 22, 49, 22, 24, 48, 23,
                       46, 33, 54, 55, 52, 44, 13, 10, 3, 45):
                b2 += [op] + [r2.randrange(256) for _ in range(20)]
            put("api_stream", "preset%d-rev2-%s" % (preset, "async" if rev & 1 else "sync"),
                [preset, 0, 0, 0, 0, rev] + b2)
            put("api_stream", "preset%d-rev2-%s-random" % (preset, "async" if rev & 1 else "sync"),
                [preset, r2.randrange(256), r2.randrange(256) & ~1, 0, 0, rev] +
                [r2.choice((44, 47, 48, 50, 51, 53, 54)) if i % 12 == 0 else r2.randrange(256) for i in range(600)])


def _cmd(op, *operands):
    return struct.pack("<HHI", op, 0, 8 + 8 * len(operands)) + b"".join(struct.pack("<Q", o & (2**64 - 1)) for o in operands)

def _reg(i, off):
    """An address operand the harness relocates into region i at off."""
    return (0xF << 60) | (i << 56) | off

def cmdbuf():
    NOP, W32, W64, COPY, FILL, CSUM, CMP, SIG, WAIT = range(0x20, 0x29)
    prog = (_cmd(W64, _reg(0, 0), 0x1122334455667788) + _cmd(W32, _reg(1, 8), 0xcafe) +
            _cmd(FILL, _reg(0, 4096), 8192, 0xa5a5a5a5) + _cmd(COPY, _reg(1, 0), _reg(0, 0), 4096) +
            _cmd(CSUM, _reg(0, 0), 4096, _reg(2, 64)) + _cmd(CMP, _reg(0, 0), _reg(1, 0), 4096, _reg(2, 128)) +
            _cmd(SIG, _reg(2, 256), 7) + _cmd(WAIT, _reg(2, 256), 7) + _cmd(NOP))
    faults = (_cmd(W64, _reg(3, 0), 1) + _cmd(W64, _reg(4, 0), 1) + _cmd(W64, _reg(5, 0), 1) +
              _cmd(W64, _reg(6, 0), 1) + _cmd(COPY, _reg(0, 0), 0x123456789000, 64) + _cmd(0x99))
    def sub(mode, body, extra=b""):
        return bytes([mode, len(body) // 8 - 1]) + body + extra
    for preset in range(3):
        for opt in (0, 0x2b):
            put("cmdbuf", "p%d-o%02x-virtual" % (preset, opt),
                bytes([preset, opt]) + sub(0, prog, b"\0") + sub(0, faults, b"\0"))
            phys = (_cmd(W64, _reg(0, 0), 5) + _cmd(FILL, _reg(1, 0), 4096, 0x01020304) +
                    _cmd(COPY, _reg(2, 0), _reg(0, 0), 4096) + _cmd(CSUM, _reg(0, 0), 64, _reg(1, 64)) +
                    _cmd(W64, (1 << 56) | 0x7fffffff000, 1) + _cmd(W64, 0, 1) + _cmd(W64, (9 << 56), 1))
            patches = bytes([3, 0, 0, 0, 1, 2, 0, 1, 0x41, 0, 0, 3])
            put("cmdbuf", "p%d-o%02x-physical" % (preset, opt), bytes([preset, opt]) + sub(1, phys, patches))
        r = random.Random(100 + preset)
        # paging requests: one of each kind, arguments random
        pg = bytearray([preset, 0])
        for kind in range(9):
            pg += bytes([2, r.randrange(64), kind]) + bytes(r.randrange(256) for _ in range(40))
        put("cmdbuf", "p%d-paging" % preset, pg)
        # a little page-table build: a leaf entry, an upper entry, then a virtual fill through them
        pt = bytearray([preset, 0])
        for lvl in range(6):
            pt += bytes([2, 8, 5, lvl, 0, 0, lvl, 0]) + struct.pack("<HBI", 0x1 | (2 << 5), 0, 16) + b"\0\0" + b"\0\x10"
        pt += bytes([2, 8, 8, 0, 0, 0, 0]) + struct.pack("<I", 0x11223344) + b"\0" * 8
        put("cmdbuf", "p%d-pagetables" % preset, pt)

def driver_desc():
    # caps byte (bit2 VA, bit3 GpuMmu, bit4 IoMmu, bit6 move paging), node count,
    # commit-limit flag, query-failure byte, segment count, second count
    def caps(b, nb, fail=0):
        return bytes([b, 3, 0, fail, nb, 0])
    def seg(k, p, size, extra=b""):
        return bytes([k, p, size]) + extra
    leaf64 = b"\0\1" + struct.pack("<I", 65536) + b"\0\0\0"   # VA bits as computed, 64 KB leaf 64 KiB
    def mmu(g, pt_seg, lvl=bytes([0x10, 0x01]) * 7, tail=leaf64):
        return bytes([g, pt_seg]) + lvl + tail
    allocs = bytes([4, 0x48, 3, 0x40, 7, 0x08, 15, 0x50, 1, 1, 2, 3, 0])
    dgpu = (caps(0x4c, 3) + seg(0, 2, 0x23) + seg(1, 2, 0x27, bytes([16])) + seg(2, 1, 0x2f) +
            bytes([3]) + mmu(0x21, 2))
    put("driver_desc", "dgpu-4level", dgpu + allocs)
    put("driver_desc", "dgpu-2level-resizable",
        caps(0x4c, 3) + seg(0, 2, 0x23) + seg(1, 2, 0x27, bytes([16])) + seg(2, 1, 0x2f) + bytes([3]) +
        bytes([0x01, 2, 2, 0x10, 0x01, 0x14, 0x01]) + bytes([0x10, 0x01]) * 5 + leaf64 + allocs)
    put("driver_desc", "igpu-iommu", caps(0x14, 1) + seg(3, 1, 0x2f) + bytes([1]) + mmu(0, 0) + allocs)
    put("driver_desc", "wddm1-like",
        caps(0x40, 4) + seg(4, 1, 0x23) + seg(5, 1, 0x27) + seg(6, 1, 0x23) + seg(7, 1, 0x2f) + bytes([4]) +
        mmu(0, 0, tail=b"\0\0\0\0\1") + allocs)
    for fail in range(1, 7):
        put("driver_desc", "fail%d" % fail, caps(0x4c, 3, fail) + dgpu[6:] + allocs)
    put("driver_desc", "too-many-segments", bytes([0x4c, 3, 0, 0, 0xff, 0, 32]) + dgpu[6:])
    put("driver_desc", "second-count-differs", bytes([0x4c, 3, 0, 0, 3, 0xff, 5]) + dgpu[6:] + allocs)
    r = random.Random(7)
    for k in range(6):
        put("driver_desc", "random%d" % k, bytes(r.randrange(256) for _ in range(120)))


def proto():
    # Records for fuzz/proto.c: kind (bit 0 repair the header, bit 1 the
    # second client, bit 2 reconnect it first), 16-bit length, message.
    # A payload word 0xFE..gg ss tt names the client's object of type tt
    # (1 allocation, 3 device, 5 queue), slot ss, generation gg.
    def msg(op, payload=b"", rid=1):
        return struct.pack("<IHHIIQ", 0x444d4d56, 1, op, len(payload), 0, rid) + payload
    def rec(m, kind=1):
        return bytes([kind]) + struct.pack("<H", len(m)) + m
    def h(t, slot, gen=1):
        return struct.pack("<Q", 0xFE << 56 | gen << 16 | slot << 8 | t)
    def desc(kind, size, cpu=1):
        return struct.pack("<IIQQ", kind, cpu, size, 0) + bytes(64)
    def create(kind, size, flags=0, dev=b"\0" * 8):
        d = desc(kind, size)
        return msg(8, dev + struct.pack("<II", flags, len(d)) + d)
    # slots: 1 device, 2 queue, 3.. allocations
    setup = [msg(1), msg(2), msg(4, h(3, 1) + struct.pack("<iI", 0, 0))]
    setup += [create(2, 65536, 1), create(1, 262144), create(3, 131072), create(1, 1 << 20)]
    allocs = h(1, 3) + h(1, 4) + h(1, 5) + h(1, 6)
    body = [msg(10, h(3, 1) + h(5, 2) + struct.pack("<II", 0, 4) + allocs),
            msg(7, h(5, 2) + struct.pack("<QQ", 1, 1000000)),
            msg(6, h(5, 2)),
            msg(13, h(1, 3)), msg(13, h(1, 3)), msg(14, h(1, 3)), msg(9, h(1, 3)), msg(14, h(1, 3)),
            msg(15, h(1, 4)),
            msg(11, h(3, 1) + struct.pack("<II", 0, 2) + h(1, 4) + h(1, 5)),
            msg(11, h(3, 1) + struct.pack("<II", 1, 2) + h(1, 4) + h(1, 5)),
            msg(12, struct.pack("<II", 0, 0)), msg(12, struct.pack("<II", 1, 0)),
            msg(16, struct.pack("<QQQQII", 0, 0, 0, 1 << 20, 0, 0)),
            msg(17, struct.pack("<QQQ", 0, 0, 0) + h(1, 3) + struct.pack("<QQQII", 0, 65536, 0, 0, 0)),
            msg(18, struct.pack("<QQ", 0x10000, 1 << 20)),
            msg(32), msg(33, b"echo"),
            msg(9, h(1, 6)), msg(3, h(3, 1)), msg(5, h(5, 2))]
    put("proto", "session", b"".join(rec(m) for m in setup + body))
    # the rest of the API (opcodes 19-31, 65): queries, priority, offer and
    # reclaim, reservation, trim registration then a budget under the
    # usage (a trim event), a GPU VA batch, a context (slot 7), a
    # submission, its fence and wait, destroy
    gpuva_map = struct.pack("<IIQQ", 0, 0, 0x10000, 65536) + h(1, 3) + struct.pack("<QQIIQ", 0, 0, 0, 0, 0)
    rest = [msg(10, h(3, 1) + h(5, 2) + struct.pack("<II", 0, 4) + allocs),
            msg(19), msg(20, struct.pack("<II", 1, 0)), msg(20, struct.pack("<II", 99, 0)),
            msg(21, h(1, 3) + struct.pack("<II", 0xa0000000, 0)),
            msg(22, h(3, 1) + struct.pack("<II", 1, 2) + h(1, 4) + h(1, 5)),
            msg(23, h(5, 2) + struct.pack("<II", 0, 2) + h(1, 4) + h(1, 5)),
            msg(24, struct.pack("<IIQ", 0, 0, 1 << 20)),
            msg(25, h(3, 1) + struct.pack("<II", 1, 0)),
            msg(65, struct.pack("<IIQ", 0, 0, 65536)),
            msg(16, struct.pack("<QQQQII", 0x10000, 0, 0, 1 << 20, 0, 0)),
            msg(26, struct.pack("<II", 1, 0) + gpuva_map),
            msg(27, h(3, 1) + struct.pack("<IIII", 0, 0, 0, 0)),
            msg(30, h(7, 7)),
            msg(29, h(7, 7) + struct.pack("<QII", 0x10000, 16, 0)),
            msg(31, h(7, 7) + struct.pack("<QQ", 1, 1000000)),
            msg(28, h(7, 7)), msg(25, h(3, 1) + struct.pack("<II", 0, 0)),
            msg(65, struct.pack("<IIQ", 0, 0, 0)), msg(3, h(3, 1))]
    put("proto", "rest", b"".join(rec(m) for m in setup + rest))
    # the same on both clients, the second one naming the first's objects
    put("proto", "two-clients", b"".join(rec(m) for m in setup) + b"".join(rec(m, 3) for m in setup) +
        b"".join(rec(m, 3) for m in body) + b"".join(rec(m) for m in body))
    # a client dropped with everything alive and locked, then reconnected
    put("proto", "death", b"".join(rec(m) for m in setup) + rec(msg(13, h(1, 4))) +
        rec(msg(10, h(3, 1) + h(5, 2) + struct.pack("<II", 0, 2) + h(1, 3) + h(1, 5))) +
        rec(msg(1), 5) + b"".join(rec(m) for m in setup))
    # framing errors as they come (not repaired)
    bad = [b"\0" * 10, b"XMMD" + msg(1)[4:], msg(1)[:4] + b"\x09\0" + msg(1)[6:],
           msg(3, h(3, 1))[:30], msg(999), msg(3, b"1234"), msg(10, h(3, 1) + h(5, 2) + struct.pack("<II", 0, 1000))]
    put("proto", "framing", b"".join(rec(m) for m in setup) + b"".join(rec(m, 0) for m in bad) +
        b"".join(rec(m) for m in body))
    # administration (the harness's clients may ask) and the limits: more
    # than the 8 MiB per connection, four waits in flight and a fifth
    admin = [msg(40), msg(41, struct.pack("<II", 0, 0)), msg(41, struct.pack("<II", 7, 0)),
             msg(41, struct.pack("<II", 0, 1)), msg(41, b"1234")]
    big = [create(1, 1 << 20) for _ in range(10)]
    waits = [msg(7, h(5, 2) + struct.pack("<QQ", 1 << 40, 1000000), rid) for rid in range(10, 16)]
    put("proto", "admin-limits", b"".join(rec(m) for m in setup + admin + big + waits + admin) +
        b"".join(rec(m, 3) for m in setup + admin))
    r = random.Random(11)
    for k in range(4):
        recs = [rec(m) for m in setup]
        for _ in range(40):
            m = r.choice(body)
            m = bytearray(m)
            for _ in range(r.randrange(3)):
                i = r.randrange(len(m))
                m[i] = r.randrange(256)
            recs.append(rec(bytes(m), r.choice([1, 1, 1, 3, 0, 5])))
        put("proto", "random%d" % k, b"".join(recs))
    # shared allocations: client 0 creates one shareable (slot 7) and
    # exports it; client 1 opens it by the export file (kind bit 3), uses
    # and queries it, opens /dev/null; client 0 lets go, then client 1
    # dies holding it
    share = [create(1, 262144, 3), msg(48, h(1, 7)), msg(50, h(1, 7))]
    opener = [msg(13, h(1, 7)), msg(14, h(1, 7)), msg(50, h(1, 7)),
              msg(10, h(3, 1) + h(5, 2) + struct.pack("<II", 0, 1) + h(1, 7))]
    put("proto", "share", b"".join(rec(m) for m in setup + share) + b"".join(rec(m, 3) for m in setup) +
        rec(msg(49, rid=0), 11) + b"".join(rec(m, 3) for m in opener) + rec(msg(49), 3) + rec(msg(49, rid=0), 11) +
        rec(msg(48, h(1, 3))) + rec(msg(9, h(1, 7))) + rec(msg(50, h(1, 7)), 3) + rec(msg(1), 7))


if __name__ == "__main__":
    which = sys.argv[1:] or ["api_stream", "driver_desc", "cmdbuf", "proto"]
    for w in which:
        globals()[w]()

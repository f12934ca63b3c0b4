#!/usr/bin/env python3
"""flip_check.py TOOL FILE SEED COUNT DIR - COUNT copies of the RMV file,
each with one bit flipped at a place drawn from SEED: every copy must be
refused (exit 1, a message starting "rmv:") or decode to the same
container, chunks and per-stream token counts as the original (`vidmm
replay --decode-only`).  A flip that adds an unknown chunk kind may pass
only when the summary names it as not read."""
import random
import subprocess
import sys

tool, path, seed, count, tmp = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
data = open(path, 'rb').read()


def decode(b):
    f = tmp + '/flip.rmv'
    open(f, 'wb').write(b)
    p = subprocess.run([tool, 'replay', f, '--decode-only'], capture_output=True)
    return p.returncode, p.stdout.decode('latin1'), p.stderr.decode('latin1')


def shape(out):
    return [l for l in out.splitlines() if l.startswith(('container:', 'chunks:', 'stream '))]


rc, orig, err = decode(data)
if rc != 0:
    sys.exit('the original does not decode: ' + err)
rng = random.Random(seed)
refused = same = 0
bad = []
for i in range(count):
    pos, bit = rng.randrange(len(data)), rng.randrange(8)
    b = bytearray(data)
    b[pos] ^= 1 << bit
    rc, out, err = decode(bytes(b))
    if rc == 1 and err.startswith('rmv:'):
        refused += 1
    elif rc == 0 and shape(out) == shape(orig):
        same += 1
    elif rc == 0 and [l for l in shape(out) if not l.startswith('chunks:')] == \
            [l for l in shape(orig) if not l.startswith('chunks:')] and '[not read]' in out:
        same += 1
    else:
        bad.append('byte %d bit %d: exit %d %s' % (pos, bit, rc, (err or out)[:200].strip()))
for b in bad:
    print('misread:', b)
print('%d copies (seed %d): %d refused with a message, %d decoded the same, %d misread' %
      (count, seed, refused, same, len(bad)))
sys.exit(1 if bad else 0)

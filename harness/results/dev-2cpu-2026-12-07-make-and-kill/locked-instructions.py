#!/usr/bin/env python3
"""Counts the locked instructions (lock-prefixed, xchg with memory, mfence)
a program executed, per iteration, from a callgrind profile of it.

    valgrind --tool=callgrind --dump-instr=yes --compress-pos=no \
        --compress-strings=no --callgrind-out-file=PROFILE BINARY ARGS...
    locked-instructions.py PROFILE BINARY ITERATIONS

Prints each locked instruction run at least once per ten iterations, with
its function, then the total per iteration. Only the binary's own code is
counted (libc's is not: malloc's locked instructions are rare)."""
import collections
import re
import subprocess
import sys

profile, binary, iterations = sys.argv[1], sys.argv[2], int(sys.argv[3])

locked = {}
function = None
listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary],
                         capture_output=True, text=True, check=True).stdout
for line in listing.splitlines():
    m = re.match(r"^([0-9a-f]+) <(.*)>:", line)
    if m:
        function = m.group(2)
        continue
    m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
    if not m:
        continue
    insn = m.group(2)
    if insn.startswith("lock ") or insn.startswith("mfence") or (insn.startswith("xchg") and "(" in insn):
        locked[int(m.group(1), 16)] = (function, insn)

# Cost lines are "ADDRESS LINE COST"; the line after "calls=" is the
# call's inclusive cost, not an execution count.
counts = collections.Counter()
in_binary = False
after_call = False
for line in open(profile):
    line = line.rstrip("\n")
    if line.startswith("ob="):
        in_binary = line.endswith(binary.split("/")[-1])
        continue
    if line.startswith("calls="):
        after_call = True
        continue
    m = re.match(r"^(0x[0-9a-f]+)\s+\S+\s+(\d+)", line)
    if not m:
        continue
    if after_call:
        after_call = False
        continue
    address = int(m.group(1), 16)
    if in_binary and address in locked:
        counts[locked[address]] += int(m.group(2))

total = 0
for (function, insn), n in sorted(counts.items(), key=lambda kv: -kv[1]):
    if n >= iterations / 10:
        print(f"{n / iterations:6.2f}  {insn[:40]:40s} {function[:100]}")
    total += n
print(f"locked instructions per iteration: {total / iterations:.2f}")

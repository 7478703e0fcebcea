#!/usr/bin/env python3
"""The summary of a bench-peers.sh run: each workload's median seconds per
server and the ratio of the first server's median to each other's, then
the same comparison paired by round (the servers take turns within a
round, so a round's ratio compares runs made under the same conditions):
the median of the rounds' ratios, and in how many rounds the first server
was faster. A ratio above 1.00: the first server is slower.

Where the runs have it, a last table gives the CPU time each server's
threads took during each workload (median seconds): what the server
itself spent, its system calls included, apart from the waits of the
round trips.

Usage: fuse/peers-summary.py RUNS_CSV [SERVER...]
  RUNS_CSV: bench-peers.sh's runs.csv
  (server,workload,round,seconds[,server_cpu_seconds]);
  SERVER: the servers to show, the first the one compared (all in the
  order they first appear, by default). The machine is read from
  machine.txt beside RUNS_CSV, where bench-peers.sh writes it.
"""

import csv
import os
import statistics
import sys


def load(path):
    """{workload: {server: {round: seconds}}} for the wall times and for
    the servers' CPU times (runs recorded before bench-peers.sh measured
    it have none), and the servers in order."""
    times, cpu, servers = {}, {}, []
    with open(path, newline="") as f:
        for server, workload, rnd, secs, *server_cpu in csv.reader(f):
            times.setdefault(workload, {}).setdefault(server, {})[int(rnd)] = float(secs)
            if server_cpu:
                cpu.setdefault(workload, {}).setdefault(server, {})[int(rnd)] = float(server_cpu[0])
            if server not in servers:
                servers.append(server)
    return times, cpu, servers


def medians(times, names, base, peers):
    """Rows of the median seconds per server and the ratios to `base`."""
    for workload, by in times.items():
        med = {n: statistics.median(by[n].values()) for n in names if n in by}
        cells = [f"{med[n]:.3f}" if n in med else "-" for n in names]
        ratios = [
            f"{med[base] / med[p]:.2f}" if base in med and med.get(p) else "-" for p in peers
        ]
        yield row([workload] + cells + ratios)


def paired(times, base, peers):
    """Rows of the median of the rounds' ratios to `base`, with the rounds
    `base` won."""
    for workload, by in times.items():
        mine = by.get(base, {})
        cells = []
        for p in peers:
            theirs = by.get(p, {})
            ratios = [mine[r] / theirs[r] for r in mine if theirs.get(r)]
            if not ratios:
                cells.append("-")
                continue
            faster = sum(1 for x in ratios if x < 1.0)
            cells.append(f"{statistics.median(ratios):.2f} ({faster}/{len(ratios)})")
        yield row([workload] + cells)


def machine(path):
    """The machine bench-peers.sh recorded beside the runs."""
    try:
        with open(os.path.join(os.path.dirname(path), "machine.txt")) as f:
            return f.read().strip()
    except OSError:
        return "machine not recorded"


def row(cells):
    return "| " + " | ".join(cells) + " |"


def main(argv):
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    path = argv[1]
    times, cpu, servers = load(path)
    names = argv[2:] or servers
    base, peers = names[0], names[1:]
    rounds = max((r for w in times.values() for s in w.values() for r in s), default=0)

    print(f"{rounds} rounds on {machine(path)}.\n")
    print(f"Median seconds; ratio = {base} / peer (above 1.00: {base} slower).\n")
    header = row(["workload"] + names + [f"vs {p}" for p in peers])
    rule = "|---" * (1 + len(names) + len(peers)) + "|"
    print(header)
    print(rule)
    for line in medians(times, names, base, peers):
        print(line)

    print(f"\nPaired by round: the median of the rounds' ratios {base} / peer, and the")
    print(f"rounds in which {base} was faster.\n")
    print(row(["workload"] + [f"vs {p}" for p in peers]))
    print("|---" * (1 + len(peers)) + "|")
    for line in paired(times, base, peers):
        print(line)

    if cpu:
        print("\nThe servers' CPU time during each workload (median seconds over the")
        print(f"rounds; ratio = {base} / peer).\n")
        print(header)
        print(rule)
        for line in medians(cpu, names, base, peers):
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Writes a tuning table with every row but only one collective's samples (default allreduce), line
for line as tutti-tune wrote it (one sample per line), so that the table tutti ships and embeds
(tuning/default.json -> include/tutti/tuner/default_table.hpp) stays small: rows answer every
measured layout; samples only feed interpolation and the model for layouts never measured.
  tools/tune/keep_samples.py IN.json OUT.json [COLLECTIVE]
then tools/embed-default-table.sh."""
import sys


def keep(lines, collective):
    out, in_samples = [], False
    for line in lines:
        if line.startswith('  "samples": ['):
            in_samples = True
        elif in_samples and line.startswith("  ]"):
            in_samples = False
            if out[-1].endswith(","):
                out[-1] = out[-1][:-1]  # the last sample kept ends the list
        elif in_samples:
            if f'"collective": "{collective}"' in line:
                out.append(line if line.endswith(",") else line + ",")
            continue
        out.append(line)
    return out


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    lines = open(src).read().split("\n")
    if not any(l.startswith('  "samples": [') for l in lines):
        sys.exit(f"{src}: no samples list as tutti-tune writes it ('  \"samples\": [' on a line of its own)")
    open(dst, "w").write("\n".join(keep(lines, sys.argv[3] if len(sys.argv) == 4 else "allreduce")))

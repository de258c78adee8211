#!/usr/bin/env python3
"""Turn a bench/sweep.py result (JSON) into a tuning table holding its medians as samples.

So the cost model can be fitted to sweeps measured before tutti-tune existed
(bench/results/sweep-*.json), with tutti-model-check / model_check.py. The table has no rows
(the model needs only samples) and says where the numbers came from in its provenance.

usage: sweep_to_table.py SWEEP.json OUT.json
"""
import json
import sys

# tutti-bench's names (bench/tutti_bench.cpp) -> the algorithms' own names, as tables write them
NAMES = {
    "ring": "ring",
    "direct": "direct",
    "tree": "tree",
    "halving_doubling": "halving_doubling",
    "hierarchical": "hierarchical<ring, ring>",
    "hierarchical_hd": "hierarchical<halving_doubling, ring>",
    "hierarchical_direct": "hierarchical<direct, ring>",
}
DTYPE_CLASS = {"float": "float", "double": "float", "half": "float", "bfloat16": "float"}
ELEMENT_BYTES = {"float": 4, "double": 8, "half": 2, "bfloat16": 2, "int32": 4, "int64": 8, "int8": 1, "uint8": 1}


def layout(world):
    """sweep.py's world '4' (one node) or '4x2' (4 ranks, simulated nodes of 2)."""
    if "x" in world:
        ranks, per_node = (int(v) for v in world.split("x"))
        return ranks, ranks // per_node, per_node
    return int(world), 1, int(world)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sweep = json.load(open(sys.argv[1]))
    meta = sweep["meta"]
    dclass = DTYPE_CLASS.get(meta.get("dtype", "float"), "integer")
    # a table counts bytes as the collective's descriptor does: count x element size, where count is
    # per rank for reduce_scatter, allgather and alltoall (the sweep's "bytes" is the whole buffer)
    esz = ELEMENT_BYTES[meta.get("dtype", "float")]
    lines = []
    for collective, worlds in sweep["median"].items():
        for world, algorithms in worlds.items():
            w, nodes, per_node = layout(world)
            for name, points in algorithms.items():
                for point in points.values():
                    if not point.get("time_us"):
                        continue
                    spread = point["time_us"] * (point.get("spread", 1.0) - 1.0)
                    lines.append(json.dumps({
                        "collective": collective, "dtype_class": dclass, "world": w, "nodes": nodes,
                        "ranks_per_node": per_node, "bytes": point["count"] * esz, "algorithm": NAMES.get(name, name),
                        "tuning": {}, "median_us": point["time_us"], "spread_us": round(spread, 3),
                        "busbw_gbs": point.get("busbw", 0)}))
    provenance = {
        "hosts": [meta.get("host", "")], "cpu": "", "date": meta.get("started", ""), "tutti_commit": "",
        "transport": "shm", "ucx_version": "", "kernel": meta.get("kernel", ""),
        "command": "bench/tuner/sweep_to_table.py " + sys.argv[1] + " (bench/sweep.py " + " ".join(meta.get("argv", [])) + ")",
        "tune_seconds": 0, "noise_rule": "medians of %s interleaved reps (bench/sweep.py); no rows chosen" % meta.get("reps", "?"),
    }
    with open(sys.argv[2], "w") as out:
        out.write('{\n  "format": "tutti-tuning-table", "version": 1,\n')
        out.write('  "provenance": ' + json.dumps(provenance) + ',\n')
        out.write('  "rows": [],\n  "samples": [\n    ' + ",\n    ".join(lines) + "\n  ]\n}\n")
    print("%s: %d samples from %s" % (sys.argv[2], len(lines), sys.argv[1]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The simulated cluster against real runs (issue 39): the same trainer, data, flags and seed run
for real in one process (inproc, W worker threads on this machine's cores) and on the simulated
platform of this machine (--transport sim --platform examples/platforms/this_machine.txt, CPU time
measured), interleaved, 3 seeds each. With --processes P > 1 the real run is P tcp processes on this
machine (scripts/launch.sh, W workers each) and the simulated one P nodes sharing the one simulated
host (this machine's platform with nodes_per_host P, written into --out). Per configuration it
reports the measured and the predicted time per iteration (the trainer's training seconds / its
iterations, Lasso: rounds) and time to target (the first iteration whose objective reaches the
target, read from the trace's elapsed_s), the error of the simulation, and the seed-to-seed spread
of the real runs (the noise floor).

  python3 benchmarks/sim_validate.py --build build [--reps 3] [--trainers mf,lda,lasso] [--processes 1] [--out DIR]

Objectives are the workers' own (--eval-every 0) on both sides: the comparison is of times, and
both sides run the same program on the same data.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GEN = os.path.join(os.path.expanduser("~"), ".cache", "strata", "gen")


def trainers(a):
    mf_data = os.path.join(GEN, "mf-10m-s1")
    lda_data = os.path.join(GEN, "lda-10m-s1")
    gen = os.path.join(a.build, "examples", "strata_gen")
    out = {}
    if "mf" in a.trainers:
        subprocess.run([gen, "mf", "--size", "10m", "--out", mf_data], check=True, stdout=subprocess.DEVNULL)
        out["mf"] = dict(exe="strata_mf", args=["--data", mf_data, "--rank", "32", "--iterations", str(a.mf_iterations),
                                                "--clocks-per-epoch", "1", "--user-order", *(["--average-items"] if a.average_items else [])],
                        field="rmse", lower=True)
    if "lda" in a.trainers:
        subprocess.run([gen, "lda", "--size", "10m", "--out", lda_data], check=True, stdout=subprocess.DEVNULL)
        out["lda"] = dict(exe="strata_lda", args=["--data", os.path.join(lda_data, "docword.10m.txt"), "--topics", "100",
                                                  "--iterations", str(a.lda_iterations)], field="objective", lower=False)
    if "lasso" in a.trainers:
        lasso_data = os.path.join(GEN, "lasso-100k-s1")
        subprocess.run([gen, "lasso", "--size", "100k", "--out", lasso_data], check=True, stdout=subprocess.DEVNULL)
        # The tuned STRADS flags of sim_study_strads.py; a fixed number of rounds (--tolerance 0).
        out["lasso"] = dict(exe="strata_lasso", args=["--data", os.path.join(lasso_data, "lasso.100k.svm"), "--lambda-fraction", "0.1",
                                                      "--batch-steps", "sequential", "--scheduler", "priority", "--batch", "1000",
                                                      "--sweeps", "3", "--evaluate-every", "100", "--tolerance", "0",
                                                      "--rounds", str(a.lasso_rounds)], field="objective", lower=True,
                            models=["strads"])  # no --consistency: the coordinator applies every step itself
    return out


def platform(a):
    """This machine's platform; with --processes P > 1, the same with its P nodes on its one host."""
    base = os.path.join(ROOT, "examples", "platforms", "this_machine.txt")
    if a.processes == 1:
        return base
    shared = os.path.join(a.out, f"this_machine_{a.processes}_nodes.txt")
    with open(base) as f, open(shared, "w") as g:
        g.write(f.read() + f"nodes_per_host {a.processes}  # sim_validate.py --processes {a.processes}\n")
    return shared


def run(a, t, workers, consistency, seed, sim, tag):
    metrics = os.path.join(a.out, f"{tag}.jsonl")
    cmd = [os.path.join(a.build, "examples", t["exe"]), *t["args"], "--workers", str(workers), "--seed", str(seed), "--quiet",
           "--metrics", metrics, *(["--consistency", consistency] if consistency != "strads" else [])]
    if sim:
        cmd += ["--transport", "sim", "--platform", a.platform, "--nodes", str(a.processes)]
    elif a.processes > 1:
        cmd = ["bash", os.path.join(ROOT, "scripts", "launch.sh"), "-n", str(a.processes), "--base-port", str(a.base_port), "--",
               *cmd, "--transport", "tcp"]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    summary = [l for l in p.stdout.splitlines() if " summary: " in l][-1]  # rank 0's under launch.sh
    fields = dict(kv.split("=", 1) for kv in summary.split() if "=" in kv)
    with open(metrics) as f:
        lines = [json.loads(l) for l in f][1:]
    iters = [l for l in lines if "iteration" in l]
    sim_line = [l for l in p.stderr.splitlines() if l.startswith("sim: ")]
    # MF and LDA trace their initial state as iteration 0 and iteration i after i iterations; Lasso
    # traces round i after i + 1 rounds. The summary says how many ran.
    count = int(fields["rounds"] if "rounds" in fields else fields["iterations"])
    return dict(seconds=float(fields["seconds"]), iterations=count, wall=wall,
                trace=[(l["elapsed_s"], l.get(t["field"])) for l in iters], sim=sim_line[0] if sim_line else "")


def time_to(trace, target, lower):
    for elapsed, v in trace:
        if v is not None and (v <= target if lower else v >= target):
            return elapsed
    return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--trainers", default="mf,lda")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--consistency", default="bsp,essp")
    ap.add_argument("--mf-iterations", type=int, default=6)
    ap.add_argument("--lda-iterations", type=int, default=6)
    ap.add_argument("--lasso-rounds", type=int, default=1500)
    ap.add_argument("--average-items", action="store_true",
                    help="strata_mf --average-items (3 data-parallel workers diverge at MF's default step without it)")
    ap.add_argument("--processes", type=int, default=1, help="P > 1: P tcp processes against P nodes on one simulated host")
    ap.add_argument("--base-port", type=int, default=29700)
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "sim", "validate"))
    a = ap.parse_args()
    a.trainers = a.trainers.split(",")
    os.makedirs(a.out, exist_ok=True)
    a.platform = platform(a)
    rows = []
    for name, t in trainers(a).items():
        for consistency in t.get("models", a.consistency.split(",")):
            for w in (int(x) for x in a.workers.split(",")):
                real, sim = [], []
                shape = f"p{a.processes}w{w}" if a.processes > 1 else f"w{w}"
                for seed in range(1, a.reps + 1):  # interleaved: real, sim, real, sim, ...
                    real.append(run(a, t, w, consistency, seed, False, f"{name}-{consistency}-{shape}-s{seed}-real"))
                    sim.append(run(a, t, w, consistency, seed, True, f"{name}-{consistency}-{shape}-s{seed}-sim"))
                # Target: what every real run reached by its middle iteration, the worst of them.
                mid = [r["trace"][len(r["trace"]) // 2][1] for r in real]
                target = max(mid) if t["lower"] else min(mid)
                per_it = lambda r: r["seconds"] / r["iterations"]
                m_it, p_it = [per_it(r) for r in real], [per_it(r) for r in sim]
                m_tt, p_tt = [time_to(r["trace"], target, t["lower"]) for r in real], [time_to(r["trace"], target, t["lower"]) for r in sim]
                med = statistics.median
                row = dict(trainer=name, consistency=consistency, processes=a.processes, workers=w, target=target,
                           measured_s_per_it=m_it, predicted_s_per_it=p_it,
                           it_error=(med(p_it) - med(m_it)) / med(m_it),
                           it_noise=(max(m_it) - min(m_it)) / med(m_it),
                           measured_tt=m_tt, predicted_tt=p_tt,
                           tt_error=(med(p_tt) - med(m_tt)) / med(m_tt),
                           tt_noise=(max(m_tt) - min(m_tt)) / med(m_tt),
                           sim_wall=[r["wall"] for r in sim], real_wall=[r["wall"] for r in real], sim=sim[-1]["sim"])
                rows.append(row)
                print(f"{name} {consistency} {shape}: s/it measured {med(m_it):.4f} (spread {row['it_noise']:.1%}) "
                      f"predicted {med(p_it):.4f} error {row['it_error']:+.1%}; to target {target:.4g}: measured {med(m_tt):.3f} s "
                      f"(spread {row['tt_noise']:.1%}) predicted {med(p_tt):.3f} s error {row['tt_error']:+.1%}", flush=True)
    with open(os.path.join(a.out, "validate.json" if a.processes == 1 else f"validate_p{a.processes}.json"), "w") as f:
        json.dump(rows, f, indent=1)
    errs = sorted(abs(r["it_error"]) for r in rows) + sorted(abs(r["tt_error"]) for r in rows)
    print(f"all: median |error| {statistics.median(errs):.1%}, max {max(errs):.1%} over {len(errs)} figures")


if __name__ == "__main__":
    main()

"""The new mechanisms side by side with their peers: HR, SS, CMS, HCMS and PEM heavy hitters.

Same machine, same run, same population, equal ε and n. The peers run in a
separate Python environment (``--peer-python``) through
``benchmarks/peer_runner.py``, because pure-ldp 1.2's CMS/HCMS servers call
``np.zeros(None)``, which NumPy ≥ 2.4 rejects; that environment has
NumPy < 2 (see peer_runner.py for how to build it). Without it the peer
columns are left out, with a message.

=========  ==============================================  ============================================
row        ours (batch path, one process)                  peer (its own environment, one process)
=========  ==============================================  ============================================
HR         ``hr``, B blocks as pure-ldp chooses them        pure-ldp HadamardResponse (high-privacy HR
           (1 for ε ≤ 1, else 2^⌊log₂ min(e^ε, 2d)⌋)       for ε ≤ 1, general HR above)
SS         ``ss``, ω = max(1, rint(d/(e^ε + 1)))           multi-freq-ldpy SS (plain inversion)
CMS, HCMS  ``cms``/``hcms``, k hashes × m columns           pure-ldp CMS / HCMS, same k and m
PEM        ``pem`` (OLH per group), m = 8·max_length bits,  pure-ldp PEM on the same m-bit strings,
           γ = ⌊log₂ k⌋ + 1, step η, g groups              start_length = γ − η, fragment_length = η
                                                            (so the same g and prefix lengths), with a
                                                            CMS oracle per group (see below)
=========  ==============================================  ============================================

Frequency oracles: n users drawn from Zipf(1.1) over d = 1,024 values
(``bench_peers.population``), and the error is the MSE of the count
estimates over the d values, also divided by the theoretical variance of
our spec (``spec.variance``; ≈ 1 for an unbiased oracle). Heavy hitters: n
users drawn from the English word frequencies of ``wordfreq`` (words of at
most ``--pem-max-length`` bytes), top-k precision (the share of the true k
most frequent words among the k found) and the MSE of the found words'
count estimates (a wrong word counts with its true count, often 0).

pure-ldp's PEM runs OLH per group by default, but its OLH server hashes
every report against all 2^ℓ prefixes of its group and allocates a 2^ℓ
array, so it cannot run beyond ℓ ≈ 20 bits; its own paper experiments run
PEM with a CMS oracle (k = 32 hashes, m = 1,024 columns), and so does this
benchmark (``--pem-peer-oracle``: cms or hcms; CMS is the more accurate of
the two at every ε). pure-ldp's last round asks for γ + (g − 1)η bits even
when that exceeds m (its client truncates the prefix, its server does not,
so no last-round candidate matches a report and top-20 finds nothing at
m = 64); peer_runner.py appends zero bits to the peer's strings up to that
length, which adds no information and keeps every round meaningful.

Times are wall clock: ours the median of ``--repeats`` runs of encode +
aggregate + estimate (the registered batch encoder with a seeded NumPy
generator, the registered accumulator, ``estimate``); the peer's the sum of
its privatise, aggregate and estimate phases in one run (its interpreter
start and imports are not counted). ``--peer-cap N`` runs the peers on the
first N users only and extrapolates their time linearly to n (marked ``~``;
their MSE is then of N users, so compare MSE/theory, not MSE).

Usage::

    python benchmarks/bench_new_mechanisms.py                      # n = 1M, ε ∈ {0.5, 1, 2, 4}
    python benchmarks/bench_new_mechanisms.py --mechanisms hr ss --users 100000 --epsilons 1
    python benchmarks/bench_new_mechanisms.py --peer-python /path/to/old/venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import ldp
from ldp.aggregator import make_aggregator
from ldp.client import encode_batch
from ldp.errors import ParameterError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_peers import population  # (the same Zipf population as the other peer benchmark)

ORACLES = ("hr", "ss", "cms", "hcms")
MECHANISMS = (*ORACLES, "pem")
PEER_OF = {
    "hr": "pure-ldp",
    "ss": "multi-freq-ldpy",
    "cms": "pure-ldp",
    "hcms": "pure-ldp",
    "pem": "pure-ldp",
}
DEFAULT_PEER_PYTHON = "/work/venv-peers-old/bin/python"
RUNNER = Path(__file__).resolve().parent / "peer_runner.py"


# -- populations -------------------------------------------------------------------


def word_population(n: int, max_length: int, seed: int) -> list[str]:
    """n words drawn from wordfreq's English frequencies (words of at most ``max_length`` UTF-8 bytes)."""
    try:
        import wordfreq
    except ImportError:
        raise SystemExit('the heavy-hitter rows need wordfreq: pip install -e ".[bench]"') from None
    table = wordfreq.get_frequency_dict("en")
    words = [w for w in table if len(w.encode("utf-8")) <= max_length and w.isprintable() and " " not in w]
    weights = np.array([table[w] for w in words])
    rng = np.random.default_rng([seed, 2])  # its own stream: never the encoder's
    picks = rng.choice(len(words), size=n, p=weights / weights.sum())
    return [words[i] for i in picks]


# -- specs at the peer's settings ----------------------------------------------------


def hr_blocks(epsilon: float, d: int) -> int:
    """pure-ldp's B: high-privacy HR (one block) for ε ≤ 1, else 2^⌊log₂ min(e^ε, 2d)⌋."""
    if epsilon <= 1:
        return 1
    return 1 << math.floor(math.log2(min(math.exp(epsilon), 2 * d)))


def ss_omega(epsilon: float, d: int) -> int:
    """multi-freq-ldpy's ω = max(1, rint(d/(e^ε + 1)))."""
    return max(1, int(np.rint(d / (math.exp(epsilon) + 1))))


def oracle_spec(mechanism: str, epsilon: float, d: int, args) -> dict[str, Any]:
    """Our spec (dict form, for ``ldp.load_spec``) at the peer's parameters."""
    spec: dict[str, Any] = {"mechanism": mechanism, "domain": list(range(d)), "epsilon": epsilon}
    if mechanism == "hr":
        spec["blocks"] = hr_blocks(epsilon, d)
    elif mechanism == "ss":
        spec["omega"] = ss_omega(epsilon, d)
    elif mechanism in ("cms", "hcms"):
        spec[args.cms_k_field] = args.cms_k
        spec[args.cms_m_field] = args.cms_m
    return spec


def pem_spec(epsilon: float, top_k: int, args) -> dict[str, Any]:
    return {
        "mechanism": "pem",
        "epsilon": epsilon,
        "max_length": args.pem_max_length,
        "top_k": top_k,
        "eta": args.pem_eta,
    }


# -- ours ----------------------------------------------------------------------------


def _median_time(run: Callable[[int], tuple[float, Any]], repeats: int, seed: int) -> tuple[float, Any]:
    """(median seconds, output of the first run) over ``repeats`` seeds."""
    runs = [run(seed + r) for r in range(repeats)]
    return statistics.median(r[0] for r in runs), runs[0][1]


def ours_oracle(
    spec_dict: dict, values: np.ndarray, seed: int, repeats: int
) -> tuple[float, np.ndarray, float]:
    """(seconds, count estimates of the d values, theoretical MSE) of encode + aggregate + estimate."""
    spec = ldp.load_spec(spec_dict)

    def run(s: int) -> tuple[float, np.ndarray]:
        rng = np.random.default_rng([s, 1])
        start = time.perf_counter()
        batch = encode_batch(spec, values, rng, indices=True)
        accumulator = make_aggregator(spec)
        accumulator.add_batch(batch)
        table = accumulator.estimate()
        return time.perf_counter() - start, table["estimate"].to_numpy(dtype=float)

    _warm_up(spec, values[:1000], indices=True)
    seconds, estimates = _median_time(run, repeats, seed)
    return seconds, estimates, oracle_theory(spec, np.bincount(values, minlength=len(spec_dict["domain"])))


def oracle_theory(spec, true_counts: np.ndarray) -> float:
    """Mean over the values of the variance of an unbiased count estimate (NaN if the spec has no formula)."""
    n = int(true_counts.sum())
    try:
        return float(np.mean(np.asarray(spec.variance(true_counts / n, n)) * n * n))
    except (AttributeError, NotImplementedError, TypeError):
        return float("nan")


def ours_pem(
    spec_dict: dict, words: list[str], seed: int, repeats: int
) -> tuple[float, list[tuple[str, float]]]:
    """(seconds, found [(word, count estimate)], most frequent first) of encode + aggregate + search."""
    spec = ldp.load_spec(spec_dict)

    def run(s: int) -> tuple[float, list[tuple[str, float]]]:
        rng = np.random.default_rng([s, 1])
        start = time.perf_counter()
        batch = encode_batch(spec, words, rng)
        accumulator = make_aggregator(spec)
        accumulator.add_batch(batch)
        table = accumulator.estimate()
        seconds = time.perf_counter() - start
        table = table.sort_values("estimate", ascending=False)
        return seconds, list(zip(table["value"].astype(str), table["estimate"].astype(float)))

    _warm_up(spec, words[:1000], indices=False)
    return _median_time(run, repeats, seed)


def _warm_up(spec, values, *, indices: bool) -> None:
    """One untimed small run: lazy imports and caches are not the mechanism's cost."""
    accumulator = make_aggregator(spec)
    accumulator.add_batch(encode_batch(spec, values, np.random.default_rng(0), indices=indices))
    accumulator.estimate()


# -- the peer ----------------------------------------------------------------------------


def run_peer(python: str, job: dict, threads: int) -> dict:
    """One peer job through peer_runner.py in the peer environment; {"error": ...} when it fails."""
    env = dict(os.environ)
    if threads:
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
            env[name] = str(threads)
    done = subprocess.run(
        [python, str(RUNNER)], input=json.dumps(job), capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"peer failed ({done.returncode}): {last}"}
    return json.loads(done.stdout)


def peer_seconds(result: dict) -> float:
    return result["encode_seconds"] + result["aggregate_seconds"] + result["estimate_seconds"]


def check_peer(python: str) -> str | None:
    """None when the peer environment works, else why not."""
    if not Path(python).exists():
        return f"no peer Python at {python}"
    probe = "import numpy, pure_ldp, multi_freq_ldpy; print(numpy.__version__)"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"{python} cannot import the peers: {(done.stderr.strip().splitlines() or ['?'])[-1]}"
    if int(done.stdout.split(".")[0]) >= 2:
        return f"{python} has NumPy {done.stdout.strip()}: pure-ldp's CMS/HCMS need NumPy < 2"
    return None


# -- metrics -------------------------------------------------------------------------------


def precision(found: list, truth: Counter, k: int) -> float:
    """Share of the true k most frequent values among the first k found."""
    top = {w for w, _ in truth.most_common(k)}
    return len(top & {w for w, _ in found[:k]}) / k


def found_mse(found: list, truth: Counter, k: int) -> float:
    """MSE of the count estimates of the first k found values (a wrong value's true count is often 0)."""
    pairs = found[:k]
    if not pairs:
        return float("nan")
    return float(np.mean([(c - truth.get(w, 0)) ** 2 for w, c in pairs]))


# -- the tables ------------------------------------------------------------------------------


def _fmt(x: float, spec: str) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def oracle_rows(args, peer: str | None, workdir: Path, record: list) -> None:
    d, n = args.domain, args.users
    values = population(n, d, args.seed)
    path = workdir / "oracle_population.npy"
    np.save(path, values)
    cap = None if args.peer_cap is None or args.peer_cap >= n else args.peer_cap
    truth = np.bincount(values, minlength=d)
    truth_cap = truth if cap is None else np.bincount(values[:cap], minlength=d)
    head = (
        f"{'mechanism':<9} {'ε':>4} {'ours s':>8} {'peer s':>9} {'speed':>7} | "
        f"{'ours MSE':>10} {'peer MSE':>10} {'MSE ratio':>9} | {'ours/th':>7} {'peer/th':>7}  peer"
    )
    print(f"\nFrequency oracles: d = {d:,}, n = {n:,}, Zipf(1.1)")
    print(head)
    print("-" * len(head))
    for mechanism in [m for m in args.mechanisms if m in ORACLES]:
        for epsilon in args.epsilons:
            spec_dict = oracle_spec(mechanism, epsilon, d, args)
            row: dict[str, Any] = {"mechanism": mechanism, "epsilon": epsilon, "n": n, "d": d}
            try:
                seconds, estimates, theory = ours_oracle(spec_dict, values, args.seed, args.repeats)
                mse = float(np.mean((estimates - truth) ** 2))
                row.update(ours_seconds=seconds, ours_mse=mse, theory=theory)
            except ParameterError as exc:
                row["ours_error"] = str(exc)
                seconds = mse = theory = float("nan")
            p_seconds = p_mse = p_theory = float("nan")
            peer_name = PEER_OF[mechanism]
            if peer is None:
                result: dict = {"error": "skipped"}
            else:
                job = {
                    "library": peer_name,
                    "mechanism": mechanism,
                    "epsilon": epsilon,
                    "population": str(path),
                    "d": d,
                    "n": cap,
                    "seed": args.seed,
                    "params": {"k": args.cms_k, "m": args.cms_m},
                }
                result = run_peer(peer, job, args.blas_threads)
            if "error" not in result:
                p_estimates = np.asarray(result["estimates"], dtype=float)
                p_seconds = peer_seconds(result) * n / result["n"]
                p_mse = float(np.mean((p_estimates - truth_cap) ** 2))
                p_theory = (
                    oracle_theory(ldp.load_spec(spec_dict), truth_cap)
                    if "ours_error" not in row
                    else math.nan
                )
                row.update(peer=result, peer_seconds=p_seconds, peer_mse=p_mse, peer_theory=p_theory)
            else:
                row["peer_error"] = result["error"]
            record.append(row)
            mark = "~" if cap is not None else ""
            line = (
                f"{mechanism.upper():<9} {epsilon:>4g} {_fmt(seconds, '.3f'):>8} "
                f"{mark + _fmt(p_seconds, '.2f'):>9} {_fmt(p_seconds / seconds, '.0f') + '×':>7} | "
                f"{_fmt(mse, '.4g'):>10} {_fmt(p_mse, '.4g'):>10} {_fmt(mse / p_mse, '.3f'):>9} | "
                f"{_fmt(mse / theory, '.2f'):>7} {_fmt(p_mse / p_theory, '.2f'):>7}  {peer_name}"
            )
            for key in ("ours_error", "peer_error"):
                if key in row:
                    line += f"\n    {key.split('_')[0]}: {row[key]}"
            if args.ours_defaults and "ours_error" not in row:
                line += "\n" + ours_default_line(mechanism, epsilon, d, values, truth, args, row)
            print(line, flush=True)


def ours_default_line(mechanism: str, epsilon: float, d: int, values, truth, args, row: dict) -> str:
    """Our spec at its own default parameters (not the peer's): one indented line, recorded in ``row``."""
    spec_dict = {"mechanism": mechanism, "domain": list(range(d)), "epsilon": epsilon}
    spec = ldp.load_spec(spec_dict)
    seconds, estimates, theory = ours_oracle(spec_dict, values, args.seed, args.repeats)
    mse = float(np.mean((estimates - truth) ** 2))
    names = {"hr": "blocks", "ss": "omega", "cms": "k", "hcms": "k"}
    shown = ", ".join(f"{f}={getattr(spec, f)}" for f in (names[mechanism], "m") if hasattr(spec, f))
    row.update(default_params=shown, default_seconds=seconds, default_mse=mse, default_theory=theory)
    peer_mse = row.get("peer_mse", math.nan)
    return (
        f"    ours at our defaults ({shown}): {seconds:.3f} s, MSE {mse:.4g} "
        f"(÷ peer {_fmt(mse / peer_mse, '.3f')}), MSE/th {_fmt(mse / theory, '.2f')}"
    )


def pem_rows(args, peer: str | None, workdir: Path, record: list) -> None:
    n = args.users if args.pem_users is None else args.pem_users
    words = word_population(n, args.pem_max_length, args.seed)
    path = workdir / "words.txt"
    path.write_text("\n".join(words) + "\n", encoding="utf-8")
    cap = None if args.peer_cap is None or args.peer_cap >= n else args.peer_cap
    truth = Counter(words)
    truth_cap = truth if cap is None else Counter(words[:cap])
    bits = 8 * args.pem_max_length
    print(
        f"\nHeavy hitters (PEM): n = {n:,} English words (wordfreq, ≤ {args.pem_max_length} bytes), "
        f"m = {bits} bits, η = {args.pem_eta}; peer oracle: {args.pem_peer_oracle.upper()} "
        f"k = {args.pem_peer_k}, m = {args.pem_peer_m}"
    )
    head = (
        f"{'top-k':<6} {'ε':>4} {'g':>3} {'ours s':>8} {'peer s':>9} {'speed':>7} | "
        f"{'prec ours':>9} {'prec peer':>9} | {'ours MSE':>10} {'peer MSE':>10}"
    )
    print(head)
    print("-" * len(head))
    for top_k in args.top_k:
        gamma = top_k.bit_length()
        groups = 1 + -(-(bits - gamma) // args.pem_eta)
        for epsilon in args.epsilons:
            row: dict[str, Any] = {
                "mechanism": "pem",
                "top_k": top_k,
                "epsilon": epsilon,
                "n": n,
                "groups": groups,
            }
            try:
                seconds, found = ours_pem(pem_spec(epsilon, top_k, args), words, args.seed, args.repeats)
                prec, mse = precision(found, truth, top_k), found_mse(found, truth, top_k)
                row.update(ours_seconds=seconds, ours_precision=prec, ours_mse=mse, ours_top=found[:top_k])
            except ParameterError as exc:
                row["ours_error"] = str(exc)
                seconds = prec = mse = float("nan")
            p_seconds = p_prec = p_mse = float("nan")
            if peer is None:
                result: dict = {"error": "skipped"}
            else:
                job = {
                    "library": "pure-ldp",
                    "mechanism": "pem",
                    "epsilon": epsilon,
                    "population": str(path),
                    "n": cap,
                    "seed": args.seed,
                    "params": {
                        "bits": bits,
                        "gamma": gamma,
                        "eta": args.pem_eta,
                        "top_k": top_k,
                        "oracle": args.pem_peer_oracle,
                        "k": args.pem_peer_k,
                        "m": args.pem_peer_m,
                    },
                }
                result = run_peer(peer, job, args.blas_threads)
            if "error" not in result:
                p_found = [(w, c) for w, c in result["top"]]
                p_seconds = peer_seconds(result) * n / result["n"]
                p_prec, p_mse = precision(p_found, truth_cap, top_k), found_mse(p_found, truth_cap, top_k)
                if result["groups"] != groups:
                    row["peer_error"] = f"peer has g = {result['groups']} groups, ours {groups}"
                row.update(peer=result, peer_seconds=p_seconds, peer_precision=p_prec, peer_mse=p_mse)
            else:
                row["peer_error"] = result["error"]
            record.append(row)
            mark = "~" if cap is not None else ""
            line = (
                f"{top_k:<6} {epsilon:>4g} {groups:>3} {_fmt(seconds, '.3f'):>8} "
                f"{mark + _fmt(p_seconds, '.2f'):>9} {_fmt(p_seconds / seconds, '.0f') + '×':>7} | "
                f"{_fmt(prec, '.2f'):>9} {_fmt(p_prec, '.2f'):>9} | {_fmt(mse, '.4g'):>10} {_fmt(p_mse, '.4g'):>10}"
            )
            for key in ("ours_error", "peer_error"):
                if key in row:
                    line += f"\n    {key.split('_')[0]}: {row[key]}"
            print(line, flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mechanisms", nargs="+", choices=MECHANISMS, default=list(MECHANISMS))
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.5, 1.0, 2.0, 4.0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--domain", type=int, default=1024, help="d of the frequency-oracle rows")
    parser.add_argument("--peer-python", default=DEFAULT_PEER_PYTHON, help="Python of the peer environment")
    parser.add_argument("--peer-cap", type=int, default=None, help="run the peers on the first N users only")
    parser.add_argument("--repeats", type=int, default=3, help="our runs per row (median time)")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument(
        "--cms-k", type=int, default=128, help="CMS/HCMS hash functions (pure-ldp's experiments: 128)"
    )
    parser.add_argument("--cms-m", type=int, default=1024, help="CMS/HCMS columns (a power of 2 for HCMS)")
    parser.add_argument("--cms-k-field", default="k", help="name of our CMS spec's hash-count field")
    parser.add_argument("--cms-m-field", default="m", help="name of our CMS spec's column-count field")
    parser.add_argument("--top-k", nargs="+", type=int, default=[10, 20])
    parser.add_argument("--pem-users", type=int, default=None, help="users of the PEM rows (default --users)")
    parser.add_argument("--pem-max-length", type=int, default=8, help="longest word in bytes (m = 8× bits)")
    parser.add_argument("--pem-eta", type=int, default=4, help="bits added per PEM round")
    parser.add_argument("--pem-peer-oracle", choices=("cms", "hcms"), default="cms")
    parser.add_argument("--pem-peer-k", type=int, default=32, help="hashes of the peer's PEM oracle")
    parser.add_argument("--pem-peer-m", type=int, default=1024, help="columns of the peer's PEM oracle")
    parser.add_argument(
        "--ours-defaults", action="store_true", help="also run our oracles at their own default parameters"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write every row (and raw results) here")
    parser.add_argument(
        "--blas-threads", type=int, default=1, help="BLAS threads for everyone (0: library default)"
    )
    args = parser.parse_args(argv)
    peer: str | None = args.peer_python
    problem = check_peer(args.peer_python)
    if problem:
        print(f"PEER COLUMNS SKIPPED: {problem} (see benchmarks/peer_runner.py for the environment)")
        peer = None
    print(
        f"Python {sys.version.split()[0]}, NumPy {np.__version__}; peers in {args.peer_python} "
        f"(NumPy < 2: pure-ldp's CMS/HCMS servers crash on NumPy 2.4); BLAS threads {args.blas_threads or 'default'}"
    )
    record: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="bench-new-") as tmp:
        if args.blas_threads:
            from threadpoolctl import threadpool_limits

            with threadpool_limits(limits=args.blas_threads):
                _tables(args, peer, Path(tmp), record)
        else:
            _tables(args, peer, Path(tmp), record)
    print("\nspeed: peer seconds ÷ ours (same run). MSE ratio: ours ÷ peer (< 1: ours is more accurate).")
    print("ours/th, peer/th: MSE ÷ the theoretical variance of our spec (≈ 1 for an unbiased oracle).")
    print("~: peer run on --peer-cap users, time extrapolated linearly; its MSE is of those users.")
    if args.json:
        args.json.write_text(json.dumps(record, indent=1, default=str), encoding="utf-8")


def _tables(args, peer: str | None, workdir: Path, record: list) -> None:
    if any(m in ORACLES for m in args.mechanisms):
        oracle_rows(args, peer, workdir, record)
    if "pem" in args.mechanisms:
        pem_rows(args, peer, workdir, record)


if __name__ == "__main__":
    main()

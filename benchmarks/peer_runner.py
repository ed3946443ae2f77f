"""Run one peer-library job and print its result as JSON (the peer half of bench_new_mechanisms.py).

This script runs in a *separate* Python environment that has the peer
libraries and an older NumPy: pure-ldp 1.2's CMS/HCMS servers (and its
PCS, TreeHist and SFP servers, and PEM when it runs on CMS) call
``np.zeros(None)`` in ``FreqOracleServer.__init__``, which NumPy 2.4 rejects
(``TypeError: Use () not None as shape arguments``; deprecated since NumPy
1.20). It never imports ``ldp``. Build the environment with::

    python -m venv /work/venv-peers-old
    /work/venv-peers-old/bin/pip install "numpy<2" pure-ldp multi-freq-ldpy "xxhash<4" scikit-learn statsmodels

The job is a JSON object, given as the first argument or on stdin::

    {"library": "pure-ldp", "mechanism": "cms", "epsilon": 1.0,
     "population": "/tmp/pop.npy", "d": 1024, "n": 20000, "seed": 7,
     "params": {"k": 16, "m": 1024}}

``population`` is the file the driver wrote: a ``.npy`` array of value
indices 0 … d−1 (frequency oracles) or a text file of one string per line
(heavy hitters). ``n`` (optional) runs the first n users only. Mechanisms:

==========  ===================  ==================================================
mechanism   library              what runs
==========  ===================  ==================================================
cms         pure-ldp             CMSClient/CMSServer, k hashes, m columns
hcms        pure-ldp             the same with ``is_hadamard=True``
hr          pure-ldp             HadamardResponseClient/Server (high-privacy HR for
                                 ε ≤ 1, general HR above)
ss          multi-freq-ldpy      SS_Client / SS_Aggregator_MI, unbiased inversion
grr         pure-ldp             DEClient/DEServer (a reference row)
pem         pure-ldp             PEMClient/PEMServer over the strings' bits, with an
                                 OLH or a CMS/HCMS oracle per group (``params``)
==========  ===================  ==================================================

The output is one JSON object: the times of the three phases (``encode``:
every ``privatise``; ``aggregate``: every ``aggregate``; ``estimate``: the
estimates or the heavy-hitter search), and ``estimates`` (count estimates of
the d values) or ``top`` (the heavy hitters, most frequent first, with their
estimated counts). Reports are privatised and aggregated in chunks so a
CMS report (an m-vector) never piles up in memory. The peers draw their
coins from Python's ``random`` and NumPy's global generator, which are
seeded with ``seed`` here.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from importlib.metadata import version

import numpy as np

CHUNK = 20_000


def _chunks(values: list, size: int = CHUNK):
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _run_reports(client, server, values: list) -> tuple[float, float]:
    """Privatise then aggregate every value, chunk by chunk: (encode s, aggregate s)."""
    encode = aggregate = 0.0
    privatise, add = client.privatise, server.aggregate
    for chunk in _chunks(values):
        start = time.perf_counter()
        reports = [privatise(v) for v in chunk]
        middle = time.perf_counter()
        for report in reports:
            add(report)
        encode += middle - start
        aggregate += time.perf_counter() - middle
    return encode, aggregate


# -- frequency oracles ------------------------------------------------------------------


def _pure_ldp_oracle(job: dict, values: list[int]) -> dict:
    """CMS, HCMS, HR or GRR of pure-ldp over the values 0 … d−1 (pure-ldp hashes str(v))."""
    eps, d, params, mech = float(job["epsilon"]), int(job["d"]), job.get("params", {}), job["mechanism"]
    if mech in ("cms", "hcms"):
        from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer

        hadamard = mech == "hcms"
        server = CMSServer(eps, int(params["k"]), int(params["m"]), is_hadamard=hadamard)
        client = CMSClient(eps, server.get_hash_funcs(), int(params["m"]), is_hadamard=hadamard)
        items = values  # CMS hashes the item itself: no index mapping
        queries: list = list(range(d))
    elif mech == "hr":
        from pure_ldp.frequency_oracles.hadamard_response import (
            HadamardResponseClient,
            HadamardResponseServer,
        )

        server = HadamardResponseServer(eps, d)
        client = HadamardResponseClient(eps, d, server.get_hash_funcs())
        items = [v + 1 for v in values]  # pure-ldp's default index mapper takes 1 … d
        queries = list(range(1, d + 1))
    elif mech == "grr":
        from pure_ldp.frequency_oracles import DEClient, DEServer

        server, client = DEServer(eps, d), DEClient(eps, d)
        items = [v + 1 for v in values]
        queries = list(range(1, d + 1))
    else:
        raise ValueError(f"pure-ldp has no frequency oracle {mech!r} in this runner")
    encode, aggregate = _run_reports(client, server, items)
    start = time.perf_counter()
    estimates = [float(server.estimate(q, suppress_warnings=True)) for q in queries]
    return {
        "encode_seconds": encode,
        "aggregate_seconds": aggregate,
        "estimate_seconds": time.perf_counter() - start,
        "estimates": estimates,
    }


def _unbiased_mi(count_report, n, p, q):
    """multi-freq-ldpy's matrix inversion without its clip-and-renormalize step (unbiased)."""
    return (np.asarray(count_report, dtype=float) - n * q) / (p - q) / n


def _multi_freq_ldpy_ss(job: dict, values: list[int]) -> dict:
    """multi-freq-ldpy's subset selection; its clip-and-renormalize step replaced by the plain inversion."""
    from multi_freq_ldpy.pure_frequency_oracles import SS

    SS.MI = _unbiased_mi  # same counts, same arithmetic; only the biased post-processing is dropped
    eps, d = float(job["epsilon"]), int(job["d"])
    SS.SS_Client(0, d, eps)  # numba compiles on the first call: keep it out of the timing
    start = time.perf_counter()
    reports = [SS.SS_Client(v, d, eps) for v in values]
    middle = time.perf_counter()
    freq = SS.SS_Aggregator_MI(reports, d, eps)
    end = time.perf_counter()
    return {
        "encode_seconds": middle - start,
        "aggregate_seconds": end - middle,  # counting and inversion are one call
        "estimate_seconds": 0.0,
        "estimates": (np.asarray(freq, dtype=float) * len(values)).tolist(),
    }


# -- heavy hitters ----------------------------------------------------------------------


def _bits(word: str, length: int) -> str:
    """The first ``length`` bits of the word's UTF-8 bytes, zero-padded (PEM's m-bit strings)."""
    raw = word.encode("utf-8")
    return "".join(f"{byte:08b}" for byte in raw)[:length].ljust(length, "0")


def _pure_ldp_pem(job: dict, words: list[str]) -> dict:
    """pure-ldp's PEM over m-bit strings (the words' UTF-8 bytes, truncated/zero-padded to m bits).

    pure-ldp's group i reports the prefix of ``start_length + (i + 1)·fragment_length``
    bits, g = ⌈(m − start_length)/fragment_length⌉ groups; the PEM paper's first
    prefix γ and step η are start_length = γ − η, fragment_length = η. The
    per-group oracle is OLH (``params["oracle"] = "olh"``, pure-ldp's default:
    its server hashes every report against all 2^prefix values, so only short
    strings are feasible) or CMS/HCMS with k hashes and m columns.
    """
    from pure_ldp.heavy_hitters.prefix_extending import PEMClient, PEMServer

    eps, params = float(job["epsilon"]), job["params"]
    bits = int(params["bits"])
    gamma, eta = int(params["gamma"]), int(params["eta"])
    start_length = gamma - eta
    oracle = params.get("oracle", "olh")
    fo_client = fo_server = None
    if oracle in ("cms", "hcms"):
        from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer

        hadamard = oracle == "hcms"
        fo_server = CMSServer(eps, int(params["k"]), int(params["m"]), is_hadamard=hadamard)
        fo_client = CMSClient(eps, fo_server.get_hash_funcs(), int(params["m"]), is_hadamard=hadamard)
    elif oracle != "olh":
        raise ValueError(f"unknown PEM oracle {oracle!r}: olh, cms or hcms")
    # pure-ldp's last round asks for start_length + g·η bits even when that exceeds the strings'
    # length (its client truncates the prefix, its server does not, so no candidate of the last round
    # matches any report); zero bits appended up to that length keep every round meaningful and add
    # no information (our PEM's last round reads min(γ + (g − 1)η, m) bits instead).
    groups = -(-(bits - start_length) // eta)
    padded = start_length + groups * eta
    kwargs = {"start_length": start_length, "max_string_length": padded, "fragment_length": eta}
    client = PEMClient(eps, fo_client=fo_client, **kwargs)
    server = PEMServer(eps, fo_server=fo_server, **kwargs)
    strings = [_bits(w, bits).ljust(padded, "0") for w in words]
    encode, aggregate = _run_reports(client, server, strings)
    start = time.perf_counter()
    found, counts = server.find_heavy_hitters(k=int(params["top_k"]))
    seconds = time.perf_counter() - start
    # a found string with a 1 among the appended bits is no user's string: dropped (like ours, the
    # list can then be shorter than k)
    top = [[_unbits(s[:bits]), float(c)] for s, c in zip(found, counts) if "1" not in s[bits:]]
    return {
        "encode_seconds": encode,
        "aggregate_seconds": aggregate,
        "estimate_seconds": seconds,
        "groups": server.g,
        "top": top,
    }


def _unbits(bits: str) -> str:
    """The word back from its bits: whole bytes, trailing zero bytes dropped (no valid encoding: hex)."""
    raw = bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits) - len(bits) % 8, 8)).rstrip(b"\0")
    try:
        return raw.hex() if b"\0" in raw else raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.hex()


# -- job --------------------------------------------------------------------------------

RUNNERS = {
    ("pure-ldp", "cms"): _pure_ldp_oracle,
    ("pure-ldp", "hcms"): _pure_ldp_oracle,
    ("pure-ldp", "hr"): _pure_ldp_oracle,
    ("pure-ldp", "grr"): _pure_ldp_oracle,
    ("multi-freq-ldpy", "ss"): _multi_freq_ldpy_ss,
    ("pure-ldp", "pem"): _pure_ldp_pem,
}
DISTRIBUTIONS = {"pure-ldp": "pure-ldp", "multi-freq-ldpy": "multi-freq-ldpy"}


def load_population(path: str, n: int | None) -> list:
    """The users' values: a .npy of value indices, or a text file of one string per line."""
    if path.endswith(".npy"):
        values = np.load(path).astype(np.int64).tolist()
    else:
        with open(path, encoding="utf-8") as handle:
            values = handle.read().split("\n")
        if values and values[-1] == "":
            values.pop()
    return values if n is None else values[:n]


def run(job: dict) -> dict:
    """Run one job (see the module docstring) and return its result."""
    key = (job["library"], job["mechanism"])
    if key not in RUNNERS:
        known = ", ".join(f"{lib}/{mech}" for lib, mech in RUNNERS)
        raise ValueError(f"no peer runner for {key[0]}/{key[1]}; known: {known}")
    values = load_population(job["population"], job.get("n"))
    if not values:
        raise ValueError(f"population file {job['population']!r} has no users")
    seed = int(job.get("seed", 0))
    random.seed(seed)  # the peers draw their coins from the global generators
    np.random.seed(seed % 2**32)
    result = RUNNERS[key](job, values)
    result.update(
        library=job["library"],
        library_version=version(DISTRIBUTIONS[job["library"]]),
        mechanism=job["mechanism"],
        epsilon=float(job["epsilon"]),
        n=len(values),
        numpy_version=np.__version__,
        python_version=sys.version.split()[0],
    )
    if not all(math.isfinite(x) for x in result.get("estimates", [])):
        result["warning"] = "non-finite estimates"
    return result


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    job = json.loads(argv[0] if argv else sys.stdin.read())
    json.dump(run(job), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

"""A bounded run of the source fuzzer (source_fuzz.py): a few hundred generated kernels with fixed
seeds, valid ones checked against the model's results, mutants checked for clean rejections.
Every crash, hang, internal error, location-less compile error, leaked Python exception,
rejected valid kernel or wrong result fails the test, listing the seeds to replay with
`python tests/fuzz/source_fuzz.py --replay SEED`.

Environment: QD_FUZZ_CASES (default 1200) and QD_FUZZ_JOBS (default 2)."""

import os

from source_fuzz import case_seed, run_pool, summary


def test_source_fuzz_fixed_seeds():
    cases = int(os.environ.get("QD_FUZZ_CASES", "1200"))
    jobs = int(os.environ.get("QD_FUZZ_JOBS", "2"))
    counts, failures = run_pool([case_seed(7, k) for k in range(cases)], jobs=jobs, timeout=60.0)
    report = "\n".join(f"seed {seed}: {cat}: {text.splitlines()[0] if text else ''}"
                       for seed, cat, text in failures[:20])
    assert not failures, summary(counts) + "\n" + report
    assert sum(counts.values()) == cases

"""jaxq.sim.STREAM_VERSION names the simulators' numbers: experiment chunks carry it, so that a resumed run never
mixes two versions. A change that alters any simulator's output regenerates the golden files
(tests/sim/test_event_bitidentical.py and tests/sim/test_bitidentical.py, ``--write``); this test then fails until
STREAM_VERSION is bumped and the table below gets the new contents' digests."""

import hashlib
from pathlib import Path

import numpy as np

from jaxq.sim import STREAM_VERSION

DATA = Path(__file__).parent / "data"
GOLDEN = {  # STREAM_VERSION -> sha256 of each golden file's arrays (names, dtypes, shapes, bytes)
    2: {
        "event_outputs.npz": "f3b7aa2b963b5a717668609dbe63ee76d082c204c2247c65629ad56d8ad035cf",
        "bitidentical.npz": "0e20150ff56335b801671bcf9a829971c95546c293eddc47fd48ca25c626ae24",
    },
    3: {
        "event_outputs.npz": "53fe37ce25bccb821a9d4730c6d97090aff28ad28071c3f5afe7994fb09823cb",
        "bitidentical.npz": "0e20150ff56335b801671bcf9a829971c95546c293eddc47fd48ca25c626ae24",
    },
    4: {
        "event_outputs.npz": "53fe37ce25bccb821a9d4730c6d97090aff28ad28071c3f5afe7994fb09823cb",
        "bitidentical.npz": "0a4c9d4f8942a6550c1311eb3eca170ea50ab0403745bec672d4fa7f5b07b4ef",
    },
    5: {  # three gamma-only cases added to event_outputs.npz (the earlier cases' arrays unchanged)
        "event_outputs.npz": "d4e040861c9ba5f18cb4e8a0bb55a34b1975bf33df615d9a41f5145efd8809a6",
        "bitidentical.npz": "0a4c9d4f8942a6550c1311eb3eca170ea50ab0403745bec672d4fa7f5b07b4ef",
    },
    6: {  # the gamma-only and the mixed gamma cases (the step envelope); the other cases' arrays unchanged
        "event_outputs.npz": "5ea3d59153e080a86ed0cf2b83fdb0b607b1dd684ebd0f9b42e75319651b4a66",
        "bitidentical.npz": "0a4c9d4f8942a6550c1311eb3eca170ea50ab0403745bec672d4fa7f5b07b4ef",
    },
    7: {  # one random-stream layer: the CTMC and M/M/c outputs (Markov drivers) and the perturbed 2x2 case change
        "event_outputs.npz": "a504086bdeb40c78e8c2925493dd88a69c8f3da780b7562397d51f5f8d483d7b",
        "bitidentical.npz": "bb1f49eb61ac33dc31b1045aa4ddffb64713d352c359ddb10b23b5081e374e8c",
    },
    8: {  # the Markov drivers' estimates are observers: the uniformised CTMC and M/M/c outputs' last bits change
        "event_outputs.npz": "a504086bdeb40c78e8c2925493dd88a69c8f3da780b7562397d51f5f8d483d7b",
        "bitidentical.npz": "b3dec080d2bc4388ef403201f05723dd7f93a3393b2105dd617d11f297207679",
    },
    9: {  # the renewal rule's controls gain six of second order (the controlled estimates change); the golden
        # files hold uncontrolled outputs (cv off) and are unchanged
        "event_outputs.npz": "a504086bdeb40c78e8c2925493dd88a69c8f3da780b7562397d51f5f8d483d7b",
        "bitidentical.npz": "b3dec080d2bc4388ef403201f05723dd7f93a3393b2105dd617d11f297207679",
    },
    10: {  # the renewal rule's first-order controls in the clocks' age filtration (the controlled estimates change);
        # the golden files hold uncontrolled outputs and are unchanged
        "event_outputs.npz": "a504086bdeb40c78e8c2925493dd88a69c8f3da780b7562397d51f5f8d483d7b",
        "bitidentical.npz": "b3dec080d2bc4388ef403201f05723dd7f93a3393b2105dd617d11f297207679",
    },
}


def contents_digest(path: Path) -> str:
    h = hashlib.sha256()
    with np.load(path) as z:
        for k in sorted(z.files):
            a = np.ascontiguousarray(z[k])
            h.update(k.encode())
            h.update(str(a.dtype).encode())
            h.update(str(a.shape).encode())
            h.update(a.tobytes())
    return h.hexdigest()


def test_golden_outputs_belong_to_the_current_stream_version():
    assert STREAM_VERSION in GOLDEN, "add the golden files' digests for the new STREAM_VERSION"
    for name, digest in GOLDEN[STREAM_VERSION].items():
        assert contents_digest(DATA / name) == digest, (
            f"{name} changed: the simulators' numbers changed, so bump jaxq.sim.STREAM_VERSION (chunks of earlier "
            "runs must not be reused) and record the new digests here")

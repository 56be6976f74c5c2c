"""A grid point's chunks written before and after a record column was added (a run resumed across versions) give
the point's records in the columns all of them hold, in chunk order."""

import numpy as np

from jaxq.studies.storage import concatenate_chunks


def test_chunks_with_and_without_a_column_keep_the_common_ones_in_order():
    old = {"rep": np.arange(3), "J": np.array([1.0, 2.0, 3.0])}
    new = {"rep": np.arange(3, 5), "J": np.array([4.0, 5.0]), "diag_X_hat_p": np.array([0.1, 0.2])}
    got = concatenate_chunks([old, new])
    assert list(got) == ["rep", "J"] and got["J"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert got["rep"].tolist() == [0, 1, 2, 3, 4]
    both = concatenate_chunks([new, {k: v + 10 for k, v in new.items()}])
    assert list(both) == ["rep", "J", "diag_X_hat_p"] and both["diag_X_hat_p"].tolist() == [0.1, 0.2, 10.1, 10.2]

import numpy as np
import pytest

from fedlib.data.holdout import unheld_rows


def test_unheld_rows_are_distinct_free_rows_in_the_generators_draw_order() -> None:
    held = np.array([[0, 2, 4], [6, 8, 9]])
    rows = unheld_rows(12, held, 4, np.random.default_rng(7))
    free = np.array([1, 3, 5, 7, 10, 11])
    # The draw is the generator's choice among the free rows, in its order.
    np.testing.assert_array_equal(
        rows, np.random.default_rng(7).choice(free, size=4, replace=False))
    assert len(set(rows.tolist())) == 4 and set(rows.tolist()) <= set(free.tolist())


def test_every_free_row_can_be_asked_for_and_one_more_is_refused_by_name() -> None:
    held = np.arange(0, 10, 2)
    rows = unheld_rows(10, held, 5, np.random.default_rng(0))
    assert sorted(rows.tolist()) == [1, 3, 5, 7, 9]
    with pytest.raises(ValueError, match=r"n_val=6 is more than the 5 of 10 rows that no "
                                         r"client holds; pass at most 5"):
        unheld_rows(10, held, 6, np.random.default_rng(0), name="n_val")

import dataclasses

import numpy as np
import pytest

from keras_attn.models.config import check_integer_fields


@dataclasses.dataclass
class _Sizes:
    width: int = 4
    offset: int = 0
    limit: int | None = None
    name: str = "x"
    rate: float = 0.5

    def __post_init__(self):
        check_integer_fields(self, floors={"offset": 0})


def test_checks_int_fields_with_their_floors_and_skips_the_others():
    sizes = _Sizes(width=np.int64(3), limit=np.int32(7), rate=2)
    assert (sizes.width, sizes.limit) == (3, 7)
    assert type(sizes.width) is int and type(sizes.limit) is int
    assert _Sizes(offset=0).offset == 0 and _Sizes().limit is None
    for fields, message in [
        ({"width": 0}, r"`width` must be a positive integer; received 0"),
        ({"width": True}, r"`width` must be a positive integer; received True"),
        ({"offset": -1}, r"`offset` must be an integer ≥ 0; received -1"),
        ({"limit": 0}, r"`limit` must be a positive integer or None; received 0"),
        ({"limit": "3"}, r"`limit` must be a positive integer or None; received '3'"),
    ]:
        with pytest.raises(ValueError, match=message):
            _Sizes(**fields)

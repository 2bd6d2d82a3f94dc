"""Read and write the IDX format of MNIST-like datasets.

An IDX file is a 4-byte magic number ``00 00 <type code> <number of dims>``, then
one big-endian unsigned 32-bit size per dimension, then the values in C order,
big-endian. Files may be gzip-compressed; the reader detects that from the content.
"""

from __future__ import annotations

import gzip
import math
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from fedlib.data.errors import IDXFormatError
from fedlib.paths import atomic_path

_GZIP_MAGIC = b"\x1f\x8b"

IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype("u1"),
    0x09: np.dtype("i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
"""IDX type code -> on-disk (big-endian) numpy dtype."""


def _read_bytes(path: Path) -> bytes:
    with open(path, "rb") as raw:
        compressed = raw.read(2) == _GZIP_MAGIC
    if not compressed:
        return path.read_bytes()
    try:
        with gzip.open(path, "rb") as stream:
            return stream.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise IDXFormatError(f"{path} is a damaged gzip file ({exc}); fetch it again") from exc


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """Load an IDX file (raw or gzip-compressed) into a native-endian numpy array.

    Raises
    ------
    IDXFormatError
        If the magic number, type code or size of the file is wrong.
    """
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < 4:
        raise IDXFormatError(f"{path} is not an IDX file: only {len(data)} bytes long")
    if data[0] != 0 or data[1] != 0:
        raise IDXFormatError(
            f"{path} is not an IDX file: magic number {data[:4].hex()} does not start with 0000"
        )
    code, ndim = data[2], data[3]
    if code not in IDX_DTYPES:
        known = ", ".join(f"0x{c:02X}" for c in IDX_DTYPES)
        raise IDXFormatError(f"{path}: unknown IDX type code 0x{code:02X} (known: {known})")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise IDXFormatError(f"{path} is truncated inside its header of {ndim} dimensions")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    dtype = IDX_DTYPES[code]
    count = math.prod(shape)
    expected = header + count * dtype.itemsize
    if len(data) != expected:
        raise IDXFormatError(
            f"{path}: the header announces shape {shape} of {dtype.name} "
            f"({expected} bytes in all) but the file holds {len(data)} bytes"
        )
    values = np.frombuffer(data, dtype=dtype, count=count, offset=header)
    return values.astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def _type_code(dtype: np.dtype) -> int:
    for code, candidate in IDX_DTYPES.items():
        if candidate.kind == dtype.kind and candidate.itemsize == dtype.itemsize:
            return code
    supported = ", ".join(sorted({d.newbyteorder("=").name for d in IDX_DTYPES.values()}))
    raise ValueError(f"IDX cannot store dtype {dtype}; convert to one of: {supported}")


def write_idx(path: str | os.PathLike[str], array: np.ndarray, compresslevel: int = 9) -> Path:
    """Write ``array`` as an IDX file, gzip-compressed when ``path`` ends in ``.gz``.

    The file is written to a temporary name and renamed, so readers never see it half
    written. Returns the path.
    """
    path = Path(path)
    array = np.asarray(array)
    code = _type_code(array.dtype)
    if array.ndim > 255 or any(n >= 2**32 for n in array.shape):
        raise ValueError(f"IDX cannot store shape {array.shape}")
    big_endian = array.astype(IDX_DTYPES[code], copy=False)
    payload = (
        bytes([0, 0, code, array.ndim])
        + struct.pack(f">{array.ndim}I", *array.shape)
        + np.ascontiguousarray(big_endian).tobytes()
    )
    if path.name.endswith(".gz"):
        payload = gzip.compress(payload, compresslevel=compresslevel, mtime=0)
    with atomic_path(path) as tmp:
        tmp.write_bytes(payload)
    return path

"""bf16_reference.py - the BF16 matrix product of docs/FORMAT.md (section 1, "Tensor types"), in
numpy, for the references of models whose fwm.matmul_type is "bf16" (fwm_reference.py,
lstm_reference.py).

Written from the format's text, not from the C kernels: the vector is taken as float32 and rounded
to BF16 (nearest even, a subnormal result becomes a zero of its sign); the stored BF16 weights read
as themselves (a subnormal one as a zero); both are padded with zeros to a multiple of 32 columns;
sixteen float32 lane sums start at +0 and, chunk of 32 columns by chunk, lane l adds the exact
product of column 32c + 2l + 1, then that of column 32c + 2l, each add rounded (numpy float32); the
lanes reduce as a_l + a_{l+8}, then + 4, + 2, + 1 lanes apart; then the bias is added in float32.
Vectorised over the rows and the lanes, so a product costs P / 16 numpy adds.
"""

import numpy as np

CHUNK = 32          # columns per chunk: 16 lanes of two
MAX_COLS = 8192     # wider BF16 matrices are widened to F32 at load (docs/FORMAT.md)


def round_bf16(x):
    """float32(x) rounded to BF16 (round to nearest even; subnormal -> zero of its sign; NaN stays
    NaN), returned as a float32 array of BF16 values."""
    bits = np.atleast_1d(np.asarray(x, dtype=np.float32)).view(np.uint32).astype(np.uint64)
    sign = bits & 0x80000000
    exp = bits & 0x7F800000
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    lsb = (bits >> 16) & 1
    rounded = ((bits + 0x7FFF + lsb) >> 16) << 16           # nearest, ties to even
    out = np.where(exp == 0, sign, rounded)                 # subnormals and zeros: a signed zero
    out = np.where(nan, (bits | 0x00400000) & 0xFFFF0000, out)  # a NaN stays (a quiet) NaN
    return (out & 0xFFFFFFFF).astype(np.uint32).view(np.float32)


def flush_subnormals(w):
    """BF16 weight values as float32, a subnormal one read as a zero of its sign."""
    w = np.asarray(w, dtype=np.float32)
    bits = w.view(np.uint32)
    return np.where((bits & 0x7F800000) == 0, bits & 0x80000000, bits).astype(np.uint32).view(np.float32)


class Matrix:
    """A stored BF16 matrix [rows, cols] ready for products: float32 values, padded to P columns
    and cut into [rows, P / 32, 16 lanes, 2] (element pair (2l, 2l + 1) of each chunk)."""

    def __init__(self, w):
        w = flush_subnormals(w)
        if w.ndim != 2:
            raise ValueError("a BF16 product needs a matrix")
        self.rows, self.cols = w.shape
        self.P = -(-self.cols // CHUNK) * CHUNK
        padded = np.zeros((self.rows, self.P), np.float32)
        padded[:, :self.cols] = w
        self.w = padded.reshape(self.rows, self.P // CHUNK, 16, 2)

    def product(self, x, bias=None):
        """W x (+ bias) as a float32 vector of `rows`, with the documented arithmetic."""
        x = np.asarray(x)
        if x.shape != (self.cols,):
            raise ValueError(f"vector of {x.shape}, matrix of {self.cols} columns")
        xb = np.zeros(self.P, np.float32)
        xb[:self.cols] = round_bf16(x)
        xb = xb.reshape(self.P // CHUNK, 16, 2)
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            prod = self.w * xb                                # exact for normal values
            acc = np.zeros((self.rows, 16), np.float32)       # the sixteen lanes, from +0
            for c in range(self.P // CHUNK):
                acc = acc + prod[:, c, :, 1]                  # the odd element first
                acc = acc + prod[:, c, :, 0]                  # then the even one
            s = acc[:, 0:8] + acc[:, 8:16]
            t = s[:, 0:4] + s[:, 4:8]
            u = t[:, 0:2] + t[:, 2:4]
            y = u[:, 0] + u[:, 1]
            if bias is not None:
                y = y + np.asarray(bias, dtype=np.float32)
        return y.astype(np.float32)

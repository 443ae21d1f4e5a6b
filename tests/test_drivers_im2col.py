"""im2col driver (drivers/src/ts_im2col.c): ts_im2col_s8 and the chunked ts_im2col_rows_s8
against a direct index-computing reference (tests/c/drv_q_im2col.c) on many conv shapes, output
sizes against the formula, bad arguments; every buffer against a guard page."""
from __future__ import annotations

import subprocess

import pytest

from cross import QEMU, run_qemu
from drv_q_support import build_harness

# (batch, in_h, in_w, in_c, k_h, k_w, stride_h, stride_w, dil_h, dil_w,
#  pad_top, pad_left, pad_bottom, pad_right, pad_value)
SHAPES = [
    (1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0),        # 1x1 conv on a single pixel
    (1, 6, 5, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0),        # 1x1
    (2, 4, 4, 13, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, -3),      # 1x1 stride 2, batch 2
    (1, 5, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0),        # 3x3 "same"
    (1, 8, 7, 7, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 0),        # 3x3 "valid"
    (1, 9, 9, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, -128),    # 3x3 stride 2
    (2, 7, 6, 33, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0, 5),       # stride 2, asymmetric pad, batch 2
    (1, 10, 11, 3, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 0),      # 5x5 same
    (1, 10, 11, 7, 5, 5, 2, 1, 1, 1, 1, 2, 2, 1, 127),    # 5x5 mixed strides, asymmetric pad
    (1, 9, 9, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 0),        # dilation 2 same
    (1, 12, 10, 13, 3, 3, 1, 1, 2, 2, 0, 0, 0, 0, 0),     # dilation 2 valid
    (2, 8, 9, 7, 3, 3, 2, 2, 2, 3, 1, 3, 0, 2, -1),       # dilation 2x3, stride 2, asym pad
    (1, 6, 6, 33, 3, 3, 1, 1, 1, 1, 0, 0, 2, 2, 9),       # padding only bottom/right
    (1, 6, 6, 13, 3, 3, 1, 1, 1, 1, 2, 2, 0, 0, 9),       # padding only top/left
    (1, 3, 3, 7, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 0),        # 1x1 output
    (1, 3, 4, 3, 5, 5, 3, 3, 1, 1, 1, 1, 1, 0, 0),        # kernel larger than input
    (1, 2, 2, 3, 3, 3, 1, 1, 1, 1, 3, 3, 3, 3, 4),        # padding wider than the kernel
    (1, 7, 1, 13, 3, 1, 1, 1, 1, 1, 1, 0, 1, 0, 0),       # 1-wide image, 3x1 kernel
    (1, 1, 9, 33, 1, 3, 1, 2, 1, 1, 0, 1, 0, 1, -7),      # 1-high image, 1x3 kernel
    (2, 11, 13, 3, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 0),      # 7x7 stride 2 (ResNet stem-like)
    (1, 16, 16, 1, 3, 3, 4, 4, 3, 3, 0, 0, 2, 2, 2),      # strides and dilation > 2
    (1, 5, 5, 64, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0),       # 2x2 stride 2
    (1, 6, 6, 3, 1, 1, 1, 1, 5, 7, 1, 1, 1, 1, 0),        # 1x1 kernel, dilation irrelevant
]


def out_size(n, pad_a, pad_b, k, stride, dilation):
    """(in + pad_a + pad_b - dilation*(k-1) - 1) / stride + 1, in Python integers."""
    return (n + pad_a + pad_b - dilation * (k - 1) - 1) // stride + 1


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    return build_harness(tmp_path_factory.mktemp("im2col"), "drv_q_im2col.c", ["im2col.c"],
                         link=["im2col.c"])


def run_shapes(binary, shapes, cpu="max"):
    text = f"{len(shapes)}\n" + "\n".join(" ".join(map(str, s)) for s in shapes) + "\n"
    proc = subprocess.run([QEMU, "-cpu", cpu, str(binary), "shapes"], input=text,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == len(shapes)
    return lines


def test_shape_list_covers_the_brief():
    assert len(SHAPES) >= 20
    channels = {s[3] for s in SHAPES}
    assert {3, 7, 13, 33} <= channels
    kernels = {(s[4], s[5]) for s in SHAPES}
    assert {(1, 1), (3, 3), (5, 5)} <= kernels
    assert any(s[0] == 2 for s in SHAPES) and any(s[8] == 2 for s in SHAPES)
    assert any(s[10] != s[12] or s[11] != s[13] for s in SHAPES)
    assert any(out_size(s[1], s[10], s[12], s[4], s[6], s[8]) == 1
               and out_size(s[2], s[11], s[13], s[5], s[7], s[9]) == 1 for s in SHAPES)


def test_im2col_matches_reference(harness):
    for shape, line in zip(SHAPES, run_shapes(harness, SHAPES)):
        b, ih, iw, ic, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, _ = shape
        tag, out_h, out_w, mismatches, chunk_mismatches = line.split()
        assert tag == "shape", (shape, line)
        assert (int(out_h), int(out_w)) == (out_size(ih, pt, pb, kh, sh, dh),
                                            out_size(iw, pl, pr, kw, sw, dw)), shape
        assert int(mismatches) == 0, f"ts_im2col_s8 {shape}: {mismatches} wrong bytes"
        assert int(chunk_mismatches) == 0, f"ts_im2col_rows_s8 {shape}: {chunk_mismatches}"


def test_im2col_on_armv80_clang(tmp_path):
    binary = build_harness(tmp_path, "drv_q_im2col.c", ["im2col.c"], link=["im2col.c"],
                           compiler="clang")
    lines = run_shapes(binary, SHAPES[::3], cpu="cortex-a57")
    assert all(line.split()[3:] == ["0", "0"] for line in lines), lines


BAD_ARGUMENT_CHECKS = {
    "batch_zero", "in_h_zero", "in_w_zero", "in_c_zero", "out_c_zero", "k_h_zero", "k_w_zero",
    "stride_h_zero", "stride_w_zero", "dilation_h_zero", "dilation_w_zero",
    "kernel_taller_than_padded", "kernel_wider_than_padded", "dilated_kernel_too_big",
    "pad_overflow", "dilation_overflow", "size_overflow", "null_conv", "null_input",
    "null_cols", "out_size"}


def test_bad_arguments(harness):
    proc = run_qemu(harness, "bad", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ok = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("ok ")]
    assert sorted(ok) == sorted(BAD_ARGUMENT_CHECKS), proc.stdout
